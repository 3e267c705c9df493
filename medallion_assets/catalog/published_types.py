"""An output column whose type the SQL now makes other than the published table's: readers of
the table (other engines, the warehouse target) would see the type change under them. Caught
at ``catalog validate`` against the lake's schema, before any Spark starts, unless the table's
``schema`` rule allows it (``allow_type_changes: [column]``, or ``['*']``).

Types are compared by family (an integer, a decimal, a string, a timestamp ...): the lake
widens an int to a bigint in place and a decimal's precision is Spark's own, so those are no
change; a type the lineage cannot derive is not judged.

>>> type_family("decimal(18, 2)"), type_family("long"), type_family("timestamptz")
('decimal', 'integer', 'timestamp')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from medallion_assets.catalog.catalog import Dataset
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.catalog.rules import SchemaRule

_FAMILIES = (
    ("integer", r"tinyint|smallint|int|integer|bigint|long|byte|short"),
    ("float", r"float|double|real"),
    ("decimal", r"decimal|numeric"),
    ("string", r"string|varchar|char|text|uuid"),
    ("date", r"date"),
    ("timestamp", r"timestamp|timestamptz|timestamp_ntz|timestamp_ltz"),
    ("boolean", r"boolean|bool"),
    ("binary", r"binary|fixed"),
)


def type_family(kind: str) -> str | None:
    """What a type is, for telling a change from a widening; None for a nested or unknown one."""
    head = re.match(r"\s*([a-z_]+)", kind.lower())
    if head is None:
        return None
    for family, names in _FAMILIES:
        if re.fullmatch(names, head.group(1)):
            return family
    return None


def changed_types(
    datasets: Mapping[str, Dataset], published: Mapping[str, Sequence[tuple[str, str]]]
) -> list[CatalogIssue]:
    """One issue per column whose derived type is of another family than the published one."""
    issues: list[CatalogIssue] = []
    for name, columns in published.items():
        dataset = datasets.get(name)
        if dataset is None or not columns:
            continue
        lake = {column.lower(): kind for column, kind in columns}
        schema_rules = [r for r in dataset.rules if isinstance(r, SchemaRule)]
        allowed = {c for r in schema_rules for c in r.allow_type_changes}
        for column in dataset.columns:
            derived, before = column.type, lake.get(column.column.lower())
            if not derived or derived == "unknown" or before is None:
                continue
            now, then = type_family(derived), type_family(before)
            if now is None or then is None or now == then:
                continue
            if column.column in allowed or "*" in allowed:
                continue
            issues.append(
                CatalogIssue(
                    dataset.sql_path,
                    "sql",
                    f"{name}.{column.column} is {derived} in the SQL but {before} in the "
                    "published table: its readers (other engines, the warehouse) would see "
                    "the type change",
                    f"keep its type (CAST(... AS {before})), or allow the change: a rule "
                    f"{{kind: schema, allow_type_changes: [{column.column}]}} on {name}",
                    _line_making(dataset.sql, column.column),
                )
            )
    return issues


def _line_making(text: str, column: str) -> int | None:
    """The line where the SQL names the output ``column`` last (its alias, else the name)."""
    found = list(re.finditer(rf"\bas\s+`?{re.escape(column)}`?(?!\w)", text, re.I))
    found = found or list(re.finditer(rf"(?<![\w.]){re.escape(column)}(?!\w)", text, re.I))
    return text.count("\n", 0, found[-1].start()) + 1 if found else None
