"""One settings object: every variable the runtime reads, with its type, default and meaning.

``MedallionSettings.from_env(os.environ, project)`` reads the environment once — when a run's
resources are set up, or when a ``medallion`` command starts — and everything downstream takes
the object, never the environment. The derived defaults (the state folder and what lives under
it) are computed here and nowhere else. A bad value is an error naming the variable and the fix:

>>> settings = MedallionSettings.from_env({"MEDALLION_HOME": "/srv/state"}, Path("/p"))
>>> settings.lake_root, settings.keep_versions
(PosixPath('/srv/state/lake'), 3)
>>> MedallionSettings.from_env({"MEDALLION_KEEP_VERSIONS": "two"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
medallion_assets.errors.SettingsError: MEDALLION_KEEP_VERSIONS='two' is not valid: set it ...
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.config import JsonDict

from medallion_assets.credentials import (
    MASK,
    mask_credentials,
    secret_forms,
    spark_connect_tokens,
    url_secrets,
)
from medallion_assets.errors import SettingsError
from medallion_assets.faults import CRASH_POINT_FIX
from medallion_assets.faults import POINTS as CRASH_POINTS

EMBEDDED_CATALOG = "catalog.db"  # the SQLite catalog inside a local lake's folder
# The Maven pom of the Spark jars (``medallion jars`` fetches them): its content names the
# machine's jar folder.
SPARK_JARS_POM = Path(__file__).parent / "jvm" / "spark-jars.pom.xml"
_S3_URI = re.compile(r"^s3a?://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?P<prefix>/.*)?$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def _setting(
    default: Any, default_text: str, meaning: str, fix: str, secret: bool = False, **rules: Any
) -> Any:
    """A field documented for ``medallion settings`` and the README's table: the default as a
    reader sees it (derived defaults are computed from other settings), its meaning, and what a
    valid value looks like (said when the value given is not one)."""
    extra: JsonDict = {"default_text": default_text, "fix": fix, "secret": "yes" if secret else ""}
    return Field(default, description=meaning, json_schema_extra=extra, **rules)


class MedallionSettings(BaseModel):
    """Every setting in force for one project; build it with ``from_env``."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    project_root: Path = Field(exclude=True)

    home: Path | None = _setting(
        None,
        "`<project>/.medallion`",
        "local state: lake, local S3, warehouse file, control store",
        "a folder path",
        alias="MEDALLION_HOME",
    )
    lake: str | None = _setting(
        None,
        "`$MEDALLION_HOME/lake`",
        "the lake's tables: a local folder, or `s3://BUCKET/PREFIX` as the Iceberg warehouse",
        "a folder path or s3://BUCKET/PREFIX",
        alias="MEDALLION_LAKE",
    )
    lake_catalog: str | None = _setting(
        None,
        "`sqlite:///<lake folder>/catalog.db` (on S3: `$MEDALLION_HOME/lake_catalog.db`)",
        "the lake's Iceberg catalog: `sqlite:///PATH` (JDBC, no server), `postgresql://…` "
        "(JDBC; its password is masked), an Iceberg REST URL `https://…`, or `glue`",
        "sqlite:///PATH, postgresql://USER@HOST:PORT/DB, https://… (REST) or glue",
        alias="MEDALLION_LAKE_CATALOG",
    )
    keep_versions: int = _setting(
        3,
        "`3`",
        "versions kept per table",
        "a whole number of at least 1, e.g. 3",
        alias="MEDALLION_KEEP_VERSIONS",
        ge=1,
    )
    s3: Literal["aws"] | None = _setting(
        None,
        "unset",
        "`aws`: read raw data from AWS S3 without setting an endpoint",
        "aws",
        alias="MEDALLION_S3",
    )
    s3_endpoint: str | None = _setting(
        None,
        "unset (local folder)",
        "S3 API endpoint; credentials from the AWS chain",
        "a URL with its scheme, e.g. http://127.0.0.1:9000",
        alias="MEDALLION_S3_ENDPOINT",
        pattern=r"^https?://\S+$",
    )
    s3_local_root: Path | None = _setting(
        None,
        "`$MEDALLION_HOME/s3`",
        "the folder standing in for S3",
        "a folder path",
        alias="MEDALLION_S3_LOCAL_ROOT",
    )
    aws_region: str = _setting(
        "us-east-1",
        "`us-east-1`",
        "region of the S3 client (AWS's own variable)",
        "an AWS region name, e.g. eu-west-1",
        alias="AWS_DEFAULT_REGION",
    )
    spark_master: str = _setting(
        "local[*]",
        "`local[*]`",
        "Spark master URL",
        "a Spark master URL, e.g. local[*] or spark://host:7077",
        alias="MEDALLION_SPARK_MASTER",
    )
    spark_remote: str | None = _setting(
        None,
        "unset",
        "Spark Connect URL (`sc://host:15002`); a `token=` in it is masked",
        "a Spark Connect URL, e.g. sc://127.0.0.1:15002",
        alias="MEDALLION_SPARK_REMOTE",
        pattern=r"^sc://\S+$",
    )
    spark_jars: Path | None = _setting(
        None,
        "`~/.cache/medallion/spark-jars-<hash of the pom>`",
        "folder of Spark's JVM packages (Iceberg, s3a, JDBC drivers) that `medallion jars` fetches "
        "from Maven Central once per machine",
        "a folder path",
        alias="MEDALLION_SPARK_JARS",
    )
    max_workers: int | None = _setting(
        None,
        "the machine's cores",
        "steps of a run at a time, on threads over one Spark (`medallion run --max-workers`)",
        "a whole number of at least 1, e.g. 2",
        alias="MEDALLION_MAX_WORKERS",
        ge=1,
    )
    # A few shuffle partitions suit the demo's size on a small machine.
    spark_shuffle_partitions: int = _setting(
        4,
        "`4`",
        "`spark.sql.shuffle.partitions` of the run's session",
        "a whole number of at least 1, e.g. 4",
        alias="MEDALLION_SPARK_SHUFFLE_PARTITIONS",
        ge=1,
    )
    spark_driver_memory: str = _setting(
        "2g",
        "`2g`",
        "`spark.driver.memory` of a local session",
        "a JVM memory size, e.g. 2g or 512m",
        alias="MEDALLION_SPARK_DRIVER_MEMORY",
        pattern=r"(?i)^[0-9]+([kmgtp]b?)?$",
    )
    # On a small machine the C2 compiler's threads take the cores Spark's tasks need: a
    # sequential run of the demo spent 40 s of its driver's 104 s of CPU in C2 (README, bench G).
    spark_jit: Literal["auto", "quick", "full"] = _setting(
        "auto",
        "`auto`",
        "the local Spark driver's JIT: `quick` (C1 only, `-XX:TieredStopAtLevel=1`, 240 MB of "
        "code cache) or `full` "
        "(the JVM's default); `auto`: quick for a `local` master on at most 4 cores",
        "auto, quick or full",
        alias="MEDALLION_SPARK_JIT",
    )
    # Every run of the instance's queue starts a Spark driver of its own; with a local master
    # they all share this machine's cores (bench H: four runs side by side on 2 cores made the
    # critical run 5.7x slower than alone).
    local_spark_runs: int | None = _setting(
        None,
        "half the machine's cores, at least 1",
        "runs the project's instance starts at once when Spark is `local` (each run's driver "
        "runs on this machine); not applied to a cluster or Spark Connect",
        "a whole number of at least 1, e.g. 2",
        alias="MEDALLION_LOCAL_SPARK_RUNS",
        ge=1,
    )
    spark_log: Path | None = _setting(
        None,
        "unset (`medallion run`: `$MEDALLION_HOME/logs/spark.log`)",
        "file the Spark driver's console output goes to",
        "a file path",
        alias="MEDALLION_SPARK_LOG",
    )
    warehouse_url: str | None = _setting(
        None,
        "`duckdb:///$MEDALLION_HOME/warehouse.duckdb`",
        "`postgresql://…` or `redshift://…`; its password is masked",
        "a warehouse URL, e.g. duckdb:///PATH or postgresql://user@host:5432/db",
        alias="MEDALLION_WAREHOUSE_URL",
    )
    control_url: str | None = _setting(
        None,
        "`sqlite:///$MEDALLION_HOME/control.db`",
        "control store: `sqlite:///PATH` or `postgresql://…`; its password is masked",
        "sqlite:///PATH or postgresql://user@host:5432/db",
        alias="MEDALLION_CONTROL_URL",
    )
    pg_password: str | None = _setting(
        None,
        "unset",
        "PostgreSQL's own password variable; masked wherever it appears",
        "a password",
        secret=True,
        alias="PGPASSWORD",
    )
    project: Path | None = _setting(
        None,
        "the repo",
        "project folder the code location loads",
        "a folder holding sql/ and metadata/",
        alias="MEDALLION_PROJECT",
    )
    # A table build takes seconds to minutes; past 15 minutes the other builder is more likely
    # stuck than busy.
    lock_wait_seconds: float = _setting(
        900.0,
        "`900`",
        "how long a step waits for another run building its table, then skips it (status `busy`)",
        "a number of seconds, e.g. 900",
        alias="MEDALLION_LOCK_WAIT_SECONDS",
        ge=0,
    )
    openlineage_timeout_seconds: float = _setting(
        5.0,
        "`5`",
        "the longest a step waits to send one OpenLineage event (sent only when OpenLineage is "
        "configured: `OPENLINEAGE_URL`, `OPENLINEAGE_CONFIG`, `openlineage.yml`), then goes on",
        "a number of seconds, e.g. 5",
        alias="MEDALLION_OPENLINEAGE_TIMEOUT",
        gt=0,
    )
    crash_at: str | None = _setting(
        None,
        "unset",
        "crash tests only: `POINT[@TABLE[DAY]]` kills the run process with SIGKILL there "
        "(`medallion_assets/faults.py` lists the points)",
        CRASH_POINT_FIX,
        alias="MEDALLION_CRASH_AT",
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

    @field_validator("crash_at")
    @classmethod
    def _crash_point(cls, value: str | None) -> str | None:
        if value is not None and value.partition("@")[0] not in CRASH_POINTS:
            raise ValueError("unknown crash point")
        return value

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], project_root: Path | None = None
    ) -> MedallionSettings:
        """The settings ``env`` gives for the project at ``project_root`` (else
        ``$MEDALLION_PROJECT``, else the current folder). An empty variable counts as unset;
        variables this object does not know are ignored."""
        given = {name: env[name] for name in variables() if env.get(name)}
        root = project_root or given.get("MEDALLION_PROJECT") or Path(".")
        try:
            return cls.model_validate({"project_root": Path(root), **given})
        except ValidationError as error:
            raise SettingsError(_explain(error, given)) from None

    def for_project(self, project_root: Path) -> MedallionSettings:
        """The same variables for another project (its derived defaults follow it)."""
        return self.model_copy(update={"project_root": Path(project_root)})

    @property
    def state_home(self) -> Path:
        """``$MEDALLION_HOME``, else ``<project>/.medallion``: the one place this default is."""
        return self.home if self.home is not None else self.project_root / ".medallion"

    @property
    def workers(self) -> int:
        """Steps of a run at a time: ``max_workers``, else the machine's cores."""
        return self.max_workers if self.max_workers is not None else os.cpu_count() or 1

    @property
    def local_driver(self) -> bool:
        """Whether a run's Spark driver and executors run on this machine (a ``local`` master,
        no Spark Connect)."""
        return not self.spark_remote and self.spark_master.startswith("local")

    def run_slots(self, cores: int | None = None) -> int | None:
        """Runs the instance's queue may start at once for this machine: ``local_spark_runs``
        (else half of ``cores``, the machine's by default, at least 1) when each run's Spark is
        a ``local`` driver here; None (the profiles decide alone) for a cluster or Spark
        Connect, whose capacity is not this machine's.

        >>> MedallionSettings.from_env({}, Path("/p")).run_slots(cores=2)
        1
        >>> MedallionSettings.from_env({"MEDALLION_SPARK_MASTER": "spark://h:7077"}).run_slots(8)
        """
        if not self.local_driver:
            return None
        if self.local_spark_runs is not None:
            return self.local_spark_runs
        count = cores if cores is not None else (os.cpu_count() or 1)
        return max(1, count // 2)

    @property
    def jars_folder(self) -> Path:
        """``$MEDALLION_SPARK_JARS``, else a folder per machine user named after the pom's
        content, so a change of versions fetches into a new folder."""
        return self.spark_jars if self.spark_jars is not None else jars_folder(Path.home())

    @property
    def lake_root(self) -> Path | None:
        """The lake's local warehouse folder; None for a lake on S3."""
        if self.lake is None:
            return self.state_home / "lake"
        if self._lake_on_s3:
            return None
        return Path(self.lake).expanduser()

    @property
    def _lake_on_s3(self) -> bool:
        return self.lake is not None and self.lake.startswith(("s3://", "s3a://"))

    @property
    def effective_lake_catalog(self) -> str:
        """The lake catalog URL in force."""
        if self.lake_catalog:
            return self.lake_catalog
        # The embedded catalog lives in the lake's folder: the folder is the whole lake.
        folder = self.lake_root
        where = folder / EMBEDDED_CATALOG if folder else self.state_home / "lake_catalog.db"
        return f"sqlite:///{where.resolve()}"

    @property
    def s3_root(self) -> Path:
        """The local folder standing in for S3 (used when no S3 API is configured)."""
        return self.s3_local_root if self.s3_local_root is not None else self.state_home / "s3"

    @property
    def uses_s3_api(self) -> bool:
        return self.s3_endpoint is not None or self.s3 == "aws"

    @property
    def effective_warehouse_url(self) -> str:
        """The warehouse URL in force."""
        if self.warehouse_url:
            return self.warehouse_url
        return f"duckdb:///{self.state_home / 'warehouse.duckdb'}"

    @property
    def warehouse_kind(self) -> str:
        """The kind of the warehouse in force (duckdb, postgres, redshift), as Dagster's asset
        kinds name it; what a target's system says is its intent, this is where loads go.

        >>> MedallionSettings.from_env({}).warehouse_kind
        'duckdb'
        >>> MedallionSettings.from_env({"MEDALLION_WAREHOUSE_URL": "postgresql://h/db"}).warehouse_kind
        'postgres'
        """
        scheme = self.effective_warehouse_url.partition("://")[0].lower()
        return "postgres" if scheme in ("postgresql", "postgres") else scheme

    @property
    def effective_control_url(self) -> str:
        """The control store URL in force."""
        if self.control_url:
            return self.control_url
        return f"sqlite:///{(self.state_home / 'control.db').resolve()}"

    def in_force(self) -> dict[str, str | None]:
        """Each variable's value in force (derived defaults computed, folders absolute), None
        when unset."""
        derived: dict[str, object] = {
            "MEDALLION_HOME": self.state_home.resolve(),
            "MEDALLION_LAKE": self.lake_root.resolve() if self.lake_root else self.lake,
            "MEDALLION_LAKE_CATALOG": self.effective_lake_catalog,
            "MEDALLION_SPARK_JARS": self.jars_folder,
            "MEDALLION_S3_LOCAL_ROOT": self.s3_root.resolve(),
            "MEDALLION_WAREHOUSE_URL": self.effective_warehouse_url,
            "MEDALLION_CONTROL_URL": self.effective_control_url,
            "MEDALLION_PROJECT": self.project_root.resolve(),
        }
        values = {}
        for variable, name in variables().items():
            value = derived.get(variable, getattr(self, name))
            if isinstance(value, float):
                value = f"{value:g}"  # 900, not 900.0
            values[variable] = None if value is None else str(value)
        return values

    def is_set(self, variable: str) -> bool:
        """Whether the environment gave ``variable`` a (non-empty) value."""
        return variables()[variable] in self.model_fields_set

    @property
    def secrets(self) -> frozenset[str]:
        """The passwords and tokens these settings hold, in every form they may be printed in."""
        found: set[str] = set()
        for url in (self.warehouse_url, self.control_url, self.lake_catalog):
            found |= url_secrets(url or "")
        found |= secret_forms(self.pg_password or "")
        found |= spark_connect_tokens(self.spark_remote or "")
        return frozenset(found)


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


def jars_folder(home: Path, pom: Path = SPARK_JARS_POM) -> Path:
    """``~/.cache/medallion/spark-jars-<first 12 hex of the pom's sha256>``: a change of the
    pom's versions fetches into a new folder."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    return home / ".cache" / "medallion" / f"spark-jars-{digest}"


def variables() -> dict[str, str]:
    """Variable name -> field name, in the order of the documentation."""
    fields = MedallionSettings.model_fields
    return {f.alias: name for name, f in fields.items() if f.alias is not None}


def documented() -> list[SettingDoc]:
    """Each variable with its default and meaning, as ``medallion settings`` and the README
    document them."""
    docs = []
    for variable, name in variables().items():
        field = MedallionSettings.model_fields[name]
        docs.append(SettingDoc(variable, _extra(name, "default_text"), field.description or ""))
    return docs


def is_secret(variable: str) -> bool:
    """Whether ``variable`` holds a secret through and through (it is never shown)."""
    return bool(_extra(variables()[variable], "secret"))


@dataclass(frozen=True)
class SettingDoc:
    variable: str
    default: str
    meaning: str


def _extra(name: str, key: str) -> str:
    extra = MedallionSettings.model_fields[name].json_schema_extra
    value = extra.get(key) if isinstance(extra, dict) else None
    return str(value) if value is not None else ""


def _explain(error: ValidationError, given: Mapping[str, str]) -> str:
    """One line per bad variable: its value (masked when it may hold a password) and what a
    valid one looks like."""
    lines = []
    for problem in error.errors():
        variable = str(problem["loc"][0]) if problem["loc"] else "settings"
        name = variables().get(variable)
        fix = _extra(name, "fix") if name else str(problem["msg"])
        value = given.get(variable, "")
        value = mask_credentials(value, spark_connect_tokens(value))
        if name is not None and _extra(name, "secret"):
            value = MASK
        lines.append(f"{variable}={value!r} is not valid: set it to {fix}, or unset it")
    return "\n".join(lines)
