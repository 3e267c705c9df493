"""The fields of ``MedallionSettings`` that say where things are (the state folder, the lake
and its catalog, S3) and how Spark runs, each documented for ``medallion settings`` and the
reference (``setting``); ``settings.MedallionSettings`` adds the rest and the derived values."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.config import JsonDict

_S3_URI = re.compile(r"^s3a?://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?P<prefix>/.*)?$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def setting(
    default: Any, default_text: str, meaning: str, fix: str, secret: bool = False, **rules: Any
) -> Any:
    """A field documented for ``medallion settings`` and the README's table: the default as a
    reader sees it (derived defaults are computed from other settings), its meaning, and what a
    valid value looks like (said when the value given is not one)."""
    extra: JsonDict = {"default_text": default_text, "fix": fix, "secret": "yes" if secret else ""}
    return Field(default, description=meaning, json_schema_extra=extra, **rules)


def lake_location(value: str) -> str:
    """``MEDALLION_LAKE`` as the warehouse location Spark writes to: ``file:/abs/path`` for a
    local folder, ``s3a://bucket/prefix`` for ``s3://`` (or ``s3a://``); anything else with a
    scheme is refused (ValueError), since a Spark cluster's executors must reach the same files.

    >>> lake_location("s3://shop-lake/prod/")
    's3a://shop-lake/prod'
    """
    text = value.strip()
    if _SCHEME.match(text):
        match = _S3_URI.match(text)
        if match is None:
            raise ValueError("not a folder or an S3 location")
        prefix = (match.group("prefix") or "").rstrip("/")
        return f"s3a://{match.group('bucket')}{prefix}"
    return f"file:{Path(text).expanduser().resolve()}"


class StoreSettings(BaseModel):
    """Where the project's state, lake and raw objects are."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    project_root: Path = Field(exclude=True)

    home: Path | None = setting(
        None,
        "`<project>/.medallion`",
        "local state: lake, local S3, warehouse file, control store",
        "a folder path",
        alias="MEDALLION_HOME",
    )
    lake: str | None = setting(
        None,
        "`$MEDALLION_HOME/lake`",
        "the lake's tables: a local folder, or `s3://BUCKET/PREFIX` as the Iceberg warehouse",
        "a folder path or s3://BUCKET/PREFIX",
        alias="MEDALLION_LAKE",
    )
    lake_catalog: str | None = setting(
        None,
        "`sqlite:///<lake folder>/catalog.db` (on S3: `$MEDALLION_HOME/lake_catalog.db`)",
        "the lake's Iceberg catalog: `sqlite:///PATH` (JDBC, no server), `postgresql://…` "
        "(JDBC; its password is masked), an Iceberg REST URL `https://…` (OAuth2 client "
        "credentials as the URL's user and password, masked), or `glue`",
        "sqlite:///PATH, postgresql://USER@HOST:PORT/DB, https://… (REST) or glue",
        alias="MEDALLION_LAKE_CATALOG",
    )
    # Creating a bucket is an account-level act (its region, policies, billing): a run does it
    # only when told to; by default a missing lake bucket stops the run in one line.
    lake_create: bool = setting(
        False,
        "`0`",
        "`1`: a run creates the lake's S3 bucket when it is missing (else it stops, naming it)",
        "1 or 0",
        alias="MEDALLION_LAKE_CREATE",
    )
    keep_versions: int = setting(
        3,
        "`3`",
        "versions kept per table",
        "a whole number of at least 1, e.g. 3",
        alias="MEDALLION_KEEP_VERSIONS",
        ge=1,
    )
    env_warehouse: Literal["schema", "none"] = setting(
        "schema",
        "`schema`",
        "what a dev environment's run (`medallion run --env NAME`) loads into the warehouse: "
        "`schema`: its gold tables into schemas of its own (`<schema>_env_<NAME>`, a bare "
        "table into `env_<NAME>`); `none`: nothing",
        "schema or none",
        alias="MEDALLION_ENV_WAREHOUSE",
    )
    s3: Literal["aws"] | None = setting(
        None,
        "unset",
        "`aws`: read raw data from AWS S3 without setting an endpoint",
        "aws",
        alias="MEDALLION_S3",
    )
    s3_endpoint: str | None = setting(
        None,
        "unset (local folder)",
        "S3 API endpoint; credentials from the AWS chain",
        "a URL with its scheme, e.g. http://127.0.0.1:9000",
        alias="MEDALLION_S3_ENDPOINT",
        pattern=r"^https?://\S+$",
    )
    s3_local_root: Path | None = setting(
        None,
        "`$MEDALLION_HOME/s3`",
        "the folder standing in for S3",
        "a folder path",
        alias="MEDALLION_S3_LOCAL_ROOT",
    )
    aws_region: str = setting(
        "us-east-1",
        "`us-east-1`",
        "region of the S3 client (AWS's own variable)",
        "an AWS region name, e.g. eu-west-1",
        alias="AWS_DEFAULT_REGION",
    )

    @field_validator("s3", mode="before")
    @classmethod
    def _s3_mode(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("lake")
    @classmethod
    def _lake_location(cls, value: str | None) -> str | None:
        if value is not None:
            lake_location(value)  # raises ValueError
        return value


class SparkSettings(StoreSettings):
    """How a run's Spark runs: where, with what, on how many workers."""

    @field_validator("spark_shuffle_partitions", "spark_driver_memory", mode="before")
    @classmethod
    def _auto(cls, value: object) -> object:
        """``auto`` is the default, derived from the machine (``MedallionSettings``)."""
        return None if isinstance(value, str) and value.strip().lower() == "auto" else value

    # local[*] gives a task thread per core: a step that became ready beside a long one (one
    # table's 3 tasks of 25 minutes at 200,000 orders) waited for a core the whole time, as a
    # local master cannot preempt a task (issue 43). Two per core let it start at once.
    spark_master: str = setting(
        "auto",
        "`auto`: `local[N]`, two task threads per core",
        "Spark master URL; `auto` runs Spark here with two task threads per core, so a step "
        "that starts beside a long one gets threads at once and the cores are shared",
        "a Spark master URL, e.g. local[*] or spark://host:7077, or auto",
        alias="MEDALLION_SPARK_MASTER",
    )
    spark_remote: str | None = setting(
        None,
        "unset",
        "Spark Connect URL (`sc://host:15002`); a `token=` in it is masked",
        "a Spark Connect URL, e.g. sc://127.0.0.1:15002",
        alias="MEDALLION_SPARK_REMOTE",
        pattern=r"^sc://\S+$",
    )
    spark_jars: Path | None = setting(
        None,
        "`~/.cache/medallion/spark-jars-<hash of the pom>`",
        "folder of Spark's JVM packages (Iceberg, s3a, JDBC drivers) that `medallion jars` fetches "
        "from Maven Central once per machine",
        "a folder path",
        alias="MEDALLION_SPARK_JARS",
    )
    max_workers: int | None = setting(
        None,
        "the machine's cores",
        "steps of a run at a time, on threads over one Spark (`medallion run --max-workers`)",
        "a whole number of at least 1, e.g. 2",
        alias="MEDALLION_MAX_WORKERS",
        ge=1,
    )
    # Adaptive execution coalesces shuffle partitions to ~64 MB each, so this is a ceiling
    # that must leave room for large data: fixed at 4, one task of a 1.3 GB aggregate spilled
    # for 25 minutes (issue 43). "auto" scales it with the cores.
    spark_shuffle_partitions: int | None = setting(
        None,
        "`auto`: 8 per core, at least 16",
        "`spark.sql.shuffle.partitions` of the run's session: the most partitions a shuffle "
        "starts with; adaptive execution merges them to ~64 MB each, so small data runs in a "
        "few tasks and large data in many (a build reading few files, an increment under 128 MB "
        "or a build in full under 32 MB, is planned once, without adaptive execution, with a "
        "partition per 32 MB)",
        "a whole number of at least 1, e.g. 64, or auto",
        alias="MEDALLION_SPARK_SHUFFLE_PARTITIONS",
        ge=1,
    )
    # A local driver is the executor too: its heap is the run's memory. 2g died of
    # OutOfMemoryError at 1.3 GB of raw data; a share of the machine follows the machine.
    spark_driver_memory: str | None = setting(
        None,
        "`auto`: a quarter of the machine's memory (of its cgroup limit, when lower), "
        "between 1g and 32g",
        "`spark.driver.memory` of a local session (its executors' memory too)",
        "a JVM memory size, e.g. 8g or 512m, or auto",
        alias="MEDALLION_SPARK_DRIVER_MEMORY",
        pattern=r"(?i)^[0-9]+([kmgtp]b?)?$",
    )
    # On a small machine the C2 compiler's threads take the cores Spark's tasks need: a
    # sequential run of the demo spent 40 s of its driver's 104 s of CPU in C2 (README, bench G).
    spark_jit: Literal["auto", "quick", "full"] = setting(
        "auto",
        "`auto`",
        "the local Spark driver's JIT: `quick` (C1 only, `-XX:TieredStopAtLevel=1`, 240 MB of "
        "code cache) or `full` "
        "(the JVM's default); `auto`: quick for a `local` master on at most 4 cores",
        "auto, quick or full",
        alias="MEDALLION_SPARK_JIT",
    )
    # A run is a fresh driver JVM: mapping classes already parsed and verified saves seconds
    # of every start (bench M).
    spark_class_archive: str = setting(
        "auto",
        "`auto`",
        "the local Spark driver's class-data archive (the JVM's AppCDS): `auto` maps the one "
        "`medallion jars` records beside the jars, when there is one; `off` none; a path that "
        "archive",
        "auto, off or the path of an archive",
        alias="MEDALLION_SPARK_CLASS_ARCHIVE",
        min_length=1,
    )
    # Every run of the instance's queue starts a Spark driver of its own; with a local master
    # they all share this machine's cores (bench H: four runs side by side on 2 cores made the
    # critical run 5.7x slower than alone).
    local_spark_runs: int | None = setting(
        None,
        "half the machine's cores, at least 1",
        "runs the project's instance starts at once when Spark is `local` (each run's driver "
        "runs on this machine); not applied to a cluster or Spark Connect",
        "a whole number of at least 1, e.g. 2",
        alias="MEDALLION_LOCAL_SPARK_RUNS",
        ge=1,
    )
    spark_log: Path | None = setting(
        None,
        "`$MEDALLION_HOME/logs/spark.log`",
        "file the Spark driver's console output goes to",
        "a file path",
        alias="MEDALLION_SPARK_LOG",
    )
