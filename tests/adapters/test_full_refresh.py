"""A full refresh on demand: the ``medallion/full_refresh`` run tag (as the Dagster UI's
launchpad or ``medallion run --full-refresh`` sets it) names the tables a run builds in full,
and a tag or an option that names nothing is one line, before anything runs."""

from __future__ import annotations

import dagster as dg
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.assets import FULL_REFRESH_TAG, full_refresh
from medallion_assets.adapters.run_summary import RunSummary, TableResult
from medallion_assets.cli import cli
from medallion_assets.cli.run_report import incremental, sections


def test_the_tag_names_every_table_or_a_selection(demo_catalog):
    every = {FULL_REFRESH_TAG: "*"}
    some = {FULL_REFRESH_TAG: "silver.orders_usd,gold.late_*"}
    assert full_refresh(demo_catalog, every, "gold.customer_ltv")
    assert full_refresh(demo_catalog, {FULL_REFRESH_TAG: "1"}, "bronze.orders")
    assert full_refresh(demo_catalog, some, "silver.orders_usd")
    assert full_refresh(demo_catalog, some, "gold.late_shipments")
    assert not full_refresh(demo_catalog, some, "silver.order_items")
    assert full_refresh(demo_catalog, {FULL_REFRESH_TAG: "layer:silver"}, "silver.order_items")
    assert not full_refresh(demo_catalog, {}, "silver.orders_usd")
    assert not full_refresh(demo_catalog, {FULL_REFRESH_TAG: " "}, "silver.orders_usd")


def test_a_tag_that_names_nothing_fails_the_step_once_without_retries(demo_catalog):
    with pytest.raises(dg.Failure) as failed:
        full_refresh(demo_catalog, {FULL_REFRESH_TAG: "silver.orders_uds"}, "silver.orders_usd")
    said = failed.value.description or ""
    assert said.startswith(
        "run tag medallion/full_refresh='silver.orders_uds': 'silver.orders_uds'"
    )
    assert "did you mean silver.orders_usd" in said and "--select" not in said
    assert said.endswith("(or * for every table)")
    assert failed.value.allow_retries is False


def test_run_full_refresh_of_nothing_is_one_line_before_spark(demo_project):
    result = CliRunner().invoke(
        cli, ["run", "--project", str(demo_project), "--full-refresh", "gold.nope"]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: --full-refresh 'gold.nope' matches no table"), lines
    assert "Traceback" not in result.output


def test_the_summary_says_how_each_incremental_table_was_built():
    summary = RunSummary(
        results=[
            TableResult("silver.orders_usd", None, "built", rows=6, built="merged 6 rows"),
            TableResult("gold.x", None, "built", rows=9, built="in full: its first build"),
            TableResult("gold.full_kind", None, "built", rows=3),
            TableResult("silver.skipped", None, "unchanged"),
        ]
    )
    assert incremental(summary).splitlines() == [
        "INCREMENTAL: how the append and merge tables were built",
        "  gold.x: in full: its first build",
        "  silver.orders_usd: merged 6 rows",
    ]
    assert incremental(RunSummary(results=[TableResult("gold.y", None, "built")])) == ""


def test_the_incremental_section_is_among_the_run_and_build_sections(tmp_path):
    summary = RunSummary(results=[TableResult("gold.x", None, "built", built="in full: why")])
    assert any(s.startswith("INCREMENTAL:") for s in sections(tmp_path, summary))
