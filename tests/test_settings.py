"""``MedallionSettings``: every variable's default, an override for each, the derived defaults
in one place, and a bad value that names the variable and the fix."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from medallion_assets.lake.catalog import LakeCatalog
from medallion_assets.settings import (
    MedallionSettings,
    SettingsError,
    auto_driver_memory,
    documented,
    machine_memory,
    variables,
)

PROJECT = Path("/srv/shop")


def read(env: dict[str, str], project: Path | None = PROJECT) -> MedallionSettings:
    return MedallionSettings.from_env(env, project)


def test_an_empty_environment_gives_every_default():
    settings = read({})
    assert settings.state_home == PROJECT / ".medallion"
    assert settings.lake_root == PROJECT / ".medallion/lake"
    assert settings.s3_root == PROJECT / ".medallion/s3"
    assert not settings.uses_s3_api and settings.aws_region == "us-east-1"
    assert settings.effective_warehouse_url == f"duckdb:///{PROJECT}/.medallion/warehouse.duckdb"
    assert settings.effective_control_url == f"sqlite:///{PROJECT}/.medallion/control.db"
    assert (settings.spark_master, settings.spark_remote) == ("auto", None)
    # auto: Spark here with two task threads per core, a local driver
    assert settings.master() == f"local[{2 * (os.cpu_count() or 1)}]" and settings.local_driver
    assert (settings.spark_shuffle_partitions, settings.spark_driver_memory) == (None, None)
    # auto: from the machine (a quarter of its memory; 8 shuffle partitions per core)
    assert settings.driver_memory == auto_driver_memory(machine_memory())
    assert settings.shuffle_partitions == max(16, 8 * (os.cpu_count() or 1))
    assert settings.spark_log is None and settings.keep_versions == 3
    assert settings.lake_create is False  # a missing lake bucket stops the run, named
    assert settings.spark_log_file == PROJECT / ".medallion/logs/spark.log"  # never the console
    assert settings.lock_wait_seconds == 900 and settings.crash_at is None
    assert settings.run_slots(cores=2) == 1 and settings.run_slots(cores=16) == 8
    assert settings.project is None and settings.secrets == frozenset()
    assert not any(settings.is_set(name) for name in variables())


def test_medallion_home_moves_everything_derived_from_it():
    settings = read({"MEDALLION_HOME": "/var/state"})
    assert settings.lake_root == Path("/var/state/lake")
    assert settings.s3_root == Path("/var/state/s3")
    assert settings.effective_warehouse_url == "duckdb:////var/state/warehouse.duckdb"
    assert settings.effective_control_url == "sqlite:////var/state/control.db"


def test_each_variable_overrides_its_default():
    env = {
        "MEDALLION_HOME": "/h",
        "MEDALLION_LAKE": "/lake",
        "MEDALLION_LAKE_CATALOG": "postgresql://ice:ice-pass@db/lake",
        "MEDALLION_LAKE_CREATE": "1",
        "MEDALLION_KEEP_VERSIONS": "5",
        "MEDALLION_ENV_WAREHOUSE": "none",
        "MEDALLION_S3": " AWS ",
        "MEDALLION_S3_ENDPOINT": "http://127.0.0.1:9000",
        "MEDALLION_S3_LOCAL_ROOT": "/s3",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "MEDALLION_SPARK_MASTER": "spark://m:7077",
        "MEDALLION_SPARK_REMOTE": "sc://spark:15002/;token=spark-token",
        "MEDALLION_SPARK_JARS": "/jars",
        "MEDALLION_SPARK_SHUFFLE_PARTITIONS": "16",
        "MEDALLION_MAX_WORKERS": "3",
        "MEDALLION_SPARK_DRIVER_MEMORY": "512m",
        "MEDALLION_SPARK_JIT": "full",
        "MEDALLION_SPARK_CLASS_ARCHIVE": "/jars/driver.jsa",
        "MEDALLION_LOCAL_SPARK_RUNS": "2",
        "MEDALLION_SPARK_LOG": "/logs/spark.log",
        "MEDALLION_WAREHOUSE_URL": "postgresql://loader:wh-pass@db/analytics",
        "MEDALLION_CONTROL_URL": "postgresql://ctl:ctl-pass@db/control",
        "PGPASSWORD": "libpq-pass",
        "MEDALLION_PROJECT": "/elsewhere",
        "MEDALLION_LOCK_WAIT_SECONDS": "2.5",
        "MEDALLION_OPENLINEAGE_TIMEOUT": "0.5",
        "MEDALLION_CRASH_AT": "lake.published@gold.revenue[2026-01-02]",
    }
    assert set(env) == set(variables())  # every variable is exercised here
    settings = read(env)
    assert (settings.lake_root, settings.keep_versions, settings.s3) == (Path("/lake"), 5, "aws")
    assert settings.uses_s3_api and settings.s3_endpoint == "http://127.0.0.1:9000"
    assert settings.lake_create is True and settings.env_warehouse == "none"
    assert (settings.s3_root, settings.aws_region) == (Path("/s3"), "eu-west-1")
    assert settings.spark_master == "spark://m:7077"
    assert settings.spark_remote == "sc://spark:15002/;token=spark-token"
    assert settings.jars_folder == Path("/jars")
    assert (settings.spark_shuffle_partitions, settings.spark_driver_memory) == (16, "512m")
    assert (settings.shuffle_partitions, settings.driver_memory) == (16, "512m")
    assert settings.spark_log == Path("/logs/spark.log") and settings.spark_jit == "full"
    assert settings.spark_class_archive == "/jars/driver.jsa"
    assert settings.effective_warehouse_url == env["MEDALLION_WAREHOUSE_URL"]
    assert settings.effective_control_url == env["MEDALLION_CONTROL_URL"]
    assert settings.project == Path("/elsewhere") and settings.project_root == PROJECT
    assert settings.lock_wait_seconds == 2.5 and settings.openlineage_timeout_seconds == 0.5
    assert settings.max_workers == settings.workers == 3
    assert settings.local_spark_runs == 2 and settings.run_slots() is None  # Spark Connect
    assert settings.crash_at == "lake.published@gold.revenue[2026-01-02]"
    assert all(settings.is_set(name) for name in variables())
    assert {"wh-pass", "ctl-pass", "libpq-pass", "spark-token", "ice-pass"} <= settings.secrets
    assert LakeCatalog.of(settings).uri == "jdbc:postgresql://db/lake"
    assert LakeCatalog.of(settings).warehouse == "file:/lake"


def test_the_project_is_the_given_one_else_medallion_project_else_the_current_folder():
    assert read({"MEDALLION_PROJECT": "/p"}, None).project_root == Path("/p")
    assert read({}, None).project_root == Path(".")
    moved = read({"MEDALLION_PROJECT": "/p"}, None).for_project(Path("/q"))
    assert moved.project_root == Path("/q") and moved.state_home == Path("/q/.medallion")


def test_an_empty_variable_counts_as_unset_and_unknown_ones_are_ignored():
    settings = read({"MEDALLION_LAKE": "", "MEDALLION_KEEP_VERSIONS": "", "MEDALLION_X": "1"})
    assert settings.lake_root == PROJECT / ".medallion/lake" and settings.keep_versions == 3


def test_steps_run_as_many_at_a_time_as_the_machine_has_cores_unless_told():
    assert read({}).workers == (os.cpu_count() or 1)


def test_the_settings_are_frozen():
    with pytest.raises(ValueError, match="frozen"):
        read({}).keep_versions = 9  # type: ignore[misc]


@pytest.mark.parametrize(
    ("variable", "value", "fix"),
    [
        ("MEDALLION_LOCK_WAIT_SECONDS", "abc", "set it to a number of seconds, e.g. 900"),
        ("MEDALLION_LOCK_WAIT_SECONDS", "-1", "set it to a number of seconds, e.g. 900"),
        ("MEDALLION_OPENLINEAGE_TIMEOUT", "0", "set it to a number of seconds, e.g. 5"),
        ("MEDALLION_KEEP_VERSIONS", "0", "set it to a whole number of at least 1, e.g. 3"),
        ("MEDALLION_KEEP_VERSIONS", "2.5", "set it to a whole number of at least 1, e.g. 3"),
        ("MEDALLION_SPARK_SHUFFLE_PARTITIONS", "many", "set it to a whole number of at least 1"),
        ("MEDALLION_MAX_WORKERS", "0", "set it to a whole number of at least 1"),
        ("MEDALLION_SPARK_DRIVER_MEMORY", "2 GB", "set it to a JVM memory size, e.g. 8g"),
        ("MEDALLION_SPARK_JIT", "fast", "set it to auto, quick or full"),
        ("MEDALLION_S3", "minio", "set it to aws"),
        ("MEDALLION_S3_ENDPOINT", "127.0.0.1:9000", "set it to a URL with its scheme"),
        ("MEDALLION_SPARK_REMOTE", "spark:15002", "set it to a Spark Connect URL"),
        ("MEDALLION_CRASH_AT", "lake.publish@gold.x", "POINT one of ingest.inspected"),
    ],
)
def test_a_bad_value_names_the_variable_its_value_and_the_fix(variable, value, fix):
    with pytest.raises(SettingsError) as raised:
        read({variable: value})
    message = str(raised.value)
    assert message.startswith(f"{variable}={value!r} is not valid: ")
    assert fix in message and message.endswith(", or unset it")


def test_every_bad_variable_is_named_at_once_and_no_password_is_shown():
    env = {
        "MEDALLION_KEEP_VERSIONS": "x",
        "MEDALLION_SPARK_REMOTE": "spark:15002/;token=very-secret-token",
    }
    with pytest.raises(SettingsError) as raised:
        read(env)
    lines = str(raised.value).splitlines()
    assert [line.split("=", 1)[0] for line in lines] == list(env)
    assert "very-secret-token" not in str(raised.value) and "token=***" in lines[1]


def test_every_variable_is_documented_with_a_default_and_a_meaning():
    docs = documented()
    assert [d.variable for d in docs] == list(variables())
    assert all(d.default and d.meaning for d in docs)
    assert all(
        d.variable.startswith("MEDALLION_")
        for d in docs
        if d.variable not in ("AWS_DEFAULT_REGION", "PGPASSWORD")
    )


PACKAGE = Path(__file__).resolve().parents[1] / "medallion_assets"
# A read of one variable from the environment or an environment mapping: x.get("MEDALLION_X"),
# x["MEDALLION_X"] (not an assignment to it), os.getenv("MEDALLION_X").
ENV_READ = re.compile(
    r"""(?:\.get|getenv)\(\s*["']MEDALLION_|\[\s*["']MEDALLION_\w+["']\s*\](?!\s*=[^=])"""
)


def sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in PACKAGE.rglob("*.py")}


def test_every_medallion_variable_the_package_names_is_a_setting():
    named = {m for text in sources().values() for m in re.findall(r"MEDALLION_[A-Z0-9_]+", text)}
    assert named - set(variables()) == set()


def test_only_the_settings_object_reads_medallion_variables_from_the_environment():
    readers = {
        path
        for path, text in sources().items()
        for line in text.splitlines()
        if ENV_READ.search(line)
    }
    # faults.py reads MEDALLION_CRASH_AT at the crash point, parsed by the settings object
    # (see its docstring for why).
    assert readers <= {"settings.py", "faults.py"}


def test_a_misspelt_crash_point_is_an_error_at_the_point_not_a_run_that_never_crashes(
    monkeypatch,
):
    from medallion_assets.faults import crash_point

    monkeypatch.setenv("MEDALLION_CRASH_AT", "lake.publish@gold.revenue")
    with pytest.raises(
        SettingsError, match=re.escape("MEDALLION_CRASH_AT='lake.publish@gold.revenue'")
    ):
        crash_point("lake.published", "gold.revenue")
    # A valid point for another table (or another point) lets the process go on.
    monkeypatch.setenv("MEDALLION_CRASH_AT", "lake.published@gold.other")
    crash_point("lake.published", "gold.revenue")
    crash_point("lake.staged", "gold.other")


def test_the_lake_is_a_folder_or_s3_and_anything_else_is_refused_naming_the_variable():
    assert (
        LakeCatalog.of(read({})).uri
        == f"jdbc:sqlite:{(PROJECT / '.medallion/lake/catalog.db').resolve()}"
    )
    on_s3 = read({"MEDALLION_LAKE": "s3://shop-lake/prod"})
    assert LakeCatalog.of(on_s3).warehouse == "s3a://shop-lake/prod"
    assert on_s3.lake_root is None  # no local folder: Spark writes the tables through s3a
    with pytest.raises(SettingsError, match=r"MEDALLION_LAKE='gs://b/lake' is not valid"):
        read({"MEDALLION_LAKE": "gs://b/lake"})


def test_spark_memory_and_shuffle_partitions_say_auto_or_a_value():
    auto = read(
        {"MEDALLION_SPARK_DRIVER_MEMORY": "auto", "MEDALLION_SPARK_SHUFFLE_PARTITIONS": "AUTO"}
    )
    assert auto.spark_driver_memory is None and auto.spark_shuffle_partitions is None
    assert re.fullmatch(r"\d+g", auto.driver_memory)
    with pytest.raises(SettingsError, match=r"MEDALLION_SPARK_DRIVER_MEMORY='lots'.*or auto"):
        read({"MEDALLION_SPARK_DRIVER_MEMORY": "lots"})
