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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError, field_validator

from medallion_assets.credentials import (
    MASK,
    mask_credentials,
    secret_forms,
    spark_connect_tokens,
    url_secrets,
)
from medallion_assets.errors import SettingsError
from medallion_assets.faults import CRASH_POINT_FIX
from medallion_assets.faults import parse as parse_crash_point
from medallion_assets.settings_fields import SparkSettings, setting

EMBEDDED_CATALOG = "catalog.db"  # the SQLite catalog inside a local lake's folder
# The Maven pom of the Spark jars (``medallion jars`` fetches them): its content names the
# machine's jar folder.
SPARK_JARS_POM = Path(__file__).parent / "jvm" / "spark-jars.pom.xml"


class MedallionSettings(SparkSettings):
    """Every setting in force for one project; build it with ``from_env``. Its fields in the
    order of the documentation: where things are (``StoreSettings``), Spark
    (``SparkSettings``), then the warehouse, the control store and the run's own."""

    warehouse_url: str | None = setting(
        None,
        "`duckdb:///$MEDALLION_HOME/warehouse.duckdb`",
        "`postgresql://…` or `redshift://…`; its password is masked",
        "a warehouse URL, e.g. duckdb:///PATH or postgresql://user@host:5432/db",
        alias="MEDALLION_WAREHOUSE_URL",
    )
    control_url: str | None = setting(
        None,
        "`sqlite:///$MEDALLION_HOME/control.db`",
        "control store: `sqlite:///PATH` or `postgresql://…`; its password is masked",
        "sqlite:///PATH or postgresql://user@host:5432/db",
        alias="MEDALLION_CONTROL_URL",
    )
    pg_password: str | None = setting(
        None,
        "unset",
        "PostgreSQL's own password variable; masked wherever it appears",
        "a password",
        secret=True,
        alias="PGPASSWORD",
    )
    project: Path | None = setting(
        None,
        "the repo",
        "project folder the code location loads",
        "a folder holding sql/ and metadata/",
        alias="MEDALLION_PROJECT",
    )
    # A table build takes seconds to minutes; past 15 minutes the other builder is more likely
    # stuck than busy.
    lock_wait_seconds: float = setting(
        900.0,
        "`900`",
        "how long a step waits for another run building its table, then skips it (status `busy`)",
        "a number of seconds, e.g. 900",
        alias="MEDALLION_LOCK_WAIT_SECONDS",
        ge=0,
    )
    openlineage_timeout_seconds: float = setting(
        5.0,
        "`5`",
        "the longest a step waits to send one OpenLineage event (sent only when OpenLineage is "
        "configured: `OPENLINEAGE_URL`, `OPENLINEAGE_CONFIG`, `openlineage.yml`), then goes on",
        "a number of seconds, e.g. 5",
        alias="MEDALLION_OPENLINEAGE_TIMEOUT",
        gt=0,
    )
    crash_at: str | None = setting(
        None,
        "unset",
        "crash tests only: `POINT[@TABLE[DAY]]` kills the run process with SIGKILL there "
        "(`medallion_assets/faults.py` lists the points)",
        CRASH_POINT_FIX,
        alias="MEDALLION_CRASH_AT",
    )

    @field_validator("crash_at")
    @classmethod
    def _crash_point(cls, value: str | None) -> str | None:
        if value is not None:
            parse_crash_point(value)  # raises ValueError
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
    def spark_log_file(self) -> Path:
        """Where the Spark driver's console output goes: ``$MEDALLION_SPARK_LOG``, else
        ``<state>/logs/spark.log``, beside Python's own log (never the console)."""
        return self.spark_log or self.state_home / "logs" / "spark.log"

    @property
    def workers(self) -> int:
        """Steps of a run at a time: ``max_workers``, else the machine's cores."""
        return self.max_workers if self.max_workers is not None else os.cpu_count() or 1

    def master(self, cores: int | None = None) -> str:
        """The Spark master URL: ``spark_master``, where ``auto`` is ``local[N]`` with two task
        threads per core (``cores``, the machine's by default).

        >>> MedallionSettings.from_env({}).master(cores=2)
        'local[4]'
        >>> MedallionSettings.from_env({"MEDALLION_SPARK_MASTER": "local[*]"}).master()
        'local[*]'
        """
        if self.spark_master.strip().lower() != "auto":
            return self.spark_master
        return f"local[{2 * (cores if cores is not None else (os.cpu_count() or 1))}]"

    @property
    def local_driver(self) -> bool:
        """Whether a run's Spark driver and executors run on this machine (a ``local`` master,
        no Spark Connect)."""
        return not self.spark_remote and self.master().startswith("local")

    @property
    def driver_memory(self) -> str:
        """``spark.driver.memory``: ``MEDALLION_SPARK_DRIVER_MEMORY``, else a quarter of the
        machine's memory (``machine_memory``), between 1g and 32g.

        >>> MedallionSettings.from_env({"MEDALLION_SPARK_DRIVER_MEMORY": "3g"}).driver_memory
        '3g'
        """
        if self.spark_driver_memory is not None:
            return self.spark_driver_memory
        return auto_driver_memory(machine_memory())

    @property
    def shuffle_partitions(self) -> int:
        """``spark.sql.shuffle.partitions``: ``MEDALLION_SPARK_SHUFFLE_PARTITIONS``, else 8 per
        core of the machine, at least 16 (adaptive execution merges them by size)."""
        if self.spark_shuffle_partitions is not None:
            return self.spark_shuffle_partitions
        return max(16, 8 * (os.cpu_count() or 1))

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
            "MEDALLION_SPARK_MASTER": self.master(),
            "MEDALLION_SPARK_DRIVER_MEMORY": self.driver_memory,
            "MEDALLION_SPARK_SHUFFLE_PARTITIONS": self.shuffle_partitions,
            "MEDALLION_S3_LOCAL_ROOT": self.s3_root.resolve(),
            "MEDALLION_WAREHOUSE_URL": self.effective_warehouse_url,
            "MEDALLION_CONTROL_URL": self.effective_control_url,
            "MEDALLION_PROJECT": self.project_root.resolve(),
        }
        values = {}
        for variable, name in variables().items():
            value = derived.get(variable, getattr(self, name))
            if isinstance(value, bool):
                value = "1" if value else "0"  # as the variable is set
            elif isinstance(value, float):
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


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit if lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def auto_driver_memory(total_bytes: int) -> str:
    """A quarter of ``total_bytes`` in whole gigabytes, between 1g and 32g (a heap over 32g
    loses the JVM's compressed pointers).

    >>> auto_driver_memory(24 * 2**30), auto_driver_memory(2 * 2**30), auto_driver_memory(2**40)
    ('6g', '1g', '32g')
    """
    return f"{min(32, max(1, total_bytes // 4 // 2**30))}g"


def jars_folder(home: Path, pom: Path = SPARK_JARS_POM) -> Path:
    """``~/.cache/medallion/spark-jars-<first 12 hex of the pom's sha256>``: a change of the
    pom's versions fetches into a new folder."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    return home / ".cache" / "medallion" / f"spark-jars-{digest}"


def project_environment(home: Path | None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (the process's environment by default) with a project's own state folder
    ``home`` over ``$MEDALLION_HOME``: what one project of a multi-project code location
    reads its settings from.

    >>> project_environment(Path("/state/eu"), {"MEDALLION_HOME": "/state", "X": "1"})
    {'MEDALLION_HOME': '/state/eu', 'X': '1'}
    >>> project_environment(None, {"MEDALLION_HOME": "/state"})
    {'MEDALLION_HOME': '/state'}
    """
    base = dict(os.environ if env is None else env)
    return {**base, "MEDALLION_HOME": str(home)} if home is not None else base


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
