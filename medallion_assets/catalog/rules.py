"""Validation rule models: one frozen model per rule kind, chosen by the ``kind`` key.

Example (``validation.yaml``)::

    rule_sets:
      order_keys:
        - {kind: not_null, columns: [order_id]}
        - {kind: unique, columns: [order_id], severity: error}
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Annotated, Literal, Union

import sqlglot
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from medallion_assets.lineage.nesting import check_nesting, check_parentheses
from medallion_assets.lineage.statement import SqlError, table_name

Severity = Literal["warn", "error"]
# A check name becomes a Dagster asset check name: letters, digits and underscores.
_CHECK_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Stands for the checked table while a custom SQL assertion is parsed.
SELF_PLACEHOLDER = "__medallion_checked_table__"


class _Rule(BaseModel):
    # As ``base.Model``: a field's docstring is its description (the metadata reference).
    model_config = ConfigDict(
        extra="forbid", frozen=True, str_strip_whitespace=True, use_attribute_docstrings=True
    )

    name: str | None = None
    """Its Dagster asset check's name; default: the kind and its columns, e.g. not_null_order_id."""
    severity: Severity = "error"
    """error: a failure keeps the table from publishing; warn: recorded, and the table publishes."""
    description: str = ""
    """What the check guards, in words; its Dagster description (default: a summary of the rule)."""
    if TYPE_CHECKING:  # each rule declares its own ``kind`` literal (the union's discriminator)
        kind: str

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str | None) -> str | None:
        if value is not None and not _CHECK_NAME.fullmatch(value):
            raise ValueError(
                f"check name {value!r} may hold only letters, digits and underscores "
                "(it becomes the Dagster asset check name)"
            )
        return value

    @property
    def blocking(self) -> bool:
        """Severity error blocks publishing; warn records the failure and publishes."""
        return self.severity == "error"

    def referenced_columns(self) -> tuple[str, ...]:
        """Columns of the dataset this rule reads; checked against the dataset's schema."""
        return ()

    def referenced_tables(self) -> tuple[str, ...]:
        return ()

    def label(self) -> str:
        """Stable name for the rule, used as the asset check name."""
        if self.name:
            return self.name
        cols = "_".join(self.referenced_columns())
        return f"{self.kind}_{cols}" if cols else self.kind


class RowCountRule(_Rule):
    kind: Literal["row_count"]
    """row_count: fails when the table has fewer rows than min or more than max."""
    min: int | None = Field(default=None, ge=0)
    """Fewest rows the table may have."""
    max: int | None = Field(default=None, ge=0)
    """Most rows the table may have."""

    @model_validator(mode="after")
    def _bounds(self) -> RowCountRule:
        if self.min is None and self.max is None:
            raise ValueError("row_count needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"row_count min {self.min} is greater than max {self.max}")
        return self


class _ColumnsRule(_Rule):
    columns: tuple[str, ...] = Field(min_length=1)
    """The columns checked (unique: together, as one key)."""

    def referenced_columns(self) -> tuple[str, ...]:
        return self.columns


class NotNullRule(_ColumnsRule):
    # The rule an error message shows as the shape to write (see base.example).
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"kind": "not_null", "columns": ["id"]}]}
    )

    kind: Literal["not_null"]
    """not_null: fails when a row has a null in any of its columns."""


class UniqueRule(_ColumnsRule):
    kind: Literal["unique"]
    """unique: fails when two rows share the values of its columns (a null counts as a value)."""


class _ColumnRule(_Rule):
    column: str
    """The column checked."""

    def referenced_columns(self) -> tuple[str, ...]:
        return (self.column,)


class AcceptedValuesRule(_ColumnRule):
    kind: Literal["accepted_values"]
    """accepted_values: fails when a non-null value of the column is not among values."""
    values: tuple[str | int | float | bool, ...] = Field(min_length=1)
    """The allowed values; quote codes YAML reads as booleans, e.g. "NO"."""

    @model_validator(mode="after")
    def _no_yaml_booleans_among_codes(self) -> AcceptedValuesRule:
        # YAML 1.1 reads unquoted NO, YES, ON, OFF as booleans: Norway's code would become false.
        kinds = {type(v) for v in self.values}
        if bool in kinds and kinds != {bool}:
            raise ValueError(
                "accepted values mix booleans with other values; YAML reads unquoted "
                'NO/YES/ON/OFF as true/false: quote codes such as "NO"'
            )
        return self


class RangeRule(_ColumnRule):
    kind: Literal["range"]
    """range: fails when a non-null value of the column is outside min..max."""
    min: float | None = None
    """Lowest value allowed; none: no lower bound."""
    max: float | None = None
    """Highest value allowed; none: no upper bound."""
    min_inclusive: bool = True
    """true: min itself is allowed; false: values must be above it."""
    max_inclusive: bool = True
    """true: max itself is allowed; false: values must be below it."""

    @model_validator(mode="after")
    def _bounds(self) -> RangeRule:
        if self.min is None and self.max is None:
            raise ValueError("range needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"range min {self.min} is greater than max {self.max}")
        return self


class RegexRule(_ColumnRule):
    kind: Literal["regex"]
    """regex: fails when a non-null value of the column does not match pattern."""
    pattern: str
    """Regex each non-null value must match from its start (end it with $ for a full match)."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"pattern {value!r} does not compile: {error}") from None
        return value


class FreshnessRule(_Rule):
    """The newest value of ``column`` (default ``_ingested_at``: the last ingest) is at most
    ``max_age_hours`` old when the table is checked."""

    kind: Literal["freshness"]
    """freshness: fails when the newest value of column is more than max_age_hours old."""
    column: str | None = None
    """Timestamp column whose newest value is measured; default _ingested_at (the last ingest)."""
    max_age_hours: float = Field(gt=0)
    """How old, in hours, the newest value may be when the table is checked."""

    @property
    def timestamp_column(self) -> str:
        return self.column or "_ingested_at"

    def referenced_columns(self) -> tuple[str, ...]:
        return (self.timestamp_column,)

    def label(self) -> str:
        if self.name:
            return self.name
        return f"freshness_{self.column}" if self.column else "freshness"


class SchemaRule(_Rule):
    kind: Literal["schema"]
    """schema: fails when a column the SQL derives is missing or has another type."""
    allow_new_nullable_columns: bool = True
    """true: columns beyond the expected ones pass; false: a new column fails the check."""
    allow_type_changes: tuple[str, ...] = ()
    """Columns whose type may change against the published table (`catalog validate` refuses
    any other column's change of type); ['*']: every column."""


class ReferentialIntegrityRule(_Rule):
    kind: Literal["referential_integrity"]
    """referential_integrity: fails when a non-null key of columns is missing from to_table."""
    columns: tuple[str, ...] = Field(min_length=1)
    """This table's key columns."""
    to_table: str
    """The project table the keys must exist in."""
    to_columns: tuple[str, ...] = Field(min_length=1)
    """The columns of to_table that match columns, in the same order."""

    @model_validator(mode="after")
    def _same_width(self) -> ReferentialIntegrityRule:
        if len(self.columns) != len(self.to_columns):
            raise ValueError("columns and to_columns must have the same number of columns")
        return self

    def referenced_columns(self) -> tuple[str, ...]:
        return self.columns

    def referenced_tables(self) -> tuple[str, ...]:
        return (self.to_table,)


class SqlAssertionRule(_Rule):
    """A Spark SQL query over ``{table}`` whose returned rows are failures; it may also read
    other tables of the project by name (they must exist)."""

    kind: Literal["sql"]
    """sql: fails when query returns rows (they are the failures)."""
    query: str
    """Spark SQL SELECT reading the checked table as {table}; each row it returns is a failure."""

    @field_validator("query")
    @classmethod
    def _parses(cls, value: str) -> str:
        if "{table}" not in value:
            raise ValueError(
                "the query must read the checked table as {table}, e.g. "
                "SELECT id FROM {table} WHERE amount < 0"
            )
        _parse_assertion(value)
        return value

    def referenced_tables(self) -> tuple[str, ...]:
        tree = _parse_assertion(self.query)
        names = {table_name(t) for t in tree.find_all(exp.Table)}
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        return tuple(sorted(names - ctes - {SELF_PLACEHOLDER}))


@functools.lru_cache(maxsize=1024)
def _parse_assertion(query: str) -> exp.Query:
    """The rule's query, parsed once per process (validated, then asked its tables; the
    tree is only read)."""
    try:
        check_parentheses(query)  # parsed, it would overflow Python's stack first
        tree = sqlglot.parse_one(query.replace("{table}", SELF_PLACEHOLDER), dialect="spark")
        check_nesting(tree)
    except (ParseError, TokenError) as error:
        raise ValueError(f"the query does not parse as Spark SQL: {error}") from None
    except SqlError as error:
        raise ValueError(f"the query {error}") from None
    except RecursionError:
        raise ValueError("the query is nested too deeply to parse: flatten it with CTEs") from None
    if not isinstance(tree, exp.Query):
        raise ValueError("the query must be a SELECT whose rows are the failures")
    return tree


class QuarantineRateRule(_Rule):
    """Bronze only: malformed records sent to quarantine, as a fraction of records read."""

    kind: Literal["quarantine_rate"]
    """quarantine_rate (bronze only): fails when too large a fraction of records is malformed."""
    max_fraction: float = Field(ge=0, le=1)
    """Largest fraction (0-1) of the records read that may be malformed, e.g. 0.005."""


class ReconciliationRule(_Rule):
    """After a warehouse load: lake rows == warehouse rows (within ``tolerance`` rows)."""

    kind: Literal["reconciliation"]
    """reconciliation (a target's table): fails when the rows loaded differ from the lake's."""
    tolerance: int = Field(default=0, ge=0)
    """Rows by which warehouse and lake counts may differ; a key of the target held twice fails."""


Rule = Annotated[
    Union[
        RowCountRule,
        NotNullRule,
        UniqueRule,
        AcceptedValuesRule,
        RangeRule,
        RegexRule,
        FreshnessRule,
        SchemaRule,
        ReferentialIntegrityRule,
        SqlAssertionRule,
        ReconciliationRule,
        QuarantineRateRule,
    ],
    Field(discriminator="kind"),
]

RULE_KINDS: tuple[str, ...] = (
    "row_count",
    "not_null",
    "unique",
    "accepted_values",
    "range",
    "regex",
    "freshness",
    "schema",
    "referential_integrity",
    "sql",
    "reconciliation",
    "quarantine_rate",
)


def placement_problems(
    rule: Rule, table: str, columns: tuple[str, ...] | None, has_target: bool
) -> list[tuple[str, str]]:
    """Why ``rule`` cannot apply to ``table``, as (message, fix) pairs; empty when it can.

    ``columns`` is the table's column list (None when unknown); unknown columns in general are
    the caller's check, this covers what depends on the rule kind.
    """
    problems: list[tuple[str, str]] = []
    if isinstance(rule, ReconciliationRule) and not has_target:
        problems.append(
            (
                f"reconciliation rule on {table}, which is not loaded into a warehouse",
                f"add a target for {table} in targets.yaml, or remove the rule",
            )
        )
    if isinstance(rule, QuarantineRateRule) and not table.startswith("bronze."):
        problems.append(
            (
                f"quarantine_rate rule on {table}: only bronze tables quarantine records",
                "attach it to the bronze table that ingests the source",
            )
        )
    default_column = isinstance(rule, FreshnessRule) and rule.column is None
    if default_column and columns is not None and "_ingested_at" not in columns:
        problems.append(
            (
                f"freshness rule without a column measures the last ingest "
                f"(_ingested_at), which {table} does not have",
                "name a timestamp column of the table: column: <column>",
            )
        )
    return problems


def duplicate_labels(rules: tuple[Rule, ...] | list[Rule]) -> list[str]:
    """Check names used by more than one rule of one table (asset check names must differ)."""
    seen: dict[str, int] = {}
    for rule in rules:
        seen[rule.label()] = seen.get(rule.label(), 0) + 1
    return [label for label, count in seen.items() if count > 1]
