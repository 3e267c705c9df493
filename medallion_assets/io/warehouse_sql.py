"""SQL text for warehouse loads, one builder per statement, for the postgres, redshift and duckdb
dialects. Pure: no connection, no I/O, so Redshift's statements are tested as text.

Every identifier is validated (lower-case ``[a-z_][a-z0-9_]*``) and then double-quoted, so
nothing a metadata file or an Arrow schema holds can change the shape of a statement.

>>> create_table("gold.orders", [("id", "BIGINT")], "redshift", dist_key="id")
'CREATE TABLE IF NOT EXISTS "gold"."orders" ("id" BIGINT) DISTKEY("id")'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from medallion_assets.catalog.base import WAREHOUSE_LEDGER, WAREHOUSE_STAGING_PREFIX

Dialect = Literal["postgres", "redshift", "duckdb"]
DIALECTS: tuple[str, ...] = ("postgres", "redshift", "duckdb")

BEGIN, COMMIT, ROLLBACK = "BEGIN", "COMMIT", "ROLLBACK"

# fullmatch everywhere: ``$`` alone would also accept a trailing newline.
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
# PostgreSQL silently truncates longer names; Redshift allows 127. The smaller bound keeps a name
# meaning the same table on every warehouse.
_MAX_IDENT = 63
_S3_URI = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9_.=/()!*-]*)?")
_IAM_ROLE = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9_+=,.@/-]{1,512}")


def quote_identifier(name: str) -> str:
    """Quote a lower-case identifier; anything else is a ValueError.

    >>> quote_identifier("order_id")
    '"order_id"'
    >>> quote_identifier("Order Id")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'Order Id' is not a safe warehouse identifier: use lower-case letters, ...
    """
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a safe warehouse identifier: use lower-case letters, digits and _, "
            "starting with a letter or _ (rename the column in the gold SQL, e.g. AS order_id)"
        )
    if len(name) > _MAX_IDENT:
        raise ValueError(f"identifier {name!r} is longer than {_MAX_IDENT} characters")
    return f'"{name}"'


def split_table(table: str) -> tuple[str | None, str]:
    """(schema, table) of a warehouse table name; a bare name has no schema.

    >>> split_table("gold.orders"), split_table("orders")
    (('gold', 'orders'), (None, 'orders'))
    """
    parts = table.split(".") if isinstance(table, str) else []
    if not 1 <= len(parts) <= 2:
        raise ValueError(f"{table!r} is not a warehouse table: write 'schema.table' in lower case")
    try:
        for part in parts:
            quote_identifier(part)
    except ValueError:
        raise ValueError(
            f"{table!r} is not a safe warehouse table name: write 'schema.table' in lower case "
            "(letters, digits and _)"
        ) from None
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def quote_table(table: str) -> str:
    """The quoted name of a warehouse table.

    >>> print(quote_table("gold.orders"))
    "gold"."orders"
    """
    schema, name = split_table(table)
    return quote_identifier(name) if schema is None else f'"{schema}"."{name}"'


def check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown warehouse dialect {dialect!r}; use one of {', '.join(DIALECTS)}")


# --- DDL --------------------------------------------------------------------------------------


def create_schema(table: str) -> str | None:
    """``CREATE SCHEMA IF NOT EXISTS`` for a qualified table; None for a bare name."""
    schema, _ = split_table(table)
    return None if schema is None else f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}"


def create_table(
    table: str,
    columns: Sequence[tuple[str, str]],
    dialect: Dialect,
    dist_key: str | None = None,
    sort_keys: Sequence[str] = (),
) -> str:
    """``CREATE TABLE IF NOT EXISTS``; Redshift adds DISTKEY/SORTKEY, the others ignore them."""
    check_dialect(dialect)
    if not columns:
        raise ValueError(f"table {table!r} needs at least one column")
    names = {name for name, _ in columns}
    body = ", ".join(f"{quote_identifier(name)} {_check_type(kind)}" for name, kind in columns)
    statement = f"CREATE TABLE IF NOT EXISTS {quote_table(table)} ({body})"
    if dialect != "redshift":
        return statement
    for key in (dist_key, *sort_keys):
        if key is not None and key not in names:
            raise ValueError(
                f"distribution/sort key {key!r} of {table!r} is not a column of the data; "
                f"columns are: {', '.join(sorted(names))}"
            )
    if dist_key is not None:
        statement += f" DISTKEY({quote_identifier(dist_key)})"
    if sort_keys:
        statement += f" SORTKEY({', '.join(quote_identifier(k) for k in sort_keys)})"
    return statement


def _check_type(kind: str) -> str:
    # Types come from sql_type(); this guards hand-written column lists from smuggling SQL.
    if not re.fullmatch(r"[A-Z][A-Z ]*(\(\d+(,\d+)?\))?", kind):
        raise ValueError(f"{kind!r} is not a column type this loader writes")
    return kind


def temp_table_name(table: str, token: str) -> str:
    """A session-private staging table name, unique per load: ``_stage_orders_<token>``."""
    _, name = split_table(table)
    return quote_identifier(f"{WAREHOUSE_STAGING_PREFIX}{name[:40]}_{token}")[1:-1]


def create_temp_like(
    temp: str,
    table: str,
    columns: Sequence[str],
    dialect: Dialect,
    dist_key: str | None = None,
) -> str:
    """A temp table with the data's columns, in the data's order, typed like the target's.

    The order matters on Redshift: COPY from Parquet maps file columns to table columns by
    position. On Redshift the temp table shares the target's DISTKEY so the merge join is local.
    """
    check_dialect(dialect)
    attributes = ""
    if dialect == "redshift" and dist_key is not None and dist_key in columns:
        attributes = f" DISTKEY({quote_identifier(dist_key)})"
    return (
        f"CREATE TEMP TABLE {quote_identifier(temp)}{attributes} AS "
        f"SELECT {_column_list(columns)} FROM {quote_table(table)} WHERE 1 = 0"
    )


def drop_table(table: str) -> str:
    return f"DROP TABLE IF EXISTS {quote_table(table)}"


def copy_from_s3(
    temp: str, s3_uri: str, iam_role: str, format: str = "parquet", serialize_json: bool = False
) -> str:
    """Redshift ``COPY`` of every file under an S3 prefix into the staging table.

    ``serialize_json`` loads nested Parquet columns into SUPER columns as JSON.
    """
    if not _S3_URI.fullmatch(s3_uri):
        raise ValueError(f"{s3_uri!r} is not a safe s3:// URI for COPY (s3://bucket/prefix/)")
    if not _IAM_ROLE.fullmatch(iam_role):
        raise ValueError(
            "iam_role must be an IAM role ARN such as arn:aws:iam::123456789012:role/redshift-load"
        )
    if format.lower() != "parquet":
        raise ValueError(f"COPY format {format!r} is not supported; the loader stages Parquet")
    suffix = " SERIALIZETOJSON" if serialize_json else ""
    return (
        f"COPY {quote_identifier(temp)} FROM '{s3_uri}' IAM_ROLE '{iam_role}' "
        f"FORMAT AS PARQUET{suffix}"
    )


# --- the transaction --------------------------------------------------------------------------


def _column_list(columns: Sequence[str]) -> str:
    if not columns:
        raise ValueError("a load needs at least one column")
    return ", ".join(quote_identifier(c) for c in columns)


def insert_select(into: str, source: str, columns: Sequence[str]) -> str:
    """``INSERT INTO into (cols) SELECT cols FROM source``: named columns, never ``*``."""
    cols = _column_list(columns)
    return f"INSERT INTO {quote_table(into)} ({cols}) SELECT {cols} FROM {quote_table(source)}"


def _key_match(target: str, temp: str, keys: Sequence[str]) -> str:
    if not keys:
        raise ValueError(f"merge into {target!r} needs keys: the columns that identify a row")
    # Redshift's DELETE takes no alias: the bare table name qualifies the target's columns.
    _, name = split_table(target)
    left, right = quote_identifier(name), quote_identifier(temp)
    quoted = [quote_identifier(k) for k in keys]
    return " AND ".join(f"{left}.{k} = {right}.{k}" for k in quoted)


def partition_scope(column: str, partition: str) -> str:
    """The rows of one daily partition: ``CAST("event_date" AS DATE) = DATE '2026-01-01'``.

    The cast makes a DATE, TIMESTAMP or 'YYYY-MM-DD' text column mean the same day everywhere.
    """
    if not isinstance(partition, str) or not _DAY.fullmatch(partition):
        raise ValueError(f"partition {partition!r} is not a day (YYYY-MM-DD)")
    return f"CAST({quote_identifier(column)} AS DATE) = DATE '{partition}'"


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def load_statements(
    mode: str,
    target: str,
    temp: str,
    columns: Sequence[str],
    keys: Sequence[str] = (),
    scope: str | None = None,
) -> list[str]:
    """The statements of one load, to run between BEGIN and COMMIT.

    With a ``scope`` (one partition's rows, from ``partition_scope``) every mode first deletes
    the partition's rows, so a reload replaces exactly that partition; merge then also deletes
    the staged keys wherever they are. Without one: replace deletes every row, merge the staged
    keys, append nothing (each lake version is appended once; the load ledger says which).
    """
    if mode not in ("replace", "append", "merge"):
        raise ValueError(f"unknown load mode {mode!r}; use replace, append or merge")
    # DELETE, not TRUNCATE: TRUNCATE commits on Redshift and locks out readers on PostgreSQL.
    statements = []
    if scope is not None:
        statements.append(f"DELETE FROM {quote_table(target)} WHERE {scope}")
    elif mode == "replace":
        statements.append(f"DELETE FROM {quote_table(target)}")
    if mode == "merge":
        missing = [k for k in keys if k not in columns]
        if missing:
            raise ValueError(f"merge key(s) {', '.join(missing)} of {target!r} are not in the data")
        statements.append(delete_matching(target, temp, keys))
    return [*statements, insert_select(target, temp, columns)]


def delete_matching(target: str, temp: str, keys: Sequence[str]) -> str:
    """Delete the rows of ``target`` whose ``keys`` are a row of ``temp``."""
    return (
        f"DELETE FROM {quote_table(target)} USING {quote_identifier(temp)} "
        f"WHERE {_key_match(target, temp, keys)}"
    )


def lock_table(table: str, dialect: Dialect) -> str | None:
    """Taken first in a load's transaction: concurrent loads of one table queue behind it (so the
    second sees the first's ledger entry) while readers go on. DuckDB has one writer per file."""
    check_dialect(dialect)
    if dialect == "postgres":
        return f"LOCK TABLE {quote_table(table)} IN SHARE ROW EXCLUSIVE MODE"
    if dialect == "redshift":
        return f"LOCK {quote_table(table)}"
    return None


def count_duplicate_keys(table: str, keys: Sequence[str], scope: str | None = None) -> str:
    """How many key values occur in more than one row (in ``scope``, when given)."""
    cols = _column_list(keys)
    where = f" WHERE {scope}" if scope else ""
    return (
        f"SELECT COUNT(*) FROM (SELECT {cols} FROM {quote_table(table)}{where} "
        f"GROUP BY {cols} HAVING COUNT(*) > 1) AS repeated"
    )


# --- the load ledger: which lake version of which partition the warehouse holds ---------------

LEDGER = WAREHOUSE_LEDGER  # a target may not be named so (catalog/models.py)
_LEDGER_COLUMNS = (
    ("warehouse_table", "VARCHAR(255)"),
    ("partition_key", "VARCHAR(32)"),  # '' for a table without partitions
    ("lake_table", "VARCHAR(255)"),
    ("lake_version", "VARCHAR(64)"),
    ("rows_loaded", "BIGINT"),
    ("loaded_at", "VARCHAR(32)"),  # ISO 8601 UTC: one text form on every warehouse
    ("run_id", "VARCHAR(64)"),
)


def ledger_table(table: str) -> str:
    """The ledger lives beside the table it describes (same schema, same privileges)."""
    schema, _ = split_table(table)
    return LEDGER if schema is None else f"{schema}.{LEDGER}"


def create_ledger(table: str) -> str:
    body = ", ".join(f"{quote_identifier(name)} {kind}" for name, kind in _LEDGER_COLUMNS)
    return f"CREATE TABLE IF NOT EXISTS {quote_table(ledger_table(table))} ({body})"


def literal(value: str) -> str:
    """A SQL string literal; quotes are doubled and control characters refused."""
    if not isinstance(value, str) or any(ord(c) < 32 for c in value):
        raise ValueError(f"{value!r} cannot be written as a SQL literal")
    return "'" + value.replace("'", "''") + "'"


def ledger_versions(table: str, partition: str | None) -> str:
    """The lake versions of (table, partition) the warehouse holds."""
    return (
        f"SELECT lake_version FROM {quote_table(ledger_table(table))} "
        f"WHERE warehouse_table = {literal(table)} AND partition_key = {literal(partition or '')}"
    )


def ledger_entry(
    table: str,
    partition: str | None,
    lake_table: str,
    lake_version: str,
    rows: int,
    loaded_at: str,
    run_id: str,
    keep_others: bool = False,
) -> list[str]:
    """Record a load in the ledger, in the load's own transaction. The partition's earlier entries
    are replaced (its rows were), unless ``keep_others`` (an append of a table without
    partitions, where every version's rows stay)."""
    where = f"warehouse_table = {literal(table)} AND partition_key = {literal(partition or '')}"
    values = ", ".join(
        [literal(table), literal(partition or ""), literal(lake_table), literal(lake_version),
         str(int(rows)), literal(loaded_at), literal(run_id)]
    )  # fmt: skip
    names = _column_list([name for name, _ in _LEDGER_COLUMNS])
    insert = f"INSERT INTO {quote_table(ledger_table(table))} ({names}) VALUES ({values})"
    if keep_others:
        return [insert]
    return [f"DELETE FROM {quote_table(ledger_table(table))} WHERE {where}", insert]


def count_rows(table: str, scope: str | None = None) -> str:
    where = f" WHERE {scope}" if scope else ""
    return f"SELECT COUNT(*) FROM {quote_table(table)}{where}"


def count_matched(target: str, temp: str, keys: Sequence[str]) -> str:
    """Target rows a merge will replace (the staged keys are unique)."""
    return (
        f"SELECT COUNT(*) FROM {quote_table(target)} JOIN {quote_identifier(temp)} "
        f"ON {_key_match(target, temp, keys)}"
    )


def copy_from_stdin(temp: str, columns: Sequence[str]) -> str:
    """PostgreSQL ``COPY`` of CSV rows sent by the client into the staging table."""
    return f"COPY {quote_identifier(temp)} ({_column_list(columns)}) FROM STDIN (FORMAT csv)"


def schema_exists(table: str) -> str | None:
    """Counts the table's schema; checked before CREATE SCHEMA, which needs database-level
    CREATE privilege on PostgreSQL even when the schema is already there."""
    schema, _ = split_table(table)
    if schema is None:
        return None
    return f"SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = '{schema}'"


def table_columns(table: str) -> str:
    """The target's column names, in order, from information_schema (all three dialects)."""
    schema, name = split_table(table)
    where_schema = "current_schema()" if schema is None else f"'{schema}'"
    return (
        "SELECT column_name FROM information_schema.columns "
        f"WHERE table_schema = {where_schema} AND table_name = '{name}' "
        "ORDER BY ordinal_position"
    )
