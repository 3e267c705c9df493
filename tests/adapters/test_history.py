"""The durations ``medallion simulate`` reads from the project instance's past runs: each
table's median step time (a step that kept its version does not count), the launch gap between
a step being ready and starting, and a run's start-up, read from a real Dagster instance's event
log after real runs."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.history import StepHistory, step_history

pytestmark = pytest.mark.slow  # two in-process runs on a fresh instance


@dg.asset(key=["bronze", "a"])
def _a() -> None:
    time.sleep(1.2)


@dg.asset(key=["silver", "b"], deps=[_a])
def _b() -> None:
    time.sleep(0.3)


KEEP = {"c": False}  # the second run of c keeps its version, as an unchanged table does


@dg.asset(key=["gold", "c"])
def _c() -> dg.MaterializeResult:
    if KEEP["c"]:
        return dg.MaterializeResult(metadata={"skipped": True})
    time.sleep(1.0)
    return dg.MaterializeResult()


def test_durations_and_the_launch_gap_come_from_the_instances_runs(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    assert step_history(home) == StepHistory()  # no instance yet: nothing measured
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        for keep in (False, True):
            KEEP["c"] = keep
            assert dg.materialize([_a, _b, _c], instance=instance).success
    reads = {"silver.b": ["bronze.a"], "bronze.a": []}
    found = step_history(home, lambda t: reads.get(t, []))
    assert found.runs == 2
    assert set(found.durations) == {"bronze.a", "silver.b", "gold.c"}
    # c's kept version took no build: only its real build counts (with it, the median ~0.5 s)
    assert found.durations["gold.c"] >= 1.0
    assert 1.2 <= found.durations["bronze.a"] < 4.0
    assert 0.3 <= found.durations["silver.b"] < found.durations["bronze.a"]
    # In-process steps start a fraction of a second after they are ready. b's gap is measured
    # from its input's success; from the run's start it would hold a's 1.2 s, and the median
    # of the four gaps would be over 0.5 s.
    assert 0.0 <= found.launch_s < 0.5
    assert 0.0 < found.run_start_s < 5.0  # an in-process run: no worker process, no Spark
    with_launch = found.with_launch()
    assert with_launch["silver.b"] == pytest.approx(found.durations["silver.b"] + found.launch_s)
