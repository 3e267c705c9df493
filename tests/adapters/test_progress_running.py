"""A step that runs long is never silence: a line when it has run 10 s, then every 30 s, and
none once it has ended."""

from __future__ import annotations

import time
from types import SimpleNamespace

from medallion_assets.adapters.progress import ProgressHandler


def event(kind: str, step_key: str) -> SimpleNamespace:
    return SimpleNamespace(
        event_type_value=kind,
        step_key=step_key,
        event_specific_data=SimpleNamespace(
            error=SimpleNamespace(message="executor lost", cause=None)
        ),
    )


def test_a_long_step_says_it_is_running_at_10_s_then_every_30_s():
    lines: list[str] = []
    handler = ProgressHandler(2, lines.append)
    handler.partition_of = lambda run: "2026-01-02" if run == "day" else None
    with handler._lines:
        handler._event("day", event("STEP_START", "bronze__user_events"))
        handler._event("run", event("STEP_START", "silver__orders"))
    start = time.monotonic()
    handler.still_running(start + 5)
    assert lines == []
    handler.still_running(start + 11)
    assert lines == [
        "        bronze.user_events[2026-01-02]: running for 11 s",
        "        silver.orders: running for 11 s",
    ]
    with handler._lines:
        handler._event("run", event("STEP_UP_FOR_RETRY", "silver__orders"))
    lines.clear()
    handler.still_running(start + 30)
    assert lines == []  # 11 s was said; the next is due at 41 s, and silver is no longer running
    handler.still_running(start + 42)
    assert lines == ["        bronze.user_events[2026-01-02]: running for 42 s"]
