"""Check a pipeline's cron schedule before Dagster sees it.

Dagster refuses a whole code location whose schedule it cannot parse, so the catalog checks the
five fields itself (without importing Dagster): minute 0-59, hour 0-23, day of month 1-31,
month 1-12 or jan-dec, day of week 0-7 or sun-sat (0 and 7 are Sunday). Each field is ``*``, a
value, a range ``a-b``, a step ``*/n``, ``a/n`` or ``a-b/n``, or a comma-separated list of
those; ``?`` stands for ``*`` in the two day fields. A range may wrap (``22-2``: 22:00 to 02:00).

It is stricter than Dagster's parser in four places, each a schedule that would load but not do
what it says: a range whose two ends are equal (``5-5``, which Dagster reads as the whole
cycle), a range starting at 0 in the day or month field, a date that never occurs (``31 4``,
April 31st) and croniter's extensions (``L``, ``W``, ``#``, ``H``, ``@daily``), which are not
standard cron.

>>> check_cron("30 2 * * mon-fri")
'30 2 * * mon-fri'
>>> check_cron("61 * * * *")
Traceback (most recent call last):
...
ValueError: schedule '61 * * * *': minute value 61 is out of range 0-59
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_ITEM = re.compile(r"^(?P<base>\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>[0-9]+))?$")
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # Feb 29 happens


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # spelled values, the first meaning ``low``

    def value(self, text: str, schedule: str) -> int:
        if text.isdigit():
            number = int(text)
        elif text in self.names:
            number = self.low + self.names.index(text)
        else:
            spelled = f" or {self.names[0]}-{self.names[-1]}" if self.names else ""
            raise ValueError(
                f"schedule {schedule!r}: {text!r} is not a {self.name} value; "
                f"use {self.low}-{self.high}{spelled}"
            )
        if not self.low <= number <= self.high:
            raise ValueError(
                f"schedule {schedule!r}: {self.name} value {number} is out of range "
                f"{self.low}-{self.high}"
            )
        return number


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day-of-week", 0, 7, _DAYS),
)


def check_cron(schedule: str) -> str:
    """Return ``schedule`` if it is a standard 5-field cron expression; else raise ValueError."""
    fields = schedule.lower().split()
    if len(fields) != 5:
        raise ValueError(
            f"schedule {schedule!r} is not a 5-field cron expression "
            "(minute hour day-of-month month day-of-week), e.g. '0 3 * * *'"
        )
    values = [_expand(text, field, schedule) for text, field in zip(fields, _FIELDS, strict=True)]
    days, months, weekdays = values[2], values[3], values[4]
    # Cron runs on a day that matches the day of month OR the day of week when both are given;
    # Dagster refuses February 30th/31st even then.
    impossible = (
        days is not None
        and months is not None
        and all(day > _DAYS_IN_MONTH[month - 1] for day in days for month in months)
    )
    if impossible and (weekdays is None or (months == {2} and len(days or ()) == 1)):
        raise ValueError(
            f"schedule {schedule!r} never runs: no month it names has day "
            f"{', '.join(map(str, sorted(days or ())))}"
        )
    return schedule


def _expand(text: str, field: _Field, schedule: str) -> set[int] | None:
    """The values a field selects; None for every value (``*`` or ``?``)."""
    if text in ("*", "?"):
        if text == "?" and field.name not in ("day-of-month", "day-of-week"):
            raise ValueError(
                f"schedule {schedule!r}: '?' is allowed only in the day-of-month and "
                "day-of-week fields; write '*'"
            )
        return None
    selected: set[int] = set()
    for item in text.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise ValueError(
                f"schedule {schedule!r}: {item!r} is not a {field.name} item; write a value, "
                "a range a-b, a list a,b or a step */n (croniter extensions such as L, W, # "
                "and H are not standard cron)"
            )
        selected |= _item_values(match["base"], match["step"], field, schedule)
    return selected


def _item_values(base: str, step_text: str | None, field: _Field, schedule: str) -> set[int]:
    step = int(step_text) if step_text is not None else 1
    if step == 0:
        raise ValueError(f"schedule {schedule!r}: a step of 0 in the {field.name} field never ends")
    if base == "*":
        low, high = field.low, field.high
    elif "-" in base:
        start, end = base.split("-")
        low, high = field.value(start, schedule), field.value(end, schedule)
        if low == high:
            raise ValueError(
                f"schedule {schedule!r}: the {field.name} range {base!r} starts and ends at the "
                f"same value; write {start!r} alone"
            )
    else:
        low = field.value(base, schedule)
        high = low if step_text is None else field.high
    if low <= high:
        return set(range(low, high + 1, step))
    # A range that wraps around the end of the cycle, e.g. hours 22-2.
    size = field.high - field.low + 1
    return {v - size if v > field.high else v for v in range(low, high + size + 1, step)}


def fire_times(schedule: str, start: datetime, end: datetime) -> list[datetime]:
    """The moments in ``[start, end)`` a checked ``schedule`` fires (naive or UTC datetimes,
    compared as given). Cron's rule for the two day fields: when both are restricted, a day
    matching either runs.

    >>> [t.strftime("%H:%M") for t in fire_times("0 */8 * * *", datetime(2026, 1, 1),
    ...                                             datetime(2026, 1, 2))]
    ['00:00', '08:00', '16:00']
    """
    fields = schedule.lower().split()
    minutes, hours, days, months, weekdays = (
        _expand(text, field, schedule) for text, field in zip(fields, _FIELDS, strict=True)
    )
    weekdays = None if weekdays is None else {d % 7 for d in weekdays}  # 7 is Sunday too
    found = []
    day = start.replace(hour=0, minute=0, second=0, microsecond=0)
    while day < end:
        on_month = months is None or day.month in months
        by_date = days is None or day.day in days
        by_weekday = weekdays is None or (day.isoweekday() % 7) in weekdays
        both = days is not None and weekdays is not None
        if on_month and ((by_date or by_weekday) if both else (by_date and by_weekday)):
            for hour in sorted(hours) if hours is not None else range(24):
                for minute in sorted(minutes) if minutes is not None else range(60):
                    moment = day.replace(hour=hour, minute=minute)
                    if start <= moment < end:
                        found.append(moment)
        day += timedelta(days=1)
    return found
