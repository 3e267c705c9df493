"""Crash points: where a run may be killed, named, so crash tests can kill it exactly there.

``MEDALLION_CRASH_AT=<point>[@<table>[<partition>]]`` makes the process kill itself with
SIGKILL (as the OOM killer or ``kill -9`` would: no cleanup, no ``finally``) when it reaches
that point for that table. Unset, each point is one dictionary lookup. The points sit on the
production path, between the steps whose half-done state a crash could leave behind:

| point | reached |
|---|---|
| ``ingest.inspected`` | a bronze ingest has checked new raw objects, nothing published yet |
| ``lake.staged`` | the output is staged on its branch and checked, ``main`` not yet moved to it |
| ``lake.published`` | the new version is current, the warehouse not yet loaded |
| ``warehouse.loaded`` | the warehouse load has committed, the step not yet finished |
| ``env.promoting`` | a promotion is about to move this table's ``main`` (those before it moved) |

    MEDALLION_CRASH_AT=lake.published@gold.daily_user_events[2026-01-02] medallion run

Unlike every other setting, this one is read here, at the point, rather than handed down from
the run's settings: the points sit deep in the lake's publish and the bronze ingest, and
threading a test-only value through their signatures would put a test hook into production
interfaces. One parse (``parse``) serves both: the settings object validates the variable when
the CLI and every run's resources start, so a misspelt point is an error there rather than a
crash test that never crashes, and the point refuses it too.
"""

from __future__ import annotations

import os
import signal

from medallion_assets.errors import SettingsError

POINTS = ("ingest.inspected", "lake.staged", "lake.published", "warehouse.loaded", "env.promoting")
CRASH_POINT_FIX = f"POINT[@TABLE[DAY]] with POINT one of {', '.join(POINTS)}"


def parse(value: str) -> tuple[str, str]:
    """``POINT[@TABLE[DAY]]`` as (point, where); ValueError for a point that does not exist.

    >>> parse("lake.published@gold.revenue")
    ('lake.published', 'gold.revenue')
    """
    name, _, where = value.partition("@")
    if name not in POINTS:
        raise ValueError("unknown crash point")
    return name, where


def crash_point(point: str, table: str, partition: str | None = None) -> None:
    """Kill this process with SIGKILL when ``MEDALLION_CRASH_AT`` names this point."""
    wanted = os.environ.get("MEDALLION_CRASH_AT")
    if not wanted:  # the usual case: one dictionary lookup
        return
    try:
        name, where = parse(wanted)
    except ValueError:
        raise SettingsError(
            f"MEDALLION_CRASH_AT={wanted!r} is not valid: set it to {CRASH_POINT_FIX}, or unset it"
        ) from None
    here = table + (f"[{partition}]" if partition else "")
    if name == point and where in ("", table, here):
        os.kill(os.getpid(), signal.SIGKILL)
