"""``medallion settings``: the values in force (passwords masked), the settings reference's
table of variables (docs/reference/settings.md) equal to its markdown output, and a bad value
ending any command with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.settings import variables

REPO = Path(__file__).resolve().parents[2]
TABLE_HEADER = "| variable | default | meaning |"


@pytest.fixture
def clean_env(monkeypatch):
    """No setting of the machine running the tests leaks into these."""
    for name in variables():
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def medallion(*args: str):
    return CliRunner().invoke(cli, list(args))


def readme_table() -> str:
    text = (REPO / "docs" / "reference" / "settings.md").read_text()
    return text[text.index(TABLE_HEADER) :]


def test_the_settings_reference_is_the_settings_markdown_output(clean_env):
    done = medallion("settings", "--format", "markdown")
    assert done.exit_code == 0, done.output
    assert readme_table() == done.output
    assert [line.split("`")[1] for line in done.output.splitlines()[2:]] == list(variables())


def test_settings_shows_the_values_in_force_with_passwords_masked(clean_env, tmp_path):
    clean_env.setenv("MEDALLION_HOME", str(tmp_path / "state"))
    clean_env.setenv("MEDALLION_WAREHOUSE_URL", "postgresql://loader:wh-p%40ss@db:5432/x")
    clean_env.setenv("MEDALLION_SPARK_REMOTE", "sc://spark:15002/;token=spark-token-1")
    clean_env.setenv("PGPASSWORD", "libpq-secret")
    clean_env.setenv("MEDALLION_LOCK_WAIT_SECONDS", "60")
    done = medallion("settings", "--format", "json", "--project", str(tmp_path / "shop"))
    assert done.exit_code == 0, done.output
    rows = json.loads(done.output)
    assert list(rows) == list(variables())
    assert rows["MEDALLION_HOME"] == {
        "value": str(tmp_path / "state"),
        "set": True,
        "default": "<project>/.medallion",
        "meaning": "local state: lake, local S3, warehouse file, control store",
    }
    assert rows["MEDALLION_LAKE"]["value"] == str(tmp_path / "state/lake")
    assert rows["MEDALLION_LAKE"]["set"] is False
    assert rows["MEDALLION_CONTROL_URL"]["value"] == f"sqlite:///{tmp_path}/state/control.db"
    assert rows["MEDALLION_PROJECT"]["value"] == str(tmp_path / "shop")
    assert rows["MEDALLION_WAREHOUSE_URL"]["value"] == "postgresql://loader:***@db:5432/x"
    assert rows["MEDALLION_SPARK_REMOTE"]["value"] == "sc://spark:15002/;token=***"
    assert rows["PGPASSWORD"]["value"] == "***"
    assert rows["MEDALLION_LOCK_WAIT_SECONDS"]["value"] == "60"
    assert rows["MEDALLION_CRASH_AT"] == {**rows["MEDALLION_CRASH_AT"], "value": None}
    for secret in ("wh-p%40ss", "wh-p@ss", "spark-token-1", "libpq-secret"):
        assert secret not in done.output


def test_settings_text_marks_what_the_environment_did_not_set(clean_env, tmp_path):
    clean_env.setenv("MEDALLION_KEEP_VERSIONS", "7")
    done = medallion("settings", "--project", str(tmp_path))
    assert done.exit_code == 0, done.output
    lines = {line.split()[0]: line for line in done.output.splitlines()}
    assert set(lines) == set(variables())
    assert lines["MEDALLION_KEEP_VERSIONS"].split()[1:] == ["7"]
    assert lines["MEDALLION_HOME"].split()[1:] == [str(tmp_path / ".medallion"), "(default)"]
    assert lines["MEDALLION_S3_ENDPOINT"].split()[1:] == ["unset", "(default)"]


def test_a_bad_setting_ends_any_command_with_its_name_and_the_fix(clean_env):
    clean_env.setenv("MEDALLION_LOCK_WAIT_SECONDS", "abc")
    done = medallion("plan", "--project", str(REPO))
    assert done.exit_code == 2
    assert done.output == (
        "error: MEDALLION_LOCK_WAIT_SECONDS='abc' is not valid: set it to a number of seconds, "
        "e.g. 900, or unset it\n"
    )
