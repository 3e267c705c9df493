"""Grouping received OpenLineage events by the run they belong to."""

from __future__ import annotations

from typing import Any


def lineage_runs(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """OpenLineage run id -> its events, in the order they were received."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        runs.setdefault(event["run"]["runId"], []).append(event)
    return runs
