"""Remove repeated items, keeping the first of each in order (the demo's measured goal)."""


def dedupe(items: list[int]) -> list[int]:
    out: list[int] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out
