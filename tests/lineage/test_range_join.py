"""Band joins given a bucket key: on real Spark, the rewritten query returns exactly the rows of
the original (as a multiset), at window and bucket edges, before 1970, with NULLs and
duplicates; what cannot be proved the same query is left as written."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from sqlglot import parse_one

from medallion_assets.lineage import range_join
from medallion_assets.lineage.range_join import BUCKET, bucket_band_joins
from medallion_assets.lineage.spark_sql import spark_script

DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def tables(spark):
    """Orders and events of a few customers, one of them hot, from 1969 to 1971: many times
    at exact day boundaries (the buckets' edges) and at the windows' edges; a few numbers
    infinite, NaN or beyond BIGINT's range once divided by the window."""
    rng = random.Random(7)
    epoch = datetime(1970, 1, 1)
    orders, events = [], []
    for i in range(400):
        ts = epoch + timedelta(days=rng.randint(-300, 300), hours=rng.choice([0, 0, 6, 23]))
        customer = 1 if i % 3 else rng.choice([2, 3, None])
        amount = Decimal(rng.randint(-500, 500)) / 10
        odd = [float("inf"), float("-inf"), float("nan"), 1e300, -1e300]  # no overflow, no loss
        y = odd[i % 5] if i % 41 == 0 else rng.random() * 20
        orders.append((i, customer, None if i % 97 == 0 else ts, amount, y))
    for i in range(3_000):
        base = rng.choice(orders)[2] or epoch
        offset = rng.choice(
            [timedelta(0), -DAY, DAY, -DAY / 2, timedelta(hours=-rng.randint(0, 60))]
        )
        ts = None if i % 211 == 0 else base + offset
        events.append((i, rng.choice([1, 1, 1, 2, 3, None]), ts, rng.randint(-60, 60)))
    spark.createDataFrame(
        orders, "order_id int, customer_id int, order_ts timestamp, amount decimal(8,1), y double"
    ).createOrReplaceTempView("band_orders")
    spark.createDataFrame(
        events, "event_id int, customer_id int, event_ts timestamp, x int"
    ).createOrReplaceTempView("band_events")
    return spark


def same_rows(spark, sql: str) -> str:
    """The rewritten SQL, after checking it returns the original's rows."""
    original = parse_one(sql, dialect="spark")
    rewritten = bucket_band_joins(original.copy()).sql("spark")
    assert BUCKET in rewritten, rewritten
    expected = sorted(map(tuple, spark.sql(sql).collect()), key=repr)
    assert sorted(map(tuple, spark.sql(rewritten).collect()), key=repr) == expected
    assert expected, "the case must join some rows"
    return rewritten


@pytest.mark.slow  # Spark
@pytest.mark.parametrize(
    "condition",
    [
        "e.customer_id = o.customer_id AND e.event_ts BETWEEN o.order_ts - INTERVAL 24 HOURS "
        "AND o.order_ts",
        "e.event_ts >= o.order_ts - INTERVAL '1 day 2 hours' AND e.event_ts < o.order_ts "
        "AND e.customer_id = o.customer_id",
        "o.order_ts - INTERVAL 12 HOURS <= e.event_ts "
        "AND e.event_ts <= o.order_ts + INTERVAL 1 DAY",
        "e.x BETWEEN o.amount - 5 AND o.amount + 5 AND o.customer_id = e.customer_id",
        "e.x > o.y - 2.5 AND e.x <= o.y AND e.customer_id = o.customer_id",
        # date_sub gives a date (the day before, at midnight): wider than it reads, still right
        "e.event_ts BETWEEN date_sub(o.order_ts, 1) AND o.order_ts "
        "AND e.customer_id = o.customer_id",
        "e.event_ts BETWEEN timestampadd(HOUR, -30, o.order_ts) AND o.order_ts",
    ],
)
def test_a_band_join_returns_exactly_the_rows_of_the_original(tables, condition):
    same_rows(
        tables,
        "SELECT o.order_id, e.event_id, e.event_ts FROM band_orders AS o "
        f"JOIN band_events AS e ON {condition}",
    )


@pytest.mark.slow  # Spark
def test_bands_behind_outer_joins_grouped_and_two_in_one_select(tables):
    """The demo's shape (a count per order of the events in its last 24 hours), a band after a
    LEFT JOIN, and two bands giving one relation two bucket columns."""
    same_rows(
        tables,
        "SELECT o.order_id, count(e.event_id) AS n, count(DISTINCT e.x) AS d "
        "FROM band_orders AS o JOIN band_events AS e ON e.customer_id = o.customer_id "
        "AND e.event_ts BETWEEN o.order_ts - INTERVAL 24 HOURS AND o.order_ts GROUP BY o.order_id",
    )
    same_rows(
        tables,
        "SELECT o.order_id, p.order_id AS other, e.event_id FROM band_orders AS o "
        "LEFT JOIN band_orders AS p ON p.order_id = o.order_id + 1 "
        "JOIN band_events AS e ON e.event_ts BETWEEN p.order_ts - INTERVAL 6 HOURS AND p.order_ts",
    )
    rewritten = same_rows(
        tables,
        "SELECT o.order_id, e.event_id, f.event_id AS later FROM band_orders AS o "
        "JOIN band_events AS e ON e.customer_id = o.customer_id "
        "AND e.event_ts BETWEEN o.order_ts - INTERVAL 1 DAY AND o.order_ts "
        "JOIN band_events AS f ON f.customer_id = o.customer_id "
        "AND f.event_ts BETWEEN o.order_ts AND o.order_ts + INTERVAL 2 HOURS",
    )
    assert f"{BUCKET}_2" in rewritten


@pytest.mark.slow  # Spark
def test_the_join_is_planned_on_the_bucket(tables):
    """Spark joins on the bucket key (a hash or sort-merge join), not on the customer alone.
    (A sum of values: a join that only counts is not joined at all, ``band_sums.py``.)"""
    query = spark_script(
        "SELECT o.order_id, sum(e.x) AS n FROM band_orders AS o JOIN band_events AS e "
        "ON e.customer_id = o.customer_id AND e.event_ts BETWEEN o.order_ts - INTERVAL 24 HOURS "
        "AND o.order_ts GROUP BY o.order_id",
        "spark",
        "gold.t",
        {},
    ).query
    plan = tables.sql(query)._jdf.queryExecution().executedPlan().toString()
    joins = [line for line in plan.splitlines() if "Join" in line]
    assert joins and all(f"{BUCKET}_1" in line for line in joins), plan


@pytest.mark.parametrize(
    "sql",
    [
        # an outer band join keeps rows the bucket would drop
        "SELECT o.order_id FROM band_orders AS o LEFT JOIN band_events AS e "
        "ON e.event_ts BETWEEN o.order_ts - INTERVAL 1 DAY AND o.order_ts",
        # a star would show the bucket column
        "SELECT * FROM band_orders AS o JOIN band_events AS e "
        "ON e.event_ts BETWEEN o.order_ts - INTERVAL 1 DAY AND o.order_ts",
        "SELECT e.* FROM band_orders AS o JOIN band_events AS e "
        "ON e.event_ts BETWEEN o.order_ts - INTERVAL 1 DAY AND o.order_ts",
        # whose column is event_ts? only Spark knows
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON event_ts BETWEEN o.order_ts - INTERVAL 1 DAY AND o.order_ts",
        # a month has no fixed length; the bounds of two different expressions; no width
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON e.event_ts BETWEEN o.order_ts - INTERVAL 1 MONTH AND o.order_ts",
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON e.x BETWEEN o.amount - 1 AND o.y + 1",
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON e.x BETWEEN o.amount AND o.amount",
        # a value drawn twice (bucket and predicate) could differ between the two
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON e.x BETWEEN o.y * rand() - 1 AND o.y * rand() + 1",
        # one side's own filter
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON e.event_ts BETWEEN e.event_ts - INTERVAL 1 DAY AND e.event_ts",
    ],
)
def test_what_cannot_be_proved_the_same_is_left_as_written(sql):
    query = parse_one(sql, dialect="spark")
    assert bucket_band_joins(query.copy()).sql("spark") == query.sql("spark")


def test_a_rewrite_that_fails_leaves_the_query_as_written(monkeypatch):
    """An optimisation never fails a build: whatever goes wrong inside, Spark gets the SQL."""

    def broken(*_: object) -> None:
        raise TypeError("a bug")

    monkeypatch.setattr(range_join, "_band", broken)
    query = parse_one(
        "SELECT o.order_id FROM band_orders AS o JOIN band_events AS e "
        "ON e.event_ts BETWEEN o.order_ts - INTERVAL 1 DAY AND o.order_ts",
        dialect="spark",
    )
    assert bucket_band_joins(query) is query
