"""The judge: everything that decides whether a candidate lands."""
