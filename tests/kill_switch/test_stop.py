"""What stops a run the kill switch catches in flight, without Dagster or Spark: the rule
(newly disabled tables and pipelines, each run once) and the ports that end runs and audit."""

from __future__ import annotations

from typing import Any

from medallion_assets.kill_switch.stop import InFlight, Seen, newly_disabled, stop_runs, touched


class Ended:
    """A ``RunEnder`` that records what it ended; one run's launcher cannot be reached."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, str]] = []

    def end(self, run_id: str, message: str) -> str:
        self.ended.append((run_id, message))
        return message + (" (unreachable)" if run_id == "r3" else "")


def test_the_cursor_round_trips_and_only_new_entities_count():
    seen = Seen(frozenset({"silver.a"}), frozenset({"daily"}))
    assert Seen.parse(seen.cursor()) == seen
    assert Seen.parse(None) == Seen()
    now = Seen(frozenset({"silver.a", "gold.b"}), frozenset({"daily", "hourly"}))
    assert newly_disabled(seen, now) == Seen(frozenset({"gold.b"}), frozenset({"hourly"}))


def test_a_run_is_touched_by_its_tables_and_by_its_own_projects_pipeline():
    new = Seen(frozenset({"gold.b"}), frozenset({"hourly"}))
    assert touched(InFlight("r", frozenset({"gold.b", "silver.a"}), "hourly"), new) == [
        "gold.b",
        "pipeline:hourly",
    ]
    other_project = InFlight("r", frozenset(), "hourly", owned=False)
    assert touched(other_project, new) == []


def test_stop_runs_ends_each_touched_run_once_and_audits_what_it_said():
    ender, audited = Ended(), []

    def audit(kind: str, entity: str, message: str, run_id: str, details: Any) -> None:
        audited.append((kind, entity, message, run_id, dict(details)))

    runs = [
        InFlight("r1", frozenset({"gold.b"}), None),
        InFlight("r2", frozenset({"silver.a"}), None),
        InFlight("r3", frozenset({"gold.b"}), "daily"),
    ]
    stopped = stop_runs(runs, Seen(frozenset({"gold.b"})), ender, audit)
    assert stopped == ["r1", "r3"]
    assert [run for run, _ in ender.ended] == ["r1", "r3"]
    assert ender.ended[0][1] == "kill switch: run touches disabled gold.b; terminating it"
    assert audited[1][:2] == ("terminate", "run") and audited[1][2].endswith("(unreachable)")
    assert audited[1][3:] == ("r3", {"touched": ["gold.b"]})
