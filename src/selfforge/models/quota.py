"""When long-window quotas reset, said in a way a user can act on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def pacific_midnight_after(now: datetime | None = None) -> datetime:
    """Gemini's per-day quotas reset at midnight Pacific time."""
    try:
        pacific: timezone | ZoneInfo = ZoneInfo("America/Los_Angeles")
    except ZoneInfoNotFoundError:  # no tz database (some Windows installs): assume PST
        pacific = timezone(timedelta(hours=-8))
    local = (now or datetime.now(UTC)).astimezone(pacific)
    tomorrow = (local + timedelta(days=1)).date()
    return datetime(tomorrow.year, tomorrow.month, tomorrow.day, tzinfo=pacific).astimezone(UTC)


def first_of_next_month_utc(now: datetime | None = None) -> datetime:
    now = now or datetime.now(UTC)
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


def describe_reset(when: datetime, now: datetime | None = None) -> str:
    """E.g. "2026-11-23 08:00 UTC (in 4h 55m)"."""
    now = now or datetime.now(UTC)
    minutes = max(0, int((when - now).total_seconds() // 60))
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    span = f"{days}d {hours}h" if days else f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"
    return f"{when.astimezone(UTC):%Y-%m-%d %H:%M} UTC (in {span})"


def reset_after_seconds(seconds: float, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return describe_reset(now + timedelta(seconds=seconds), now)
