"""``medallion init DIR``: a project that validates and runs green at once, each metadata file
pointing an editor at its schema, written without deleting or (unless --force) overwriting
anything of the user's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest
import yaml

from medallion_assets.catalog import load_catalog
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.runtime.ingest.source_objects import partition_of
from tests.cli.conftest import invoke

TABLES = ("bronze.orders", "silver.orders_clean", "gold.customer_orders", "gold.daily_revenue")
HEADER = re.compile(r"# yaml-language-server: \$schema=(\S+)\n")


pytestmark = pytest.mark.usefixtures("embedded_defaults")
medallion = invoke


def test_init_writes_a_project_that_validates_and_says_what_to_do_next(tmp_path):
    root = tmp_path / "shop"
    done = medallion("init", str(root))

    assert done.exit_code == 0, done.output
    for written in ("metadata/project.yaml", "metadata/sources.yaml", "sql/gold/daily_revenue.sql"):
        assert f"  {written}\n" in done.output and (root / written).is_file()
    assert f"medallion run --project {root}" in done.output
    assert f"medallion dev --project {root}" in done.output
    assert f"edit {root / 'sql/gold/daily_revenue.sql'}" in done.output

    checked = medallion("catalog", "validate", "--project", str(root))
    assert checked.exit_code == 0, checked.output
    assert "ok: 4 datasets, 1 sources" in checked.output
    catalog = load_catalog(root, use_cache=False)
    assert set(catalog.datasets) == set(TABLES)
    assert catalog.datasets["gold.daily_revenue"].target is not None  # loaded into DuckDB


def test_the_rule_set_has_a_blocking_and_a_warning_check(tmp_path):
    medallion("init", str(tmp_path / "shop"))
    rules = yaml.safe_load((tmp_path / "shop/metadata/validation.yaml").read_text())["rule_sets"]

    (severities,) = [{r.get("severity", "error") for r in rules[name]} for name in rules]
    assert severities == {"error", "warn"}


def test_each_metadata_file_names_its_schema_first_and_the_schema_accepts_it(tmp_path):
    medallion("init", str(tmp_path / "shop"))

    files = sorted((tmp_path / "shop" / "metadata").glob("*.yaml"))
    assert len(files) == 7
    for file in files:
        text = file.read_text()
        header = HEADER.match(text)
        assert header, f"{file.name} does not start with the schema line"
        assert not header.group(1).startswith(("/", "file:"))  # relative: the repo may move
        schema = (file.parent / header.group(1)).resolve()
        assert schema.name == f"{file.stem}.schema.json" and schema.is_file()
        assert text.splitlines()[1].startswith("# "), f"{file.name} explains itself"
        # as an editor's YAML 1.2 reads it: a date is text
        document = json.loads(json.dumps(yaml.safe_load(text), default=str))
        jsonschema.validate(document, json.loads(schema.read_text()))


def test_the_sample_lies_where_runs_read_raw_data_in_the_days_the_source_declares(tmp_path):
    root = tmp_path / "shop"
    medallion("init", str(root))
    source = load_catalog(root, use_cache=False).sources["orders"]

    objects = LocalFolderObjectStore(root / ".medallion" / "s3").list(source.bucket, source.prefix)
    assert [partition_of(source, o.key) for o in objects] == ["2026-01-05"]
    records = (root / ".medallion/s3" / source.bucket / objects[0].key).read_text().splitlines()
    assert 8 <= len(records) <= 12
    declared = {c.name for c in source.columns}
    assert all(set(json.loads(r)) == declared for r in records)


def test_a_folder_that_is_not_empty_is_refused_in_one_line_and_nothing_is_written(tmp_path):
    root = tmp_path / "mine"
    root.mkdir()
    (root / "notes.txt").write_text("my notes\n")

    done = medallion("init", str(root))

    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1
    assert str(root) in done.stderr and "--force" in done.stderr
    assert [p.name for p in root.iterdir()] == ["notes.txt"]


def test_force_writes_beside_the_users_files_and_names_those_it_overwrote(tmp_path):
    root = tmp_path / "mine"
    (root / "sql" / "gold").mkdir(parents=True)
    (root / "metadata").mkdir()
    (root / "notes.txt").write_text("my notes\n")
    (root / "sql/gold/my_mart.sql").write_text("SELECT country FROM silver.orders_clean\n")
    (root / "metadata/project.yaml").write_text("name: before\n")

    done = medallion("init", str(root), "--force")

    assert done.exit_code == 0, done.output
    assert (root / "notes.txt").read_text() == "my notes\n"
    assert (root / "sql/gold/my_mart.sql").is_file()
    assert "  metadata/project.yaml  (overwritten)\n" in done.output
    assert "  metadata/sources.yaml\n" in done.output  # new, not overwritten
    assert "1 existing file(s) overwritten" in done.output
    assert yaml.safe_load((root / "metadata/project.yaml").read_text())["name"] == "mine"
    assert medallion("catalog", "validate", "--project", str(root)).exit_code == 0


def test_a_file_given_as_the_folder_is_refused_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("my notes\n")

    done = medallion("init", str(tmp_path / "notes.txt"))

    assert done.exit_code == 2
    assert done.stderr == f"error: {tmp_path / 'notes.txt'} is a file: give a new or empty " + (
        "folder to create the project in\n"
    )


@pytest.mark.parametrize(
    ("folder", "name"),
    [("My Shop-2026", "my_shop_2026"), ("Données", "donnees"), ("__", "project")],
)
def test_the_project_is_named_after_its_folder_made_safe(tmp_path, folder, name):
    done = medallion("init", str(tmp_path / folder))

    assert done.exit_code == 0, done.output
    project = yaml.safe_load((tmp_path / folder / "metadata/project.yaml").read_text())
    assert project["name"] == name


@pytest.mark.slow
def test_the_new_project_runs_green_at_once_on_the_embedded_defaults(tmp_path):
    root = tmp_path / "shop"
    assert medallion("init", str(root)).exit_code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env.pop("DAGSTER_HOME", None)
    mark = f"test-{uuid.uuid4().hex}"  # in the environment of the run and of its JVM
    env.update(
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        RUN_MARK=mark,
    )

    def run() -> str:
        # Output into files, not pipes: the command returns when its process ends, as at a
        # terminal (a pipe would also wait for any child holding it open).
        out, err = tmp_path / "out.txt", tmp_path / "err.txt"
        with out.open("w") as stdout, err.open("w") as stderr:
            done = subprocess.run(
                [str(Path(sys.executable).parent / "medallion"), "run", "--project", str(root)],
                env=env,
                stdout=stdout,
                stderr=stderr,
                timeout=600,
            )
        said = out.read_text() + err.read_text()
        assert done.returncode == 0, said
        assert "Traceback" not in said, said
        return out.read_text()

    first = run()
    # The command ends without the interpreter's teardown, its Spark driver ended first:
    # no process of it goes on (writing the project's Spark log) once it has returned.
    assert _processes_marked(mark) == []
    statuses = dict(re.findall(r"^(\w+\.\w+)\s+-\s+(\w+)", first, re.M))
    assert statuses == dict.fromkeys(TABLES, "built"), first
    assert "4 built;" in first and "BLOCKED" not in first and "FAILED" not in first, first
    assert (root / ".medallion" / "dagster" / "dagster.yaml").is_file()  # the project's own
    # (a second run changing nothing is tests/cli/test_run_output.py's and the e2e demo's)


def _processes_marked(mark: str) -> list[str]:
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"RUN_MARK={mark}".encode() in environ.read_bytes():
                found.append(
                    (environ.parent / "cmdline").read_bytes()[:200].decode(errors="replace")
                )
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found
