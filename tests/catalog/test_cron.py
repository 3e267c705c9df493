"""The catalog's cron check agrees with Dagster's own parser on what users write.

Whatever the catalog accepts, Dagster accepts (else the code location would not load). Where
the catalog is stricter, it is for one of the reasons its module docstring lists, and nothing
else.
"""

from __future__ import annotations

import functools
import random

import pytest
from dagster._utils.schedules import is_valid_cron_string

from medallion_assets.catalog.cron import check_cron

# Why the catalog may refuse what Dagster accepts (see catalog/cron.py).
STRICTER = (
    "starts and ends at the same value",  # 5-5 is the whole cycle to croniter
    "never runs",  # a day no month named has
    "value 0 is out of range",  # croniter takes 0-5 as a day or month range
    "croniter extensions",  # L, W, #, H
    "is not a day-of-month value",  # 'l'
    "is not a day-of-week value",  # 'l' and 'h' forms
    "is not a minute value",  # 'h'
    "is not a hour value",
    "is not a month value",
)

_VALUES = {
    0: ["0", "5", "30", "59", "60", "61", "99", "00", "07"],
    1: ["0", "3", "12", "23", "24", "25", "99"],
    2: ["0", "1", "15", "28", "29", "30", "31", "32", "l"],
    3: ["0", "1", "2", "4", "12", "13", "jan", "feb", "apr", "dec", "JAN", "foo"],
    4: ["0", "1", "5", "6", "7", "8", "sun", "mon", "fri", "sat", "SUN", "l", "5l", "2#3"],
}


def _item(rng: random.Random, field: int) -> str:
    value = lambda: rng.choice(_VALUES[field])  # noqa: E731
    shape = rng.randrange(9)
    if shape == 0:
        return "*"
    if shape == 1:
        return f"*/{rng.choice(['0', '1', '5', '15', '100'])}"
    if shape == 2:
        return f"{value()}-{value()}"
    if shape == 3:
        return f"{value()}-{value()}/{rng.choice(['0', '2', '7'])}"
    if shape == 4:
        return f"{value()}/{rng.choice(['2', '10'])}"
    if shape == 5:
        return rng.choice(["?", "h", "", "-1", "1-2-3", "*-5"])
    return value()


def _field(rng: random.Random, field: int) -> str:
    return ",".join(_item(rng, field) for _ in range(rng.choice([1, 1, 1, 2, 3])))


@functools.cache
def generated(count: int, seed: int = 11) -> tuple[str, ...]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        fields = [_field(rng, i) for i in range(5)]
        # Mostly plain fields elsewhere, so each field's own cases are what decides.
        for i in range(5):
            if rng.random() < 0.6:
                fields[i] = rng.choice(["*", "0", "1"]) if i != 3 else rng.choice(["*", "1"])
        out.append(" ".join(fields))
    return tuple(out)


def _accepts(schedule: str) -> tuple[bool, str]:
    try:
        check_cron(schedule)
    except ValueError as error:
        return False, str(error)
    return True, ""


def test_the_catalog_never_accepts_what_dagster_refuses():
    for schedule in generated(12_000):
        accepted, _ = _accepts(schedule)
        if accepted:
            assert is_valid_cron_string(schedule), schedule


def test_the_catalog_refuses_more_only_for_the_documented_reasons():
    refused_more = 0
    for schedule in generated(12_000):
        accepted, message = _accepts(schedule)
        if not accepted and is_valid_cron_string(schedule):
            refused_more += 1
            assert any(reason in message for reason in STRICTER), (schedule, message)
    assert refused_more > 0  # the generator does reach those cases


def test_the_generated_set_holds_both_valid_and_invalid_schedules():
    verdicts = [is_valid_cron_string(s) for s in generated(2_000)]
    assert 0.2 < sum(verdicts) / len(verdicts) < 0.8


@pytest.mark.parametrize(
    "schedule",
    [
        "0 3 * * *",
        "*/15 * * * *",
        "5,35 8-18 * * mon-fri",
        "0 22-2 * * *",
        "0 0 1 jan,jul *",
        "0 6 ? * SUN",
        "0 0 29 2 *",
        "0 0 * * 0-7",
        "0 12 1-31/2 * 7",
    ],
)
def test_schedules_users_write_are_accepted_by_both(schedule: str):
    assert check_cron(schedule) == schedule
    assert is_valid_cron_string(schedule)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("61 * * * *", "minute value 61 is out of range 0-59"),
        ("0 24 * * *", "hour value 24 is out of range 0-23"),
        ("0 0 32 * *", "day-of-month value 32 is out of range 1-31"),
        ("0 0 1 13 *", "month value 13 is out of range 1-12"),
        ("0 0 * * 8", "day-of-week value 8 is out of range 0-7"),
        ("0 0 * * fryday", "'fryday' is not a day-of-week value"),
        ("*/0 * * * *", "a step of 0"),
        ("0 0 31 2 *", "never runs"),
        ("0 0 30 feb mon", "never runs"),
        ("0 3 * *", "not a 5-field cron expression"),
        ("@daily", "not a 5-field cron expression"),
        ("0 0 L * *", "is not a day-of-month value"),
        ("1,,2 * * * *", "is not a minute item"),
    ],
)
def test_invalid_schedules_say_which_field_is_wrong(schedule: str, message: str):
    with pytest.raises(ValueError, match=message):
        check_cron(schedule)
