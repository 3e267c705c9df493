"""A table's ``kind`` at load: honoured (the dataset carries what a run reads incrementally) or
refused before any Spark starts, naming the SQL file's line or datasets.yaml's and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.catalog import CatalogError, load_catalog
from medallion_assets.lineage.incremental import Incremental
from tests.conftest import copy_demo_project

KIND_FIELDS = ("    kind:", "    keys:", "    driving:")


def with_settings(project: Path, table: str, *lines: str) -> Path:
    """``project`` with ``table``'s kind, keys and driving in datasets.yaml replaced by
    ``lines``."""
    path = project / "metadata" / "datasets.yaml"
    old = path.read_text().splitlines(keepends=True)
    head = old.index(f"  {table}:\n")
    block = head + 1
    while block < len(old) and old[block].startswith("    "):
        block += 1
    kept = [line for line in old[head + 1 : block] if not line.startswith(KIND_FIELDS)]
    added = [f"    {line}\n" for line in lines]
    path.write_text("".join(old[: head + 1] + added + kept + old[block:]))
    return project


def issues(project: Path) -> list[str]:
    with pytest.raises(CatalogError) as failed:
        load_catalog(project, use_cache=False)
    return [str(issue) for issue in failed.value.issues]


def test_the_kinds_the_demo_declares_are_what_its_runs_read(demo_project: Path):
    catalog = load_catalog(demo_project, use_cache=False)
    orders, items = catalog.datasets["silver.orders_usd"], catalog.datasets["silver.order_items"]
    fx = (("bronze.fx_rates", (("currency", "currency"), ("order_date", "rate_date"))),)
    by_order = (("order_id", "order_id"),)
    assert orders.incremental == Incremental("merge", "bronze.orders", by_order, fx)
    # line_number is computed: it tells an order's lines apart; the order id picks the rows
    assert items.incremental == Incremental("merge", "bronze.orders", (("order_id", "order_id"),))
    # orders read again for their clickstream window, joined back on order_id
    # and its payments, grouped by order_id, joined on it, the clickstream, users and
    # addresses on the order's customer_id: their changes are merged too
    fraud = catalog.datasets["gold.fraud_features"].incremental
    by_customer = (("customer_id", "customer_id"),)
    keyed = (
        ("silver.addresses_validated", by_customer),
        ("silver.payments", by_order),
        ("silver.user_events", by_customer),
        ("silver.users_masked", by_customer),
    )
    assert fraud == Incremental("merge", "silver.orders_usd", by_order, keyed)
    assert catalog.datasets["gold.product_sales"].incremental is None  # kind full, the default


def test_a_kind_the_sql_cannot_honour_names_the_sql_file_and_line(demo_project: Path):
    with_settings(demo_project, "silver.orders_usd", "kind: append")
    (found,) = issues(demo_project)
    assert "name the driving input: driving: one of bronze.fx_rates, bronze.orders" in found
    project = with_settings(
        copy_demo_project(demo_project.parent / "second"),
        "silver.orders_usd",
        "kind: append",
        "driving: bronze.orders",
    )
    (found,) = issues(project)
    # the latest version per order: a window over the driving rows, on line 14 of the file
    assert found.startswith("sql/silver/orders_usd.sql:14: silver.orders_usd: kind append: ")
    assert "window function (row_number" in found


def test_merge_keys_not_in_the_driving_rows_grouping_are_refused(demo_project: Path):
    with_settings(demo_project, "silver.orders_usd", "kind: merge", "keys: [customer_id]")
    (found,) = issues(demo_project)
    assert found.startswith("sql/silver/orders_usd.sql:14: silver.orders_usd: kind merge: ")
    assert "does not hold the key customer_id" in found


@pytest.mark.parametrize(
    ("table", "lines", "says"),
    [
        ("silver.orders_usd", ["kind: merge"], "kind merge needs keys"),
        ("silver.orders_usd", ["keys: [order_id]"], "keys apply to kind merge"),
        ("silver.orders_usd", ["kind: upsert"], "'full', 'append', 'merge' or 'scd2'"),
        ("silver.orders_usd", ["driving: bronze.orders"], "driving applies to an incremental"),
        ("silver.orders_usd", ["kind: scd2", "keys: [order_id]"], "kind scd2 needs updated_at"),
        ("silver.orders_usd", ["updated_at: order_ts"], "updated_at and track apply to kind scd2"),
    ],
)
def test_settings_that_contradict_each_other_name_datasets_yaml(
    demo_project: Path, table: str, lines: list[str], says: str
):
    (found,) = issues(with_settings(demo_project, table, *lines))
    assert found.startswith("metadata/datasets.yaml:"), found
    assert says in found


def test_a_driving_input_must_be_read_and_not_daily_unless_the_table_is(demo_project: Path):
    with_settings(
        demo_project, "silver.orders_usd", "kind: merge", "keys: [order_id]", "driving: gold.x"
    )
    (found,) = issues(demo_project)
    assert "driving gold.x is not an input of it (bronze.fx_rates, bronze.orders)" in found
    project = copy_demo_project(demo_project.parent / "third")
    sql = project / "sql" / "gold" / "event_copies.sql"
    sql.write_text("SELECT event_id, event_type FROM silver.user_events\n")
    (project / "metadata" / "datasets.yaml").write_text(
        (project / "metadata" / "datasets.yaml").read_text()
        + "\n  gold.event_copies: {kind: append}\n"
    )
    (found,) = issues(project)
    assert found.startswith("metadata/datasets.yaml:")
    assert "its driving input silver.user_events is partitioned daily" in found


def test_bronze_tables_take_no_kind(demo_project: Path):
    (found,) = issues(with_settings(demo_project, "bronze.orders", "kind: append"))
    assert "bronze tables already take only the raw objects that are new" in found


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (["updated_at: changed_at"], "updated_at changed_at is not a column of its SQL's output"),
        (["updated_at: order_ts", "track: [sttus]"], "track sttus: not a column of its SQL's"),
        (["updated_at: order_id"], "order_id is a key: a key identifies the row"),
        (["updated_at: order_ts", "track: [order_id]"], "order_id is a key"),
    ],
)
def test_scd2_columns_must_be_the_sqls_own_and_not_keys(
    demo_project: Path, lines: list[str], says: str
):
    with_settings(demo_project, "silver.orders_usd", "kind: scd2", "keys: [order_id]", *lines)
    (found,) = issues(demo_project)
    assert found.startswith("metadata/datasets.yaml:"), found
    assert says in found, found


def test_an_scd2_table_offers_its_history_columns_to_the_sql_that_reads_it(demo_project: Path):
    with_settings(
        demo_project, "silver.orders_usd", "kind: scd2", "keys: [order_id]", "updated_at: order_ts"
    )
    (demo_project / "sql" / "gold" / "order_spans.sql").write_text(
        "SELECT order_id, valid_from, valid_to FROM silver.orders_usd WHERE is_current\n"
    )
    catalog = load_catalog(demo_project)
    history = {c.column: c for c in catalog.datasets["silver.orders_usd"].columns}
    assert history["valid_from"].sources == history["order_ts"].sources
    both = set(history["order_ts"].sources) | set(history["order_id"].sources)
    assert set(history["valid_to"].sources) == set(history["is_current"].sources) == both
    assert history["is_current"].type == "boolean"
    spans = {c.column: c.sources for c in catalog.datasets["gold.order_spans"].columns}
    assert spans["valid_to"] == ("silver.orders_usd.valid_to",)


def test_an_scd2_sql_may_not_make_a_column_the_history_adds(demo_project: Path):
    sql = demo_project / "sql" / "silver" / "orders_usd.sql"
    sql.write_text(sql.read_text().replace("    o.promo_code,", "    o.promo_code AS is_current,"))
    with_settings(
        demo_project, "silver.orders_usd", "kind: scd2", "keys: [order_id]", "updated_at: order_ts"
    )
    found = issues(demo_project)
    assert any("its SQL's output has is_current, which the history adds" in f for f in found)
    # The renamed column is gone for what reads it, which says so too.
    assert any(
        "fraud_features.sql:10: sql: column 9: promo_code: silver.orders_usd has no" in f
        for f in found
    )
