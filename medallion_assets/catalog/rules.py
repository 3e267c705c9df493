"""Validation rule models: one frozen model per rule kind, chosen by the ``kind`` key.

Example (``validation.yaml``)::

    rule_sets:
      order_keys:
        - {kind: not_null, columns: [order_id]}
        - {kind: unique, columns: [order_id], severity: error}
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Severity = Literal["warn", "error"]


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str | None = None
    severity: Severity = "error"
    description: str = ""

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
        return f"{self.kind}_{cols}" if cols else str(self.kind)  # type: ignore[attr-defined]


class RowCountRule(_Rule):
    kind: Literal["row_count"]
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> RowCountRule:
        if self.min is None and self.max is None:
            raise ValueError("row_count needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"row_count min {self.min} is greater than max {self.max}")
        return self


class _ColumnsRule(_Rule):
    columns: tuple[str, ...] = Field(min_length=1)

    def referenced_columns(self) -> tuple[str, ...]:
        return self.columns


class NotNullRule(_ColumnsRule):
    kind: Literal["not_null"]


class UniqueRule(_ColumnsRule):
    kind: Literal["unique"]


class _ColumnRule(_Rule):
    column: str

    def referenced_columns(self) -> tuple[str, ...]:
        return (self.column,)


class AcceptedValuesRule(_ColumnRule):
    kind: Literal["accepted_values"]
    values: tuple[str | int | float | bool, ...] = Field(min_length=1)

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
    min: float | None = None
    max: float | None = None
    min_inclusive: bool = True
    max_inclusive: bool = True

    @model_validator(mode="after")
    def _bounds(self) -> RangeRule:
        if self.min is None and self.max is None:
            raise ValueError("range needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"range min {self.min} is greater than max {self.max}")
        return self


class RegexRule(_ColumnRule):
    kind: Literal["regex"]
    pattern: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"pattern {value!r} does not compile: {error}") from None
        return value


class FreshnessRule(_Rule):
    kind: Literal["freshness"]
    column: str | None = None  # None: age of the last ingest
    max_age_hours: float = Field(gt=0)

    def referenced_columns(self) -> tuple[str, ...]:
        return (self.column,) if self.column else ()


class SchemaRule(_Rule):
    kind: Literal["schema"]
    allow_new_nullable_columns: bool = True


class ReferentialIntegrityRule(_Rule):
    kind: Literal["referential_integrity"]
    columns: tuple[str, ...] = Field(min_length=1)
    to_table: str
    to_columns: tuple[str, ...] = Field(min_length=1)

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
    """A query over ``{table}`` whose returned rows are failures."""

    kind: Literal["sql"]
    query: str


class ReconciliationRule(_Rule):
    """After a warehouse load: lake rows == warehouse rows (within ``tolerance`` rows)."""

    kind: Literal["reconciliation"]
    tolerance: int = Field(default=0, ge=0)


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
)
