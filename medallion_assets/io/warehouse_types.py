"""Warehouse column types for Arrow types, per dialect (postgres, redshift, duckdb). Pure.

>>> import pyarrow as pa
>>> sql_type(pa.decimal128(12, 2), "redshift")
'DECIMAL(12,2)'
>>> sql_type(pa.list_(pa.int64()), "redshift"), sql_type(pa.list_(pa.int64()), "postgres")
('SUPER', 'VARCHAR')
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from medallion_assets.io.warehouse_sql import Dialect, check_dialect, quote_identifier


def sql_type(arrow_type: pa.DataType, dialect: Dialect, column: str = "?") -> str:
    """The warehouse column type for an Arrow type; nested values travel as JSON text (SUPER)."""
    check_dialect(dialect)
    t = arrow_type
    if pa.types.is_dictionary(t):
        return sql_type(t.value_type, dialect, column)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise ValueError(
                f"column {column!r}: {t} has precision {t.precision}; warehouses hold at most "
                "38 digits (cast it to decimal(38, s) in the gold SQL)"
            )
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz is None else "TIMESTAMPTZ"
    if is_nested(t):
        return "SUPER" if dialect == "redshift" else _varchar(dialect)
    # A null column has no values yet: text is the safe home for whatever comes later.
    if pa.types.is_null(t) or any(is_text(t) for is_text in _TEXT):
        return _varchar(dialect)
    for is_type, name in _SIMPLE_TYPES:
        if is_type(t):
            return name
    raise ValueError(
        f"column {column!r}: Arrow type {t} has no warehouse type; cast it in the gold SQL to "
        "string, bigint, double, decimal(p,s), boolean, date or timestamp"
    )


_TEXT = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_SIMPLE_TYPES: tuple[tuple[Callable[[pa.DataType], bool], str], ...] = (
    (pa.types.is_boolean, "BOOLEAN"),
    (lambda t: pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t), "SMALLINT"),
    (lambda t: pa.types.is_int32(t) or pa.types.is_uint16(t), "INTEGER"),
    (lambda t: pa.types.is_int64(t) or pa.types.is_uint32(t), "BIGINT"),
    (pa.types.is_uint64, "DECIMAL(20,0)"),
    (lambda t: pa.types.is_float16(t) or pa.types.is_float32(t), "REAL"),
    (pa.types.is_float64, "DOUBLE PRECISION"),
    (pa.types.is_date, "DATE"),
    (pa.types.is_time, "TIME"),
)


def _varchar(dialect: Dialect) -> str:
    # Redshift's VARCHAR without a length is VARCHAR(256) and rejects longer values at COPY time.
    return "VARCHAR(65535)" if dialect == "redshift" else "VARCHAR"


def is_nested(arrow_type: pa.DataType) -> bool:
    """Lists, structs and maps: loaded as JSON text (SUPER on Redshift)."""
    return any(is_kind(arrow_type) for is_kind in _NESTED)


_NESTED = (
    pa.types.is_list,
    pa.types.is_large_list,
    pa.types.is_fixed_size_list,
    pa.types.is_struct,
    pa.types.is_map,
)


def arrow_columns(schema: pa.Schema, dialect: Dialect) -> list[tuple[str, str]]:
    """``[(column, sql type)]`` for an Arrow schema, each name validated."""
    if len(schema) == 0:
        raise ValueError("the data has no columns; a warehouse table needs at least one")
    names = [field.name for field in schema]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"the data has duplicate column(s): {', '.join(duplicates)}")
    columns = []
    for field in schema:
        quote_identifier(field.name)
        columns.append((field.name, sql_type(field.type, dialect, field.name)))
    return columns
