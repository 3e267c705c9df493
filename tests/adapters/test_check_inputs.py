"""A step whose checks alone read another step's table starts beside that step on the threaded
executor, and its checks wait for it (``adapters/check_inputs.py``): plain Dagster assets, no
Spark. Each ``checker`` records when it started, and when its wait for its checks' tables
returned and what it returned (the tables that did not publish)."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from medallion_assets.adapters.check_inputs import wait_for_check_inputs
from medallion_assets.adapters.headless import run_project
from medallion_assets.adapters.threads import ThreadedExecutor
from medallion_assets.adapters.translator import CHECK_DEP
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project, orders
from tests.adapters.test_faults import instance_home
from tests.adapters.test_threads import Spans, run, sleeper
from tests.e2e.test_pipeline import step_spans

CHECK_ON_USD = dg.AssetDep("usd", metadata={CHECK_DEP: "check"})


def slow(name: str, spans: Spans, seconds: float = 1.2, fail: bool = False, retry: bool = False):
    @dg.asset(name=name, deps=["root"])
    def _asset(context) -> None:  # no annotation: Dagster reads it, and these are strings
        started = time.monotonic()
        time.sleep(seconds)
        spans[f"{name}#{context.retry_number}"] = (started, time.monotonic())
        if retry and context.retry_number == 0:
            raise dg.RetryRequested(max_retries=1)
        if fail:
            raise RuntimeError("boom")
        spans[name] = (started, time.monotonic())

    return _asset


def checker(spans: Spans, said: dict, deps: list, name: str = "checked"):
    @dg.asset(name=name, deps=deps)
    def _asset(context) -> None:
        started = time.monotonic()
        step_key = str(context.op_execution_context.op_handle)
        said["unpublished"] = wait_for_check_inputs(context.run.run_id, step_key, lambda: False)
        spans[name] = (started, time.monotonic())

    return _asset


def usd_and_checked(spans: Spans, said: dict, usd: dg.AssetsDefinition, on_usd=CHECK_ON_USD):
    """root, then ``usd`` and ``checked`` beside each other, ``checked`` depending on usd as
    ``on_usd`` says (default: for its checks alone)."""
    return [sleeper("root", spans), usd, checker(spans, said, ["root", on_usd])]


def test_a_step_starts_beside_the_table_its_checks_read_and_its_checks_wait_for_it():
    spans: Spans = {}
    said: dict = {}
    assets = usd_and_checked(spans, said, slow("usd", spans))
    assert run(assets, ThreadedExecutor(2)).success
    assert spans["checked"][0] < spans["usd"][1]  # started while usd was being built
    assert spans["checked"][1] >= spans["usd"][1]  # its checks waited for usd's end
    assert spans["root"][1] <= spans["checked"][0]  # what its SQL reads came first
    assert said["unpublished"] == ()


def test_its_checks_hear_when_that_table_did_not_publish():
    spans: Spans = {}
    said: dict = {}
    assets = usd_and_checked(spans, said, slow("usd", spans, fail=True))
    result = run(assets, ThreadedExecutor(2))
    assert not result.success
    assert said["unpublished"] == ("usd",)


def test_a_retried_table_is_waited_for_until_its_last_attempt():
    spans: Spans = {}
    said: dict = {}
    assets = usd_and_checked(spans, said, slow("usd", spans, seconds=0.6, retry=True))
    assert run(assets, ThreadedExecutor(2)).success
    assert spans["checked"][0] < spans["usd#0"][1]
    assert spans["checked"][1] >= spans["usd#1"][1]
    assert said["unpublished"] == ()


def test_a_table_its_sql_reads_is_still_waited_for_before_it_starts():
    spans: Spans = {}
    said: dict = {}
    assets = usd_and_checked(spans, said, slow("usd", spans), on_usd="usd")
    assert run(assets, ThreadedExecutor(2)).success
    assert spans["checked"][0] >= spans["usd"][1]


def test_with_one_worker_nothing_starts_early():
    spans: Spans = {}
    said: dict = {}
    assets = usd_and_checked(spans, said, slow("usd", spans, seconds=0.4))
    assert run(assets, ThreadedExecutor(1)).success
    assert spans["checked"][0] >= spans["usd"][1]


# --- on Spark, through `medallion run`'s path: a table whose referential-integrity rule reads
# silver.orders_clean, which the same run builds from the same bronze table.
FLAGGED = "SELECT order_id, amount > 100 AS large FROM bronze.orders\n"
FLAGGED_RULES = """
  silver.orders_flagged:
    rules:
      - kind: referential_integrity
        columns: [order_id]
        to_table: silver.orders_clean
        to_columns: [order_id]
"""


@pytest.mark.slow
def test_on_spark_a_table_started_beside_one_that_is_blocked_publishes_nothing(
    spark, tmp_path, monkeypatch
):
    """One run: silver.orders_flagged starts beside silver.orders_clean (its rule reads it),
    which its blocking rule refuses (a country it does not accept): the flagged orders are not
    published either, and the run says why in the table's line."""
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 9, "country": "xx"})
    )
    (root / "sql" / "silver" / "orders_flagged.sql").write_text(FLAGGED)
    datasets = root / "metadata" / "datasets.yaml"
    datasets.write_text(datasets.read_text() + FLAGGED_RULES)
    monkeypatch.setenv("MEDALLION_MAX_WORKERS", "2")
    with dg.DagsterInstance.from_config(str(instance_home(tmp_path))) as instance:
        summary = run_project(root, log=lambda _line: None, instance=instance)
        (run_id,) = summary.run_ids
        spans = step_spans(instance, run_id)
    assert not summary.success
    assert spans["silver__orders_flagged"][0] < spans["silver__orders_clean"][1]
    status = {r.label: r for r in summary.results}
    assert status["silver.orders_clean"].status == "blocked"
    left = status["silver.orders_flagged"]
    assert left.status == "not run", left
    assert left.message == (
        "not run: silver.orders_clean, which the checks of silver.orders_flagged read, did not "
        "publish in this run; silver.orders_flagged has no version yet"
    )
    lake = Lake.local(root / ".medallion" / "lake")
    assert lake.current("silver.orders_flagged") is None
    assert status["gold.revenue"].status == "not run"
