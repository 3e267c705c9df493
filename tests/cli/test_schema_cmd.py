"""``medallion control schema`` on TheWorldShop: a source's declared and evolved columns with
when, which run and which files added them; reverting evolved columns is audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.control.state import RuntimeState
from medallion_assets.control_plane import ControlPlane
from medallion_assets.runtime.ingest.schema_drift import EvolvedColumn, evolve, read_evolved
from tests.conftest import copy_demo_project

SOURCE = "address_validation_feed"


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> tuple[Path, RuntimeState]:
    root = copy_demo_project(tmp_path / "theworldshop")
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    for name in ("MEDALLION_CONTROL_URL", "MEDALLION_LAKE"):
        monkeypatch.delenv(name, raising=False)
    return root, ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root).state()


def medallion(project: Path, *args: str):
    return CliRunner().invoke(cli, [*args, "--project", str(project)])


def test_schema_lists_declared_and_evolved_columns(project):
    root, state = project
    nothing = medallion(root, "control", "schema", SOURCE)
    assert nothing.exit_code == 0, nothing.output
    assert "  customer_id        bigint  not null" in nothing.output
    assert nothing.output.rstrip().endswith("evolved columns: none")

    evolve(state, SOURCE, {"courier_note": ["dt=2026-01-02/part-0.csv"]}, "0123456789abcdef")
    shown = medallion(root, "control", "schema", SOURCE)
    line = next(x for x in shown.output.splitlines() if "courier_note" in x)
    assert "string  added 20" in line
    assert line.endswith("by run 01234567 from dt=2026-01-02/part-0.csv")
    data = json.loads(medallion(root, "control", "schema", SOURCE, "--format", "json").output)
    assert [c["name"] for c in data["declared"]][:2] == ["customer_id", "address_line1"]
    (evolved,) = data["evolved"]
    assert (evolved["name"], evolved["run_id"], evolved["ignored"]) == (
        "courier_note",
        "0123456789abcdef",
        None,
    )


def test_a_stored_name_ingest_cannot_read_is_shown_as_ignored(project):
    root, state = project
    state.add_evolved(SOURCE, [EvolvedColumn("\x00\x00\x00")])  # stored before names were checked
    shown = medallion(root, "control", "schema", SOURCE)
    assert "'\\x00\\x00\\x00'" in shown.output and "\x00" not in shown.output
    assert "IGNORED by ingest: it has a NUL, control or invisible character" in shown.output


def test_revert_removes_evolved_columns_and_is_audited(project):
    root, state = project
    evolve(state, SOURCE, ["courier_note", "\u00e9tage"], "run-1")
    no_reason = medallion(root, "control", "schema", SOURCE, "--revert", "courier_note")
    assert no_reason.exit_code == 2 and "--reason" in no_reason.output
    unknown = medallion(root, "control", "schema", SOURCE, "--revert", "nope", "--reason", "x")
    assert unknown.exit_code == 2
    assert "has no evolved column(s) 'nope'" in unknown.output
    assert len(read_evolved(state, SOURCE)) == 2

    done = medallion(
        root,
        "control",
        "schema",
        SOURCE,
        "--revert",
        "courier_note",
        "--reason",
        "vendor test column",
        "--by",
        "oncall",
    )
    assert done.exit_code == 0, done.output
    assert (
        f"evolved column(s) courier_note of source {SOURCE} reverted by oncall: "
        "vendor test column" in done.output
    )
    assert f"bronze.{SOURCE} is rebuilt without them on its next run" in done.output
    assert [c.name for c in read_evolved(state, SOURCE)] == ["\u00e9tage"]
    audit = medallion(root, "audit", "--dataset", f"bronze.{SOURCE}", "--format", "json")
    evolved, entry = json.loads(audit.output)  # evolving was audited too
    assert evolved["details"] == {"added": ["courier_note", "\u00e9tage"]}
    assert (entry["kind"], entry["entity"]) == ("schema", f"source:{SOURCE}")
    assert entry["details"] == {
        "reverted": ["courier_note"],
        "reason": "vendor test column",
        "changed_by": "oncall",
    }
    every = medallion(root, "control", "schema", SOURCE, "--revert", "--reason", "all of them")
    assert every.exit_code == 0 and read_evolved(state, SOURCE) == []
    again = medallion(root, "control", "schema", SOURCE, "--revert", "--reason", "again")
    assert again.exit_code == 2 and "nothing to revert" in again.output


def test_schema_of_an_unknown_source_names_the_known_ones(project):
    root, _state = project
    result = medallion(root, "control", "schema", "adresses")
    assert result.exit_code == 2
    assert "no source named 'adresses'" in result.output and SOURCE in result.output
