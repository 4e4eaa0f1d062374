"""selfforge: improve a git repository toward written goals, safely."""

__version__ = "0.1.0"
