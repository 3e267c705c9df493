"""``medallion backfill`` launched through the CLI onto the project instance, for selections
the daemon test does not cover: tables without days alone (Dagster refuses a backfill with
neither partitions nor "all"), and days and no days together. The backfill the instance holds
targets exactly what the preview said: each table for each of its days, or once."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.instance import dagster_home
from medallion_assets.adapters.translator import table_key
from tests.cli.conftest import medallion

DAYS = "2026-01-01...2026-01-02"


@pytest.fixture
def demo(demo_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEDALLION_HOME", str(demo_project / ".medallion"))
    monkeypatch.delenv("MEDALLION_CONTROL_URL", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return demo_project


@pytest.mark.slow  # builds the code location's definitions and an instance per launch
@pytest.mark.parametrize("selection", ["silver.orders_usd", "bronze.user_events,gold.*"])
def test_the_launched_backfill_targets_what_the_preview_said(demo: Path, selection: str):
    preview = medallion(demo, "backfill", "--select", selection, "--partitions", DAYS,
                        "--preview", "--format", "json")  # fmt: skip
    assert preview.exit_code == 0, preview.output
    said = {(row["table"], p) for row in json.loads(preview.output)["tables"]
            for p in row["partitions"] or [None]}  # fmt: skip
    launched = medallion(demo, "backfill", "--select", selection, "--partitions", DAYS,
                         "--format", "json")  # fmt: skip
    assert launched.exit_code == 0, launched.output
    backfill_id = json.loads(launched.output)["backfill_id"]
    with dg.DagsterInstance.from_config(str(dagster_home(demo))) as instance:
        backfill = instance.get_backfill(backfill_id)
        assert backfill is not None
        target = backfill.asset_backfill_data.target_subset  # type: ignore[union-attr]
        targeted = {
            (".".join(key.asset_key.path), key.partition_key)
            for key in target.iterate_asset_partitions()
        }
    assert targeted == {(".".join(table_key(t).path), p) for t, p in said}
    if selection == "silver.orders_usd":
        assert all(p is None for _, p in said) and len(said) > 1
    else:
        assert {p for _, p in said} == {None, "2026-01-01", "2026-01-02"}


def test_the_title_keeps_to_dagsters_rules_whatever_the_selection():
    from dagster._core.definitions.utils import is_valid_title_and_reason

    from medallion_assets.cli.backfill_cmd import backfill_title

    for selection in ("gold.*", 'tag:"x" 100%', ",".join(f"silver.table_{n}" for n in range(30))):
        title = backfill_title(selection, "2026-01-01...2026-01-31")
        assert is_valid_title_and_reason(title) == (True, None), title
        assert title.startswith("medallion backfill ") and title.endswith("2026-01-31")
    assert backfill_title("gold.*", "2026-01-01") == "medallion backfill gold.\u2217 2026-01-01"
