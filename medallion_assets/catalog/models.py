"""Typed, frozen models of the data-side metadata files under ``metadata/``: project, systems,
sources, targets, validation, datasets, exposures. The operations-side files (policies, control,
profiles, pipelines) are in ``operations.py``.

One model per file (``SourcesFile`` ...). Unknown keys are errors, so a typo such as
``criticallity:`` is reported instead of silently ignored. Cross-file references (a dataset
naming a rule set, a target naming a table) are checked by ``references.py``.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, field_validator, model_validator

from medallion_assets.catalog.base import (
    _IDENT,
    _TABLE,
    Criticality,
    Model,
    _is_spark_type,
    check_bucket,
    check_dialect,
    check_encoding,
    check_identifier,
    check_partition,
    check_prefix,
    check_table_name,
    java_charset,
)
from medallion_assets.catalog.names import (
    check_dataset_tag,
    check_owners,
    check_system_name,
)
from medallion_assets.catalog.rules import Rule

# --- project.yaml -----------------------------------------------------------------------------


class ProjectFile(Model):
    name: str
    description: str = ""
    dialect: str = "spark"
    owners: tuple[str, ...] = ()
    default_criticality: Criticality = "normal"
    compute_system: str = "spark"

    _dialect = field_validator("dialect")(classmethod(lambda cls, v: check_dialect(v)))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))


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
            check_system_name(check_identifier(name))
        return value


# --- sources.yaml -----------------------------------------------------------------------------


class Column(Model):
    name: str
    type: str = "string"
    nullable: bool = True
    description: str = ""
    # A double or float column takes NaN, Infinity and -Infinity only when this says so;
    # otherwise a record holding one is quarantined with the reason.
    allow_nan: bool = False

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

    @model_validator(mode="after")
    def _allow_nan(self) -> Column:
        if self.allow_nan and self.type not in FLOATING_TYPES:
            raise ValueError(
                f"allow_nan applies to double and float columns; {self.name} is {self.type}: "
                "remove allow_nan"
            )
        return self


FLOATING_TYPES = ("double", "float", "real")


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
    encoding: str = "utf-8"  # of csv and jsonl objects; an object not valid in it is set aside
    replicas: tuple[Replica, ...] = ()
    # An object lacking a column declared nullable: false, or holding no value in it, breaks
    # the contract: it is set aside whole, or (quarantine_rows) read and its rows quarantined.
    on_contract_break: Literal["set_aside", "quarantine_rows"] = "set_aside"
    # A value with more decimal places than its decimal(p,s) column: quarantined, or rounded.
    on_excess_scale: Literal["quarantine", "round"] = "quarantine"
    # An object ingested before and gone from the source: its rows stay in bronze (keep), or
    # are removed from it as an audited change of their own (propagate).
    deletes: Literal["keep", "propagate"] = "keep"

    _bucket = field_validator("bucket")(classmethod(lambda cls, v: check_bucket(v)))
    _prefix = field_validator("prefix")(classmethod(lambda cls, v: check_prefix(v)))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))

    @field_validator("partition")
    @classmethod
    def _partition(cls, value: str | None) -> str | None:
        return check_partition(value) if value is not None else None

    @model_validator(mode="after")
    def _partition_folder(self) -> Source:
        # The runtime lists <prefix><partition>/: without the '/' the date folder would be glued
        # to the prefix's last name ('eventsdt=2026-01-01/').
        if self.partition is None:
            return self
        for where, prefix in [("prefix", self.prefix)] + [
            (f"replicas[{i}].prefix", r.prefix) for i, r in enumerate(self.replicas)
        ]:
            if prefix and not prefix.endswith("/"):
                raise ValueError(
                    f"{where} {prefix!r} must end with '/' when the source has a partition "
                    f"pattern; write {prefix + '/'!r}"
                )
        return self

    @field_validator("encoding")
    @classmethod
    def _encoding(cls, value: str) -> str:
        check_encoding(value)
        return value

    @model_validator(mode="after")
    def _columns(self) -> Source:
        names = [c.name for c in self.columns]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"column(s) declared twice: {', '.join(duplicates)}")
        if self.format == "parquet" and check_encoding(self.encoding) != "utf-8":
            raise ValueError(
                f"encoding {self.encoding!r} applies to csv and jsonl sources only; Parquet "
                "stores its own encoding: remove the encoding key"
            )
        if self.format == "csv" and java_charset(self.encoding) is None:
            raise ValueError(
                f"Spark cannot read CSV in encoding {self.encoding!r}: declare one of utf-8, "
                "utf-16, latin-1, cp1252 (any ISO-8859-n, cp125n, Shift_JIS, GBK, Big5, KOI8-R), "
                "or have the feed converted"
            )
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
        if not _TABLE.fullmatch(value) and not _IDENT.fullmatch(value):
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


class Backup(Model):
    """A project table holding a copy of this one (a snapshot, another region's build): the
    table can be recovered by reading it, at a cost. Its columns must be this table's."""

    table: str
    cost: float = Field(default=1.0, gt=0)
    name: str | None = None  # the route's name; default backup_<layer>_<table>
    description: str = ""

    @property
    def route_name(self) -> str:
        return self.name or "backup_" + self.table.replace(".", "_")


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
    backups: tuple[Backup, ...] = ()

    _dialect = field_validator("dialect")(classmethod(lambda cls, v: check_dialect(v)))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tag in value:
            check_dataset_tag(tag)
        return value


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
    # "HH:MM" UTC: every day, what it reads must be ready by then (medallion simulate)
    deadline: str | None = None

    _name = field_validator("name")(classmethod(lambda cls, v: check_identifier(v)))

    @field_validator("deadline")
    @classmethod
    def _deadline(cls, value: str | None) -> str | None:
        if value is not None:
            hour, colon, minute = value.partition(":")
            if not (colon and hour.isdigit() and minute.isdigit() and len(minute) == 2) or not (
                0 <= int(hour) <= 23 and 0 <= int(minute) <= 59
            ):
                raise ValueError(f"deadline {value!r} is not a time of day HH:MM (UTC), e.g. 06:00")
        return value

    @property
    def deadline_seconds(self) -> int | None:
        """Seconds after midnight UTC of the deadline, or None."""
        if self.deadline is None:
            return None
        hour, _, minute = self.deadline.partition(":")
        return int(hour) * 3600 + int(minute) * 60

    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))


class ExposuresFile(Model):
    exposures: tuple[Exposure, ...]
