import unittest

from calc import add, mul, sub


class CalcTests(unittest.TestCase):
    def test_add(self) -> None:
        self.assertEqual(add(2, 3), 5)

    def test_sub(self) -> None:
        self.assertEqual(sub(5, 3), 2)

    def test_mul(self) -> None:
        self.assertEqual(mul(4, 3), 12)


if __name__ == "__main__":
    unittest.main()
