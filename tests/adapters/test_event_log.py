"""The project instance's event log: Dagster's SQLite files, its connections kept."""

from __future__ import annotations

import os

import dagster as dg

from medallion_assets.adapters.dagster_internals import SqliteEventLogStorage
from medallion_assets.adapters.event_log import KEPT_FILES, SqliteEventLog
from medallion_assets.adapters.instance import project_instance


@dg.asset(check_specs=[dg.AssetCheckSpec("positive", asset="numbers")])
def numbers(context) -> dg.MaterializeResult:  # type: ignore[no-untyped-def]
    context.log.info("counted")
    return dg.MaterializeResult(
        metadata={"rows": 3},
        check_results=[dg.AssetCheckResult(check_name="positive", passed=True)],
    )


def test_the_project_instance_keeps_its_event_log_connections(tmp_path):
    with project_instance(tmp_path, env={}) as instance:
        assert isinstance(instance.event_log_storage, SqliteEventLog)
        result = dg.materialize([numbers], instance=instance)
        assert result.success
        run_id = result.run_id
    home = tmp_path / ".medallion" / "dagster"
    # The files are Dagster's own: its stock storage on the same folder reads what was written.
    stock = SqliteEventLogStorage(str(home / "history" / "runs"))
    types = [
        r.event_log_entry.dagster_event_type for r in stock.get_records_for_run(run_id).records
    ]
    assert dg.DagsterEventType.ASSET_MATERIALIZATION in types
    assert dg.DagsterEventType.ASSET_CHECK_EVALUATION in types
    assert dg.DagsterEventType.RUN_SUCCESS in types
    latest = stock.get_latest_materialization_events([dg.AssetKey("numbers")])
    assert latest[dg.AssetKey("numbers")].run_id == run_id
    check = stock.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey("numbers"), "positive"), limit=1
    )
    assert check[0].run_id == run_id


def test_at_most_a_few_files_stay_open_and_a_wipe_closes_them(tmp_path):
    storage = SqliteEventLog(str(tmp_path))
    instance_runs = [f"run{i}" for i in range(KEPT_FILES + 4)]
    for run_id in instance_runs:
        storage.store_event(
            dg.EventLogEntry(
                error_info=None,
                level=20,
                user_message="hello",
                run_id=run_id,
                timestamp=1.0,
            )
        )
    assert len(storage._engines) == KEPT_FILES
    assert list(storage._engines)[-1] == instance_runs[-1]  # the newest kept, the oldest closed
    # The oldest run's file, closed, is still read right (opened again).
    assert [
        r.event_log_entry.user_message for r in storage.get_records_for_run("run0").records
    ] == ["hello"]
    storage.wipe()
    assert set(storage._engines) <= {"index"}  # the index is emptied, the runs are gone
    assert not any(name.startswith("run") for name in os.listdir(tmp_path))
    storage.dispose()
