import unittest

from dedupe import dedupe


class DedupeTests(unittest.TestCase):
    def test_keeps_the_first_of_each_in_order(self) -> None:
        self.assertEqual(dedupe([3, 1, 3, 2, 1]), [3, 1, 2])


if __name__ == "__main__":
    unittest.main()
