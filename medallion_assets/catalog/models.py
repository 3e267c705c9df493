"""Typed, frozen models of the metadata files under ``metadata/``.

One model per file (``PipelinesFile``, ``SourcesFile`` ...). Unknown keys are errors, so a typo
such as ``criticallity:`` is reported instead of silently ignored. Cross-file references
(a dataset naming a rule set, a target naming a table) are checked by ``references.py``.
"""

from __future__ import annotations

import difflib
import functools
import re
from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlglot import exp
from sqlglot.errors import ParseError

from medallion_assets.catalog.rules import Rule
from medallion_assets.lineage.statement import known_dialects

LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")
CRITICALITIES: tuple[str, ...] = ("critical", "high", "normal", "low")
Criticality = Literal["critical", "high", "normal", "low"]
Layer = Literal["bronze", "silver", "gold"]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_TABLE = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")


@functools.lru_cache(maxsize=1024)
def _is_spark_type(value: str) -> bool:
    # Projects repeat a handful of types thousands of times: parse each spelling once.
    try:
        exp.DataType.build(value, dialect="spark")
    except (ParseError, ValueError):
        return False
    return True


def check_identifier(value: str) -> str:
    if not _IDENT.match(value):
        raise ValueError(
            f"{value!r} is not a safe identifier: use lower-case letters, digits and _ "
            "and start with a letter or _"
        )
    return value


def check_table_name(value: str) -> str:
    if not _TABLE.match(value):
        raise ValueError(
            f"{value!r} is not a table name: write '<layer>.<table>' in lower case, "
            "e.g. 'silver.orders_usd'"
        )
    return value


Identifier = Annotated[str, Field(min_length=1, max_length=127)]


class Model(BaseModel):
    """Base for every metadata model: frozen, unknown keys forbidden."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


# --- project.yaml -----------------------------------------------------------------------------


def check_dialect(value: str | None) -> str | None:
    if value is not None and value.lower() not in known_dialects():
        close = difflib.get_close_matches(value.lower(), known_dialects(), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known_dialects())}"
        raise ValueError(f"unknown SQL dialect {value!r}; {hint}")
    return value.lower() if value is not None else None


class ProjectFile(Model):
    name: str
    description: str = ""
    dialect: str = "spark"
    owners: tuple[str, ...] = ()
    default_criticality: Criticality = "normal"
    compute_system: str = "spark"

    _dialect = field_validator("dialect")(classmethod(lambda cls, v: check_dialect(v)))


# --- systems.yaml -----------------------------------------------------------------------------


class Throttle(Model):
    max_concurrent_jobs: int | None = Field(default=None, ge=1)
    rows_per_second: float | None = Field(default=None, gt=0)
    bytes_per_second: float | None = Field(default=None, gt=0)
    requests_per_second: float | None = Field(default=None, gt=0)


class System(Model):
    kind: Literal["s3", "spark", "redshift", "postgres", "duckdb"]
    description: str = ""
    throttle: Throttle = Throttle()


class SystemsFile(Model):
    systems: dict[str, System]

    @field_validator("systems")
    @classmethod
    def _names(cls, value: dict[str, System]) -> dict[str, System]:
        for name in value:
            check_identifier(name)
        return value


# --- sources.yaml -----------------------------------------------------------------------------


class Column(Model):
    name: str
    type: str = "string"
    nullable: bool = True
    description: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_identifier(value)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        if not _is_spark_type(value.lower()):
            raise ValueError(
                f"{value!r} is not a Spark SQL type; use e.g. string, bigint, double, "
                "decimal(18,2), date, timestamp"
            )
        return value.lower()


class Replica(Model):
    name: str
    system: str
    bucket: str
    prefix: str
    cost: float = Field(default=1.0, gt=0)

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        return check_bucket(value)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        return check_prefix(value)


def check_bucket(value: str) -> str:
    if not _BUCKET.match(value) or ".." in value:
        raise ValueError(
            f"{value!r} is not a valid S3 bucket name: 3-63 characters of a-z, 0-9, '.' and '-'"
        )
    return value


def check_prefix(value: str) -> str:
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or any(ch in value for ch in "\\\0\n\r"):
        raise ValueError(
            f"{value!r} is not a safe S3 prefix: no leading '/', no '..' segments, no control "
            "characters or backslashes"
        )
    return value


class Source(Model):
    system: str
    bucket: str
    prefix: str
    format: Literal["jsonl", "csv", "parquet"]
    partition: str | None = None
    description: str = ""
    owners: tuple[str, ...] = ()
    columns: tuple[Column, ...]
    pii_columns: tuple[str, ...] = ()
    csv_header: bool = True
    replicas: tuple[Replica, ...] = ()

    _bucket = field_validator("bucket")(classmethod(lambda cls, v: check_bucket(v)))
    _prefix = field_validator("prefix")(classmethod(lambda cls, v: check_prefix(v)))

    @field_validator("partition")
    @classmethod
    def _partition(cls, value: str | None) -> str | None:
        if value is not None and "{date}" not in value:
            raise ValueError(
                f"partition pattern {value!r} has no '{{date}}' placeholder; "
                "write e.g. 'dt={date}'"
            )
        return value

    @model_validator(mode="after")
    def _columns(self) -> Source:
        names = [c.name for c in self.columns]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"column(s) declared twice: {', '.join(duplicates)}")
        unknown = [c for c in self.pii_columns if c not in names]
        if unknown:
            raise ValueError(
                f"pii_columns names unknown column(s) {', '.join(unknown)}; "
                f"declared columns are: {', '.join(names)}"
            )
        return self


class SourcesFile(Model):
    sources: dict[str, Source]

    @field_validator("sources")
    @classmethod
    def _names(cls, value: dict[str, Source]) -> dict[str, Source]:
        for name in value:
            check_identifier(name)
        return value


# --- targets.yaml -----------------------------------------------------------------------------


class Target(Model):
    table: str
    system: str
    warehouse_table: str
    mode: Literal["replace", "append", "merge"] = "replace"
    keys: tuple[str, ...] = ()
    dist_key: str | None = None
    sort_keys: tuple[str, ...] = ()
    description: str = ""

    _table = field_validator("table")(classmethod(lambda cls, v: check_table_name(v)))

    @field_validator("warehouse_table")
    @classmethod
    def _warehouse_table(cls, value: str) -> str:
        if not _TABLE.match(value) and not _IDENT.match(value):
            raise ValueError(
                f"{value!r} is not a safe warehouse table name: write 'schema.table' in lower case"
            )
        return value

    @model_validator(mode="after")
    def _merge_keys(self) -> Target:
        if self.mode == "merge" and not self.keys:
            raise ValueError("mode 'merge' needs 'keys': the columns that identify a row")
        return self


class TargetsFile(Model):
    targets: tuple[Target, ...]


# --- validation.yaml --------------------------------------------------------------------------


class ValidationFile(Model):
    rule_sets: dict[str, tuple[Rule, ...]]


# --- policies.yaml ----------------------------------------------------------------------------


class RetryPolicy(Model):
    max_retries: int = Field(ge=0, le=100)
    delay_seconds: float = Field(default=0, ge=0)
    backoff: Literal["fixed", "exponential"] = "fixed"
    jitter: Literal["none", "full", "plus_minus"] = "none"
    max_delay_seconds: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _delays(self) -> RetryPolicy:
        if self.max_delay_seconds is not None and self.max_delay_seconds < self.delay_seconds:
            raise ValueError(
                f"max_delay_seconds {self.max_delay_seconds} is below delay_seconds "
                f"{self.delay_seconds}"
            )
        return self


BUILTIN_HEALING_ACTIONS: tuple[str, ...] = (
    "clear_staging",
    "reduce_parallelism",
    "refresh_connection",
    "evolve_schema",
    "reroute_source",
    "wait",
)
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+(:[A-Za-z_][\w]*)?$")


class ErrorSignature(Model):
    """Which failures a healing rule handles. Every field given must match (exception: the
    class name or dotted path of the exception or one of its bases; message: a regex searched in
    the message; sqlstate: the five-character code). Rules are tried in file order; the first
    match wins."""

    exception: str | None = None
    message: str | None = None
    sqlstate: str | None = None

    @field_validator("message")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"message regex {value!r} does not compile: {error}") from None
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> ErrorSignature:
        if not (self.exception or self.message or self.sqlstate):
            raise ValueError("give at least one of exception, message, sqlstate")
        return self


class HealingRule(Model):
    name: str
    match: ErrorSignature
    error_code: str
    actions: tuple[str, ...] = ()
    then: Literal["retry", "fail", "reroute"] = "retry"
    description: str = ""

    @field_validator("actions")
    @classmethod
    def _actions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for action in value:
            if action not in BUILTIN_HEALING_ACTIONS and not _DOTTED.match(action):
                raise ValueError(
                    f"unknown healing action {action!r}: use one of "
                    f"{', '.join(BUILTIN_HEALING_ACTIONS)} "
                    "or a dotted path 'package.module:function'"
                )
        return value


class PoliciesFile(Model):
    retry_policies: dict[str, RetryPolicy]
    healing_rules: tuple[HealingRule, ...] = ()
    default_retry_policy: str | None = None


# --- control.yaml -----------------------------------------------------------------------------


class ControlFlag(Model):
    scope: Literal["pipeline", "layer", "dataset", "source", "target"]
    name: str
    enabled: bool
    reason: str = ""
    changed_by: str = ""
    changed_at: str = ""


class ControlFile(Model):
    flags: tuple[ControlFlag, ...] = ()


# --- profiles.yaml ----------------------------------------------------------------------------


_DEFAULT_PRIORITY: dict[Criticality, int] = {"critical": 3, "high": 2, "normal": 1, "low": 0}


class ProfileSettings(Model):
    max_concurrent_runs: int = Field(ge=1)
    criticality_priority: dict[Criticality, int] = Field(
        default_factory=lambda: dict(_DEFAULT_PRIORITY)
    )
    reserved_capacity_for_critical: int = Field(default=0, ge=0)
    preempt_low_priority: bool = False
    spread_over_systems: bool = True
    include_upstream_of_critical: bool = False
    skip_below: Criticality | None = None


class Profile(Model):
    description: str = ""
    settings: ProfileSettings


class ProfilesFile(Model):
    active: str
    profiles: dict[str, Profile]
    pipeline_profiles: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _active_exists(self) -> ProfilesFile:
        if self.active not in self.profiles:
            raise ValueError(
                f"active profile {self.active!r} is not defined; defined profiles: "
                f"{', '.join(sorted(self.profiles))}"
            )
        return self


# --- pipelines.yaml ---------------------------------------------------------------------------


class PipelineSelection(Model):
    layers: tuple[Layer, ...] = ()
    tags: tuple[str, ...] = ()
    sinks: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _not_empty(self) -> PipelineSelection:
        if not (self.layers or self.tags or self.sinks):
            raise ValueError("select at least one of layers, tags or sinks")
        return self


class Pipeline(Model):
    id: str
    description: str = ""
    enabled: bool = True
    schedule: str | None = None
    owners: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    retry_policy: str | None = None
    select: PipelineSelection

    _id = field_validator("id")(classmethod(lambda cls, v: check_identifier(v)))

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            fields = value.split()
            if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
                raise ValueError(
                    f"schedule {value!r} is not a 5-field cron expression, e.g. '0 3 * * *'"
                )
        return value


class PipelinesFile(Model):
    pipelines: tuple[Pipeline, ...]


# --- datasets.yaml ----------------------------------------------------------------------------


class Partitioning(Model):
    type: Literal["daily"] = "daily"
    column: str
    start: date


class Alternate(Model):
    """Another producer of the same table: a SQL file reading other inputs, with a cost."""

    name: str
    sql: str
    cost: float = Field(default=1.0, gt=0)
    description: str = ""


class DatasetSettings(Model):
    description: str = ""
    criticality: Criticality | None = None
    owners: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    pii_columns: tuple[str, ...] = ()
    partitions: Partitioning | None = None
    checks: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    retry_policy: str | None = None
    dialect: str | None = None
    alternates: tuple[Alternate, ...] = ()

    _dialect = field_validator("dialect")(classmethod(lambda cls, v: check_dialect(v)))


class DatasetsFile(Model):
    datasets: dict[str, DatasetSettings]

    @field_validator("datasets")
    @classmethod
    def _names(cls, value: dict[str, DatasetSettings]) -> dict[str, DatasetSettings]:
        for name in value:
            check_table_name(name)
        return value


# --- exposures.yaml ---------------------------------------------------------------------------


class Exposure(Model):
    name: str
    type: Literal["dashboard", "ml_model", "reverse_etl", "application", "report"]
    description: str = ""
    owners: tuple[str, ...]
    criticality: Criticality = "normal"
    depends_on: tuple[str, ...]
    url: str | None = None

    _name = field_validator("name")(classmethod(lambda cls, v: check_identifier(v)))


class ExposuresFile(Model):
    exposures: tuple[Exposure, ...]
