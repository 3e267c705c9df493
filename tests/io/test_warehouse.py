"""Warehouse loads against the real components: a DuckDB file and a PostgreSQL server started for
the session. Redshift is not reachable here, so its load is checked by the statements it sends."""

from __future__ import annotations

import datetime as dt
import re
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medallion_assets.catalog.models import Target, Throttle
from medallion_assets.credentials import mask_credentials
from medallion_assets.healing.diagnosis import Failure, diagnose
from medallion_assets.io.warehouse import (
    DuckDBWarehouse,
    LoadReport,
    LoadUnit,
    PostgresWarehouse,
    RedshiftWarehouse,
    Warehouse,
    warehouse_from_url,
)
from medallion_assets.io.warehouse_load import MergeKeyError
from medallion_assets.throttles.throttle import SystemThrottle
from tests.io.conftest import fresh_postgres

TABLE = "mart.orders"
ROLE = "arn:aws:iam::123456789012:role/redshift-load"


def orders(*rows: tuple[int, str, str]) -> pa.Table:
    """Rows of (order_id, customer, amount)."""
    return pa.table(
        {
            "order_id": pa.array([r[0] for r in rows], pa.int64()),
            "customer": pa.array([r[1] for r in rows], pa.string()),
            "amount": pa.array([Decimal(r[2]) for r in rows], pa.decimal128(12, 2)),
        }
    )


def target(mode: str = "replace", keys: tuple[str, ...] = (), **extra: object) -> Target:
    return Target(
        table="gold.orders", system="warehouse", warehouse_table=TABLE, mode=mode, keys=keys,
        **extra,
    )  # fmt: skip


def lake_unit(rows: int, version: str | None = None, partition: str | None = None) -> LoadUnit:
    """A lake version of gold.orders (of one day, with ``partition``) holding ``rows`` rows."""
    return LoadUnit(
        "gold.orders",
        version or f"v-{uuid.uuid4().hex[:8]}",
        rows,
        partition,
        "order_date" if partition else None,
    )


def contents(warehouse: Warehouse, table: str = TABLE) -> list[tuple]:
    return sorted(tuple(row.values()) for row in warehouse.read(table).to_pylist())


class RecordingThrottle:
    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def rows(self, n: int) -> None:
        self.calls.append(("rows", n))

    def bytes(self, n: int) -> None:
        self.calls.append(("bytes", n))


# --- modes ------------------------------------------------------------------------------------


def test_replace_leaves_exactly_the_loaded_rows(warehouse):
    warehouse.load(target(), orders((1, "ann", "10.00"), (2, "bob", "20.00"), (3, "cy", "5.00")))
    report = warehouse.load(target(), orders((4, "dee", "1.50"), (5, "eve", "2.25")))

    assert contents(warehouse) == [(4, "dee", Decimal("1.50")), (5, "eve", Decimal("2.25"))]
    assert report == LoadReport(TABLE, "replace", 2, 2, 2, True, report.seconds)


def test_replace_with_no_rows_empties_the_table(warehouse):
    warehouse.load(target(), orders((1, "ann", "10.00")))
    report = warehouse.load(target(), orders())
    assert (report.rows_in_table, report.reconciled, warehouse.row_count(TABLE)) == (0, True, 0)


def test_append_adds_to_the_rows_already_there(warehouse):
    warehouse.load(target("append"), orders((1, "ann", "10.00"), (2, "bob", "20.00")))
    report = warehouse.load(target("append"), orders((3, "cy", "5.00"), (1, "ann", "10.00")))

    assert [row[0] for row in contents(warehouse)] == [1, 1, 2, 3]
    assert (report.rows_staged, report.rows_in_table, report.expected_rows) == (2, 4, 4)
    assert report.reconciled


def test_merge_replaces_rows_with_staged_keys_and_inserts_new_ones(warehouse):
    warehouse.load(target(), orders((1, "ann", "10.00"), (2, "bob", "20.00"), (3, "cy", "5.00")))
    changed = orders((2, "bob", "21.00"), (4, "dee", "7.00"))
    report = warehouse.load(target("merge", ("order_id",)), changed)

    assert contents(warehouse) == [
        (1, "ann", Decimal("10.00")),
        (2, "bob", Decimal("21.00")),
        (3, "cy", Decimal("5.00")),
        (4, "dee", Decimal("7.00")),
    ]
    # Without lake_rows the expectation is: before - replaced + staged = 3 - 1 + 2.
    assert (report.rows_staged, report.rows_in_table, report.expected_rows) == (2, 4, 4)
    assert report.reconciled


def test_merge_twice_leaves_the_same_rows(warehouse):
    lake = orders((1, "ann", "10.00"), (2, "bob", "20.00"))
    merge = target("merge", ("order_id",))
    first = warehouse.load(merge, lake, lake_unit(2))
    once = contents(warehouse)
    second = warehouse.load(merge, lake, lake_unit(2))

    assert contents(warehouse) == once
    assert first.reconciled and second.reconciled and second.rows_in_table == 2


def test_merge_by_composite_keys(warehouse):
    merge = target("merge", ("order_id", "customer"))
    warehouse.load(merge, orders((1, "ann", "1.00"), (1, "bob", "2.00")))
    warehouse.load(merge, orders((1, "bob", "3.00")))
    assert contents(warehouse) == [(1, "ann", Decimal("1.00")), (1, "bob", Decimal("3.00"))]


def test_merge_reconciles_against_the_lake_row_count(warehouse):
    warehouse.load(target(), orders((1, "ann", "10.00"), (2, "bob", "20.00")))
    merge = target("merge", ("order_id",))

    right = warehouse.load(merge, orders((3, "cy", "1.00")), lake_unit(3))
    wrong = warehouse.load(merge, orders((3, "cy", "1.00")), lake_unit(5))

    assert (right.expected_rows, right.rows_in_table, right.reconciled) == (3, 3, True)
    assert (wrong.expected_rows, wrong.rows_in_table, wrong.reconciled) == (5, 3, False)


def test_merge_refuses_null_or_repeated_keys_naming_them_and_retrying_is_not_tried(warehouse):
    merge = target("merge", ("order_id",))
    with pytest.raises(MergeKeyError, match=r"not unique in the data: 1 row.*\(order_id=1\) x2"):
        warehouse.load(merge, orders((1, "ann", "1.00"), (1, "bob", "2.00")))
    nulls = orders((1, "ann", "1.00")).set_column(0, "order_id", pa.array([None], pa.int64()))
    with pytest.raises(MergeKeyError, match="'order_id' is NULL in 1 of 1 row") as null_key:
        warehouse.load(merge, nulls)
    diagnosis = diagnose((), Failure.of(null_key.value))  # the built-in rules: fail at once
    assert (diagnosis.error_code, diagnosis.then) == ("MERGE_KEY_INVALID", "fail")


# --- idempotence: the load ledger -------------------------------------------------------------


def day_orders(day: str, *rows: tuple[int, str]) -> pa.Table:
    """Rows of (order_id, customer) placed on ``day``."""
    return pa.table(
        {
            "order_date": pa.array([dt.date.fromisoformat(day)] * len(rows), pa.date32()),
            "order_id": pa.array([r[0] for r in rows], pa.int64()),
            "customer": pa.array([r[1] for r in rows], pa.string()),
        }
    )


def by_day(warehouse: Warehouse) -> dict[str, list[int]]:
    days: dict[str, list[int]] = {}
    for row in warehouse.read(TABLE).to_pylist():
        days.setdefault(row["order_date"].isoformat(), []).append(row["order_id"])
    return {day: sorted(ids) for day, ids in sorted(days.items())}


@pytest.mark.parametrize("mode", ["replace", "append", "merge"])
def test_loading_a_version_the_warehouse_holds_does_nothing(warehouse, mode):
    keys = ("order_id",) if mode == "merge" else ()
    data = orders((1, "ann", "10.00"), (2, "bob", "20.00"))
    first = warehouse.load(target(mode, keys), data, lake_unit(2, "v1"))
    again = warehouse.load(target(mode, keys), data, lake_unit(2, "v1"))
    held = warehouse.held(target(mode, keys), lake_unit(2, "v1"))

    assert warehouse.row_count(TABLE) == 2
    assert (first.unchanged, first.rows_staged) == (False, 2)
    assert (again.unchanged, again.rows_staged, again.reconciled) == (True, 0, True)
    assert held is not None and held.unchanged and held.rows_in_table == 2
    assert warehouse.held(target(mode, keys), lake_unit(2, "v2")) is None


@pytest.mark.parametrize("mode", ["append", "replace", "merge"])
def test_a_partition_reload_replaces_exactly_that_days_rows(warehouse, mode):
    daily = target(mode, ("order_date", "order_id"))
    day1, day2 = "2026-01-01", "2026-01-02"
    warehouse.load(daily, day_orders(day1, (1, "ann"), (2, "bob")), lake_unit(2, "a", day1))
    warehouse.load(daily, day_orders(day2, (3, "cy")), lake_unit(1, "a", day2))
    # A rerun and a backfill over loaded days: the ledger holds both versions.
    for day, data in ((day1, day_orders(day1, (1, "ann"), (2, "bob"))), (day2, None)):
        unit = lake_unit(2 if day == day1 else 1, "a", day)
        assert warehouse.held(daily, unit) is not None
        if data is not None:
            assert warehouse.load(daily, data, unit).unchanged
    # A new version of day 1 with one row gone and one added.
    report = warehouse.load(
        daily, day_orders(day1, (2, "bob"), (4, "dee")), lake_unit(2, "b", day1)
    )

    assert by_day(warehouse) == {day1: [2, 4], day2: [3]}
    assert (report.partition, report.rows_in_table, report.expected_rows) == (day1, 2, 2)
    assert report.reconciled and report.duplicate_keys == 0


def test_append_without_partitions_appends_each_version_once(warehouse):
    append = target("append", ("order_id",))
    warehouse.load(append, orders((1, "ann", "1.00")), lake_unit(1, "v1"))
    warehouse.load(append, orders((1, "ann", "1.00")), lake_unit(1, "v1"))
    report = warehouse.load(append, orders((2, "bob", "2.00")), lake_unit(1, "v2"))

    assert [r[0] for r in contents(warehouse)] == [1, 2]
    assert (report.expected_rows, report.rows_in_table, report.reconciled) == (2, 2, True)


def test_reconciliation_fails_when_a_key_is_held_twice(warehouse):
    daily = target("append", ("order_date", "order_id"))
    day = "2026-01-01"
    warehouse.load(daily, day_orders(day, (1, "ann")), lake_unit(1, "a", day))
    # Another writer appends the same row behind the loader's back.
    warehouse.session().execute(
        f"INSERT INTO mart.orders (order_date, order_id, customer) VALUES (DATE '{day}', 1, 'x')"
    )
    report = warehouse.held(daily, lake_unit(1, "a", day))

    assert report is not None
    assert (report.rows_in_table, report.duplicate_keys, report.reconciled) == (2, 1, False)


def test_a_partition_load_needs_its_column_in_the_data(warehouse):
    with pytest.raises(ValueError, match="partition column 'order_date' is not a column"):
        warehouse.load(target("append"), orders((1, "a", "1.00")), lake_unit(1, "a", "2026-01-01"))
    assert warehouse.held(target("append"), lake_unit(1, "a", "2026-01-01")) is None


def test_concurrent_loads_of_one_version_load_it_once(postgres_server):
    fresh_postgres(postgres_server.dsn).close()
    daily = target("append", ("order_date", "order_id"))
    day = "2026-01-01"
    data = day_orders(day, *[(i, f"c{i}") for i in range(2_000)])
    barrier = threading.Barrier(4)

    def load() -> LoadReport:
        warehouse = PostgresWarehouse(postgres_server.dsn)
        try:
            barrier.wait()
            return warehouse.load(daily, data, lake_unit(2_000, "v1", day))
        finally:
            warehouse.close()

    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda _: load(), range(4)))
    check = PostgresWarehouse(postgres_server.dsn)

    assert check.row_count(TABLE) == 2_000
    assert sorted(r.unchanged for r in reports) == [False, True, True, True]
    assert all(r.reconciled for r in reports)
    check.close()


# --- tables and types -------------------------------------------------------------------------

EVERY_TYPE = pa.table(
    {
        "id": pa.array([1, 2], pa.int64()),
        "qty": pa.array([3, None], pa.int32()),
        "ratio": pa.array([0.25, -1e300], pa.float64()),
        "price": pa.array([Decimal("12.34"), Decimal("-0.01")], pa.decimal128(12, 2)),
        "note": pa.array(['comma, "quote"\nnewline', ""], pa.string()),
        "name": pa.array(["Zoë ✓", None], pa.string()),
        "paid": pa.array([True, None], pa.bool_()),
        "day": pa.array([dt.date(2024, 2, 29), None], pa.date32()),
        "at": pa.array([dt.datetime(2024, 5, 1, 12, 30, 1, 123456), None], pa.timestamp("us")),
        "tags": pa.array([["a", "b"], None], pa.list_(pa.string())),
        "address": pa.array([{"city": "Oslo", "zip": 150}, None]),
    }
)
POSTGRES_TYPES = {
    "id": "bigint", "qty": "integer", "ratio": "double precision", "price": "numeric(12,2)",
    "note": "character varying", "name": "character varying", "paid": "boolean", "day": "date",
    "at": "timestamp without time zone", "tags": "character varying",
    "address": "character varying",
}  # fmt: skip
DUCKDB_TYPES = {
    "id": "BIGINT", "qty": "INTEGER", "ratio": "DOUBLE", "price": "DECIMAL(12,2)",
    "note": "VARCHAR", "name": "VARCHAR", "paid": "BOOLEAN", "day": "DATE", "at": "TIMESTAMP",
    "tags": "VARCHAR", "address": "VARCHAR",
}  # fmt: skip


def column_types(warehouse: Warehouse) -> dict[str, str]:
    type_sql = (
        "CASE WHEN data_type = 'numeric' THEN 'numeric(' || numeric_precision || ',' "
        "|| numeric_scale || ')' ELSE data_type END"
        if warehouse.kind == "postgres"
        else "data_type"
    )
    rows = warehouse.session().fetch(
        f"SELECT column_name, {type_sql} FROM information_schema.columns "
        "WHERE table_schema = 'mart' AND table_name = 'orders' ORDER BY ordinal_position"
    )
    return dict(rows)


def test_missing_schema_and_table_are_created_with_types_from_arrow(warehouse):
    report = warehouse.load(target(), EVERY_TYPE)

    expected = POSTGRES_TYPES if warehouse.kind == "postgres" else DUCKDB_TYPES
    assert column_types(warehouse) == expected
    assert report.rows_in_table == 2


def test_values_survive_the_load(warehouse):
    warehouse.load(target(), EVERY_TYPE)
    rows = sorted(warehouse.read(TABLE).to_pylist(), key=lambda row: row["id"])

    assert rows[0] == {
        "id": 1, "qty": 3, "ratio": 0.25, "price": Decimal("12.34"),
        "note": 'comma, "quote"\nnewline', "name": "Zoë ✓", "paid": True,
        "day": dt.date(2024, 2, 29), "at": dt.datetime(2024, 5, 1, 12, 30, 1, 123456),
        "tags": '["a", "b"]', "address": '{"city": "Oslo", "zip": 150}',
    }  # fmt: skip
    # The empty string stays a string, and NULL stays NULL.
    assert rows[1]["note"] == "" and rows[1]["name"] is None and rows[1]["tags"] is None
    assert rows[1]["ratio"] == -1e300


def test_existing_table_without_a_data_column_is_a_clear_error(warehouse):
    warehouse.load(target(), orders((1, "ann", "1.00")))
    wider = orders((2, "bob", "2.00")).append_column("region", pa.array(["eu"]))
    with pytest.raises(ValueError, match=r"mart.orders has no column\(s\) region.*ALTER TABLE"):
        warehouse.load(target(), wider)
    assert contents(warehouse) == [(1, "ann", Decimal("1.00"))]


def test_unsafe_names_are_rejected_before_anything_is_created(warehouse):
    bad = pa.table({"order_id": [1], "Customer Name": ["ann"]})
    with pytest.raises(ValueError, match="'Customer Name' is not a safe warehouse identifier"):
        warehouse.load(target(), bad)
    assert warehouse.session().fetch(
        "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'mart'"
    ) == [(0,)]
    for name in ("mart.orders; DROP TABLE x", "Mart.Orders", 'mart."orders"'):
        with pytest.raises(ValueError, match="not a safe warehouse table name"):
            warehouse.row_count(name)
        with pytest.raises(ValueError, match="not a safe warehouse table name"):
            warehouse.read(name)


# --- failures and reconciliation --------------------------------------------------------------


def test_failure_after_staging_rolls_back_and_keeps_the_previous_rows(warehouse, monkeypatch):
    warehouse.load(target(), orders((1, "ann", "10.00"), (2, "bob", "20.00")))
    session = warehouse.session()
    run = session.execute

    def fail_on_insert(statement: str) -> None:
        run(statement)  # the DELETE of the replace has run inside the transaction by now
        if statement.startswith("DELETE FROM"):
            raise RuntimeError("connection lost mid-load")

    monkeypatch.setattr(session, "execute", fail_on_insert)
    with pytest.raises(RuntimeError, match="connection lost mid-load"):
        warehouse.load(target(), orders((9, "zed", "1.00")))
    monkeypatch.undo()

    assert contents(warehouse) == [(1, "ann", Decimal("10.00")), (2, "bob", Decimal("20.00"))]
    assert warehouse.load(target(), orders((9, "zed", "1.00"))).reconciled  # session still usable


def test_rejected_rows_roll_back_the_whole_replace(warehouse):
    # The warehouse itself refuses a row after the DELETE has run: a real failure, no injection.
    warehouse.session().execute("CREATE SCHEMA mart")
    warehouse.session().execute(
        "CREATE TABLE mart.orders (order_id BIGINT, customer VARCHAR, "
        "amount DECIMAL(12,2) CHECK (amount >= 0))"
    )
    warehouse.load(target(), orders((1, "ann", "10.00")))

    with pytest.raises(Exception, match=r"(?i)check"):
        warehouse.load(target(), orders((2, "bob", "5.00"), (3, "cy", "-1.00")))

    assert contents(warehouse) == [(1, "ann", Decimal("10.00"))]


def test_reconciliation_flags_rows_deleted_behind_the_load(postgres_server):
    # Another writer deleting rows is simulated by a trigger that fires inside the load.
    warehouse = fresh_postgres(postgres_server.dsn)
    warehouse.load(target(), orders((1, "ann", "10.00")))
    warehouse.session().execute(
        "CREATE FUNCTION mart.lose_a_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "DELETE FROM mart.orders WHERE order_id = (SELECT min(order_id) FROM mart.orders); "
        "RETURN NULL; END $$"
    )
    warehouse.session().execute(
        "CREATE TRIGGER lose_a_row AFTER INSERT ON mart.orders "
        "FOR EACH STATEMENT EXECUTE FUNCTION mart.lose_a_row()"
    )

    report = warehouse.load(target(), orders((1, "ann", "10.00"), (2, "bob", "20.00")))
    warehouse.close()

    assert (report.expected_rows, report.rows_in_table, report.reconciled) == (2, 1, False)


# --- throttling -------------------------------------------------------------------------------


def test_throttle_is_taken_before_each_batch(warehouse):
    warehouse.batch_rows = 2
    throttle = RecordingThrottle()
    rows = [(i, f"c{i}", "1.00") for i in range(5)]

    warehouse.load(target(), orders(*rows), throttle=throttle)

    assert [n for kind, n in throttle.calls if kind == "rows"] == [2, 2, 1]
    byte_calls = [n for kind, n in throttle.calls if kind == "bytes"]
    assert len(byte_calls) == 3 and all(n > 0 for n in byte_calls)
    assert warehouse.row_count(TABLE) == 5


def test_a_system_throttle_paces_the_staging(warehouse):
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttle = SystemThrottle(
        "warehouse", Throttle(rows_per_second=2), clock=lambda: now[0], sleep=sleep
    )
    warehouse.batch_rows = 2
    warehouse.load(target(), orders(*[(i, "c", "1.00") for i in range(6)]), throttle=throttle)

    # A burst of 2 rows passes at once; each later batch of 2 waits one second at 2 rows/s.
    assert slept == [1.0, 1.0]
    assert throttle.usage().rows == 6


# --- URLs and credentials ---------------------------------------------------------------------


def test_urls_pick_the_warehouse(tmp_path, postgres_server):
    duck = warehouse_from_url(f"duckdb://{tmp_path}/wh.duckdb")
    assert isinstance(duck, DuckDBWarehouse) and duck.path == f"{tmp_path}/wh.duckdb"
    for scheme in ("postgresql", "postgres"):
        dsn = postgres_server.dsn.replace("postgresql", scheme, 1)
        with warehouse_from_url(dsn) as postgres:
            assert postgres.kind == "postgres" and postgres.row_count("pg_catalog.pg_am") > 0
    assert isinstance(duck, Warehouse)


def test_redshift_url_carries_staging_and_role_and_hides_the_password():
    url = (
        "redshift://loader:s3cr%40t@cluster.example.com:5439/analytics"
        f"?s3_staging=s3://staging/loads&iam_role={ROLE}"
    )
    redshift = warehouse_from_url(url, put=lambda *_: None)

    assert isinstance(redshift, RedshiftWarehouse) and redshift.kind == "redshift"
    assert redshift._params == {
        "host": "cluster.example.com", "port": 5439, "database": "analytics",
        "user": "loader", "password": "s3cr@t",
    }  # fmt: skip
    assert (redshift.s3_staging_uri, redshift.iam_role) == ("s3://staging/loads", ROLE)
    assert "s3cr" not in repr(redshift)
    with pytest.raises(ValueError, match="missing: iam_role") as error:
        warehouse_from_url("redshift://loader:s3cret@host/db?s3_staging=s3://staging/x")
    assert "s3cret" not in str(error.value)


def test_unknown_schemes_are_refused_without_echoing_credentials():
    with pytest.raises(ValueError, match="unsupported warehouse URL scheme 'mysql'") as error:
        warehouse_from_url("mysql://root:hunter2@db/x")
    assert "hunter2" not in str(error.value)


def test_connection_errors_do_not_show_the_password():
    warehouse = PostgresWarehouse("postgresql://loader:hunter2@127.0.0.1:1/analytics")
    assert "hunter2" not in repr(warehouse)
    with pytest.raises(ConnectionError, match="cannot connect to") as error:
        warehouse.row_count(TABLE)
    assert "hunter2" not in str(error.value)


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://u:hunter2@h:5432/db",
        "postgresql://u:hun@ter2@h/db",
        "host=h user=u password=hunter2 dbname=db",
        "postgresql://u@h/db?sslmode=require&password=hunter2",
    ],
)
def test_mask_credentials(text):
    assert "hunter2" not in mask_credentials(text) and "ter2" not in mask_credentials(text)


# --- Redshift, by the statements it sends -----------------------------------------------------


class RecordingRedshift:
    """Stands in for a redshift_connector connection. No Redshift is reachable from the tests, so
    this is the one place a fake is right: it records the SQL (the same builders PostgreSQL and
    DuckDB run for real above) and answers catalog and count queries with fixed rows."""

    def __init__(self, existing_columns=(), count=3, fail_on=None):
        self.statements: list[str] = []
        self.existing_columns = list(existing_columns)
        self.count, self.fail_on = count, fail_on
        self.autocommit = False

    def cursor(self):
        return _RecordingCursor(self)

    def close(self):
        pass


class _RecordingCursor:
    def __init__(self, connection):
        self.connection, self.rows, self.description = connection, [], None

    def execute(self, statement):
        self.connection.statements.append(statement)
        if self.connection.fail_on and statement.startswith(self.connection.fail_on):
            raise RuntimeError(f"Redshift refused: {statement[:20]}")
        if "information_schema.columns" in statement:
            self.rows = [(c,) for c in self.connection.existing_columns]
        elif "information_schema.schemata" in statement:
            self.rows = [(0,)]
        elif "HAVING COUNT(*) > 1" in statement:
            self.rows = [(0,)]  # no repeated keys
        elif statement.startswith("SELECT COUNT(*)"):
            self.rows = [(self.connection.count,)]
        self.description = [("column",)]

    def fetchall(self):
        return self.rows

    def close(self):
        pass


def redshift(connection, puts, batch_rows=2):
    return RedshiftWarehouse(
        {"host": "cluster.example.com"}, s3_staging_uri="s3://staging/loads/", iam_role=ROLE,
        put=lambda bucket, key, body: puts.append((bucket, key, body)),
        connection=connection, batch_rows=batch_rows,
    )  # fmt: skip


def test_redshift_replace_stages_parquet_then_copies_and_swaps_in_one_transaction():
    connection, puts = RecordingRedshift(), []
    data = orders((1, "ann", "10.00"), (2, "bob", "20.00"), (3, "cy", "5.00"))
    report = redshift(connection, puts).load(
        target(dist_key="customer", sort_keys=("order_id",)), data, lake_unit(3, "v1")
    )

    temp = re.search(r'CREATE TEMP TABLE "(\w+)"', "\n".join(connection.statements)).group(1)
    cols = '"order_id", "customer", "amount"'
    ledger_columns = (
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'mart' "
        "AND table_name = 'medallion_loads' ORDER BY ordinal_position"
    )
    statements = connection.statements
    assert statements[:6] == [
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'mart' "
        "AND table_name = 'orders' ORDER BY ordinal_position",
        "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'mart'",
        'CREATE SCHEMA IF NOT EXISTS "mart"',
        'CREATE TABLE IF NOT EXISTS "mart"."orders" ("order_id" BIGINT, '
        '"customer" VARCHAR(65535), "amount" DECIMAL(12,2)) DISTKEY("customer") '
        'SORTKEY("order_id")',
        'CREATE TABLE IF NOT EXISTS "mart"."medallion_loads" ("warehouse_table" VARCHAR(255), '
        '"partition_key" VARCHAR(32), "lake_table" VARCHAR(255), "lake_version" VARCHAR(64), '
        '"rows_loaded" BIGINT, "loaded_at" VARCHAR(32), "run_id" VARCHAR(64))',
        ledger_columns,  # does the ledger hold this version already? (it is new: no)
    ]
    assert statements[6:13] == [
        f'CREATE TEMP TABLE "{temp}" DISTKEY("customer") AS SELECT {cols} '
        'FROM "mart"."orders" WHERE 1 = 0',
        f"COPY \"{temp}\" FROM 's3://staging/loads/{temp}/' IAM_ROLE '{ROLE}' FORMAT AS PARQUET",
        "BEGIN",
        'LOCK "mart"."orders"',
        ledger_columns,  # asked again under the lock: a concurrent load may have won
        'DELETE FROM "mart"."orders"',
        f'INSERT INTO "mart"."orders" ({cols}) SELECT {cols} FROM "{temp}"',
    ]
    assert statements[13] == (
        'DELETE FROM "mart"."medallion_loads" WHERE warehouse_table = \'mart.orders\' '
        "AND partition_key = ''"
    )
    assert re.fullmatch(
        r'INSERT INTO "mart"."medallion_loads" \(.*\) VALUES '
        r"\('mart.orders', '', 'gold.orders', 'v1', 3, '[0-9T:Z-]+', ''\)",
        statements[14],
    )
    assert statements[15:] == [
        "COMMIT",
        f'DROP TABLE IF EXISTS "{temp}"',
        'SELECT COUNT(*) FROM "mart"."orders"',
    ]
    assert connection.autocommit is True  # BEGIN/COMMIT above are the only transaction
    assert [(bucket, key) for bucket, key, _ in puts] == [
        ("staging", f"loads/{temp}/part-00000.parquet"),
        ("staging", f"loads/{temp}/part-00001.parquet"),
    ]
    staged = pa.concat_tables(pq.read_table(pa.BufferReader(body)) for _, _, body in puts)
    assert staged.equals(data)
    assert report.reconciled


def test_redshift_merge_counts_inside_the_transaction_and_serializes_nested_columns():
    connection = RecordingRedshift(existing_columns=["order_id", "customer", "amount", "tags"])
    data = orders((1, "ann", "10.00")).append_column("tags", pa.array([["vip"]]))
    redshift(connection, []).load(target("merge", ("order_id",)), data)

    statements = connection.statements
    assert not any(s.startswith('CREATE TABLE IF NOT EXISTS "mart"."orders"') for s in statements)
    copy = next(s for s in statements if s.startswith("COPY"))
    assert copy.endswith("FORMAT AS PARQUET SERIALIZETOJSON")
    temp = re.search(r'CREATE TEMP TABLE "(\w+)"', "\n".join(statements)).group(1)
    cols = '"order_id", "customer", "amount", "tags"'
    begin, commit = statements.index("BEGIN"), statements.index("COMMIT")
    # Rows that come from no lake version: the expected count is before - matched + staged.
    assert statements[begin + 4 : begin + 8] == [
        'SELECT COUNT(*) FROM "mart"."orders"',
        f'SELECT COUNT(*) FROM "mart"."orders" JOIN "{temp}" '
        f'ON "orders"."order_id" = "{temp}"."order_id"',
        f'DELETE FROM "mart"."orders" USING "{temp}" '
        f'WHERE "orders"."order_id" = "{temp}"."order_id"',
        f'INSERT INTO "mart"."orders" ({cols}) SELECT {cols} FROM "{temp}"',
    ]
    assert statements[commit + 1 :] == [
        f'DROP TABLE IF EXISTS "{temp}"',
        'SELECT COUNT(*) FROM "mart"."orders"',
        'SELECT COUNT(*) FROM (SELECT "order_id" FROM "mart"."orders" '
        'GROUP BY "order_id" HAVING COUNT(*) > 1) AS repeated',
    ]


def test_redshift_failure_rolls_back_and_never_commits():
    connection = RecordingRedshift(existing_columns=["order_id", "customer", "amount"])
    connection.fail_on = "INSERT INTO"
    with pytest.raises(RuntimeError, match="Redshift refused"):
        redshift(connection, []).load(target(), orders((1, "ann", "1.00")))

    tail = [s.split(" ")[0] for s in connection.statements[-4:]]
    assert tail == ["DELETE", "INSERT", "ROLLBACK", "DROP"]
    assert "COMMIT" not in connection.statements


def test_redshift_without_the_driver_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "redshift_connector", None)
    warehouse = RedshiftWarehouse(
        {"host": "h", "password": "hunter2"}, s3_staging_uri="s3://staging/x", iam_role=ROLE
    )
    assert "hunter2" not in repr(warehouse)
    with pytest.raises(ImportError, match="pip install redshift_connector"):
        warehouse.row_count(TABLE)


def test_redshift_refuses_a_bad_staging_uri_or_role_up_front():
    with pytest.raises(ValueError, match="IAM role ARN"):
        RedshiftWarehouse({}, s3_staging_uri="s3://staging/x", iam_role="admin")
    with pytest.raises(ValueError, match="safe s3:// URI"):
        RedshiftWarehouse({}, s3_staging_uri="s3://staging/x'y", iam_role=ROLE)
