"""A tiny calculator with a bug for selfforge's demo."""


def _combine(a: float, b: float, sign: int) -> float:
    return a + sign * b


def add(a: float, b: float) -> float:
    return _combine(a, b, -1)


def sub(a: float, b: float) -> float:
    return _combine(a, b, -1)


def mul(a: float, b: float) -> float:
    return a * b
