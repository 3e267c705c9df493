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
    WAREHOUSE_LEDGER,
    WAREHOUSE_STAGING_PREFIX,
    Criticality,
    Model,
    check_dialect,
    check_identifier,
    check_table_name,
    example,
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
    """The project's name; `catalog show` and the flows `medallion export` writes carry it."""
    description: str = ""
    """What the project is, in words."""
    dialect: str = "spark"
    """Dialect the SQL files are in (spark, redshift, postgres ...); a table may override it."""
    owners: tuple[str, ...] = ()
    """Owners (`team:<name>` or an e-mail) of every table that names none in datasets.yaml."""
    default_criticality: Criticality = "normal"
    """Criticality of every table that sets none in datasets.yaml."""
    compute_system: str = "spark"
    """The system (systems.yaml) that runs every build: each step holds one of its slots."""

    _dialect = field_validator("dialect")(classmethod(lambda cls, v: check_dialect(v)))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))


# --- systems.yaml -----------------------------------------------------------------------------


class Throttle(Model):
    model_config = example(max_concurrent_jobs=4, requests_per_second=100)

    max_concurrent_jobs: int | None = Field(default=None, ge=1)
    """Steps using the system at once over all runs (its Dagster pool's limit); none: no limit."""
    rows_per_second: float | None = Field(default=None, gt=0)
    """Rows/s extracted from or loaded into it, shared by every step and run; none: no limit."""
    bytes_per_second: float | None = Field(default=None, gt=0)
    """Bytes/s read from or written to it, shared by every step and run; none: no limit."""
    requests_per_second: float | None = Field(default=None, gt=0)
    """Requests/s to it (listings, reads, writes), shared by every step and run; none: no limit."""


class System(Model):
    model_config = example(
        kind="s3", description="Landing bucket", throttle={"max_concurrent_jobs": 8}
    )

    kind: Literal["s3", "spark", "redshift", "postgres", "duckdb"]
    """s3 object storage, spark compute, or a redshift, postgres or duckdb warehouse."""
    description: str = ""
    """What the system is, in words."""
    throttle: Throttle = Throttle()
    """The limits the runtime keeps to on this system; left out, it has none."""


class SystemsFile(Model):
    systems: dict[str, System]
    """Every system the project reads, runs on or loads into, by name (its Dagster pool's name)."""

    @field_validator("systems")
    @classmethod
    def _names(cls, value: dict[str, System]) -> dict[str, System]:
        for name in value:
            check_system_name(check_identifier(name))
        return value


# --- sources.yaml -----------------------------------------------------------------------------


# --- targets.yaml -----------------------------------------------------------------------------


class Target(Model):
    model_config = example(
        table="gold.sales", system="warehouse", warehouse_table="analytics.sales"
    )

    table: str
    """The gold table loaded into the warehouse after it publishes."""
    system: str
    """The warehouse system (systems.yaml: redshift, postgres or duckdb) it is loaded into."""
    warehouse_table: str
    """The table in the warehouse, 'schema.table' (or a bare table name) in lower case."""
    mode: Literal["replace", "append", "merge"] = "replace"
    (
        "replace: every row is replaced; append: each new lake version is appended once; merge: "
        "the rows of the staged keys are replaced. A daily partition's load replaces its day in "
        "any mode."
    )
    keys: tuple[str, ...] = ()
    (
        "Columns that identify a row: what merge replaces by (required for it); in any mode a key "
        "held twice fails reconciliation."
    )
    dist_key: str | None = None
    """Redshift DISTKEY of the warehouse table when it is created; other warehouses ignore it."""
    sort_keys: tuple[str, ...] = ()
    """Redshift SORTKEY of the warehouse table when it is created; other warehouses ignore it."""
    description: str = ""
    """What the load is for, in words."""

    _table = field_validator("table")(classmethod(lambda cls, v: check_table_name(v)))

    @field_validator("warehouse_table")
    @classmethod
    def _warehouse_table(cls, value: str) -> str:
        if not _TABLE.fullmatch(value) and not _IDENT.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a safe warehouse table name: write 'schema.table' in lower case"
            )
        name = value.rsplit(".", 1)[-1]
        if name == WAREHOUSE_LEDGER or name.startswith(WAREHOUSE_STAGING_PREFIX):
            raise ValueError(
                f"{value!r} is a name the project keeps for itself in the warehouse (its load "
                f"ledger {WAREHOUSE_LEDGER}, staging tables {WAREHOUSE_STAGING_PREFIX}*): give "
                "the table another name"
            )
        return value

    @model_validator(mode="after")
    def _merge_keys(self) -> Target:
        if self.mode == "merge" and not self.keys:
            raise ValueError("mode 'merge' needs 'keys': the columns that identify a row")
        return self


class TargetsFile(Model):
    targets: tuple[Target, ...]
    """The gold tables loaded into a warehouse, one entry per table."""


# --- validation.yaml --------------------------------------------------------------------------


class ValidationFile(Model):
    rule_sets: dict[str, tuple[Rule, ...]]
    """Reusable lists of rules by name; a dataset applies a set with `checks: [<name>]`."""


# --- datasets.yaml ----------------------------------------------------------------------------


class Partitioning(Model):
    model_config = example(column="order_date", start="2026-01-01")

    type: Literal["daily"] = "daily"
    """One partition per day, the only kind: the table is built and loaded a day at a time."""
    column: str
    """The date column holding each row's day; a day's build may write only rows of its day."""
    start: date
    """The table's first day (YYYY-MM-DD); raw folders of earlier days are skipped."""


class Alternate(Model):
    model_config = example(name="from_backup", sql="alternates/silver/orders.sql", cost=2)

    """Another producer of the same table: a SQL file reading other inputs, with a cost."""

    name: str
    """The route's name, as `medallion control route` and `recovery-paths` show it."""
    sql: str
    """Its SQL file, relative to sql/, e.g. alternates/silver/orders_from_backup.sql."""
    cost: float = Field(default=1.0, gt=0)
    """Its cost relative to the primary's 1; recovery takes the cheapest available path."""
    description: str = ""
    """When and why to use this producer, in words."""


class Backup(Model):
    model_config = example(table="silver.orders_snapshot", cost=3)

    """A project table holding a copy of this one (a snapshot, another region's build): the
    table can be recovered by reading it, at a cost. Its columns must be this table's."""

    table: str
    """The project table holding the copy (with this table's columns), read as it is published."""
    cost: float = Field(default=1.0, gt=0)
    """Its cost relative to the primary's 1; recovery takes the cheapest available path."""
    name: str | None = None
    """The route's name; default backup_<layer>_<table>."""
    description: str = ""
    """What the copy is, in words."""

    @property
    def route_name(self) -> str:
        return self.name or "backup_" + self.table.replace(".", "_")


class DatasetSettings(Model):
    model_config = example(criticality="high", owners=["team:sales"], checks=["orders"])

    description: str = ""
    """What the table holds; its Dagster description (default: the SQL file's leading comments)."""
    criticality: Criticality | None = None
    """How much it matters (step order, run priority, skip_below); default: default_criticality."""
    owners: tuple[str, ...] = ()
    """Who owns the table (`team:<name>` or an e-mail); default: the project's owners."""
    tags: tuple[str, ...] = ()
    """Labels (Dagster tags tag_<tag>) that select.tags and `--select tag:<tag>` pick tables by."""
    pii_columns: tuple[str, ...] = ()
    """Columns holding personal data: masked in check samples here and in every table they
    reach unmasked by column lineage; traced by `medallion trace-pii`."""
    partitions: Partitioning | None = None
    """Daily partitions: built, checked and loaded a day at a time; none: built as a whole."""
    checks: tuple[str, ...] = ()
    """Names of rule sets (validation.yaml) whose rules also apply to this table."""
    rules: tuple[Rule, ...] = ()
    """This table's own validation rules, each an asset check run before the table publishes."""
    retry_policy: str | None = None
    (
        "Retry policy (policies.yaml) of its steps; default: its run's pipeline's, else the "
        "project's."
    )
    dialect: str | None = None
    """SQL dialect of its file, over the project's; a first line `-- dialect: <name>` wins."""
    alternates: tuple[Alternate, ...] = ()
    """Other SQL files that can produce the table when its primary route is down."""
    backups: tuple[Backup, ...] = ()
    """Other project tables holding a copy of this one, read when it cannot be built."""
    keep_latest_by: tuple[str, ...] = ()
    (
        "A MERGE INTO file's source rows sharing a key (its ON condition's) keep only the one "
        "sorting last by these source columns; without it, or on a tie, a key held by two "
        "source rows fails the build, the first build included."
    )

    kind: Literal["full", "append", "merge", "scd2"] = "full"
    (
        "How a run builds the table: `full` rebuilds it from its inputs; `append` reads only "
        "the rows its driving input gained since the last build and appends what they make; "
        "`merge` recomputes the keys whose driving rows changed (every row of those keys) and "
        "merges them in, deleting keys that no longer make a row; `scd2` keeps every version "
        "of each key its SQL has made (valid_from, valid_to, is_current added). Other inputs "
        "are read whole, and a change to one of them (or to the SQL) rebuilds the table in full."
    )
    keys: tuple[str, ...] = ()
    (
        "kind merge or scd2: the output columns that identify a row (e.g. [order_id]); at "
        "least one a plain copy of a column of the driving input, which says whose rows a "
        "key's come from (others, e.g. a line number the SQL computes, tell one order's rows "
        "apart)."
    )
    driving: str | None = None
    (
        "kind append, merge or scd2: the input table whose changes drive a run; default: the "
        "only input, or the one the keys are copied from."
    )
    updated_at: str | None = None
    (
        "kind scd2: the output column (a timestamp) saying when each version of a key took "
        "effect: its valid_from; the next version's is its valid_to. A late version lands in "
        "its place in the history."
    )
    track: tuple[str, ...] = ()
    (
        "kind scd2: the output columns whose change opens a new version; default: every "
        "column but the keys and updated_at. A version that changes none of them (a re-export) "
        "changes nothing."
    )

    _dialect = field_validator("dialect")(classmethod(lambda cls, v: check_dialect(v)))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))

    @model_validator(mode="after")
    def _kind(self) -> DatasetSettings:
        keyed = ("merge", "scd2")
        if self.kind in keyed and not self.keys:
            raise ValueError(f"kind {self.kind} needs keys: the output columns that identify a row")
        if self.keys and self.kind not in keyed:
            raise ValueError(f"keys apply to kind merge or scd2, not {self.kind}")
        if self.kind == "scd2" and not self.updated_at:
            raise ValueError("kind scd2 needs updated_at: the output column when a version began")
        if self.kind == "scd2" and self.partitions is not None:
            raise ValueError(
                "kind scd2 keeps each key's versions together, and a daily table builds each "
                "day alone: remove partitions, or use kind merge"
            )
        if (self.updated_at or self.track) and self.kind != "scd2":
            raise ValueError(f"updated_at and track apply to kind scd2, not {self.kind}")
        if self.driving is not None:
            if self.kind == "full":
                raise ValueError("driving applies to an incremental kind, not full")
            check_table_name(self.driving)
        return self

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tag in value:
            check_dataset_tag(tag)
        return value


class DatasetsFile(Model):
    datasets: dict[str, DatasetSettings]
    """Settings per table, by '<layer>.<table>'; a table not listed takes the defaults."""

    @field_validator("datasets")
    @classmethod
    def _names(cls, value: dict[str, DatasetSettings]) -> dict[str, DatasetSettings]:
        for name in value:
            check_table_name(name)
        return value


# --- exposures.yaml ---------------------------------------------------------------------------


class Exposure(Model):
    model_config = example(
        name="sales_dashboard", type="dashboard", owners=["team:sales"], depends_on=["gold.sales"]
    )

    name: str
    """The consumer's name; it is the lineage node exposure.<name>."""
    type: Literal["dashboard", "ml_model", "reverse_etl", "application", "report"]
    """What kind of consumer it is (its Dagster asset's kind)."""
    description: str = ""
    """What it is and who uses it, in words."""
    owners: tuple[str, ...]
    """Who owns it (`team:<name>` or an e-mail); `medallion impact` names them."""
    criticality: Criticality = "normal"
    """How much it matters; `medallion impact --fail-on` counts it."""
    depends_on: tuple[str, ...]
    """The project tables it reads; it sits downstream of them in lineage and impact."""
    url: str | None = None
    """Where to find it; shown in its Dagster asset's metadata."""
    deadline: str | None = None
    """HH:MM (UTC) by which what it reads must be ready each day; `medallion simulate` checks it."""

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
    """Consumers outside the warehouse (dashboards, models, applications), as lineage nodes."""
