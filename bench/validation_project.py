"""The project benchmark F materializes: one 1M-row silver table with a typical set of checks.

``write_project(root)`` writes ``metadata/`` and ``sql/``: two sources (orders, customers), their
bronze tables, and ``silver.orders`` (casts, a derived column, a filter) carrying ten rules, one
of each kind a silver table usually has: row_count, not_null on four columns, unique key,
accepted_values, range, regex, freshness, schema, referential_integrity against
``bronze.customers``, and a SQL assertion. Every rule passes on the generated data, so the
benchmark times the common case (a failing check adds a count and a sample on top).

``publish_inputs(spark, lake, rows)`` fills the bronze tables straight into the lake with Spark
(``spark.range``, seeded expressions, no randomness): ``rows`` orders and ``rows // 10``
customers, with the ingestion columns the bronze layer adds.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

TABLE = "silver.orders"
STATUSES = ("placed", "paid", "shipped", "delivered", "cancelled")

FILES = {
    "metadata/project.yaml": """
        name: validation_bench
        dialect: spark
        owners: [team:bench]
    """,
    "metadata/systems.yaml": """
        systems:
          s3_raw: {kind: s3}
          spark: {kind: spark}
    """,
    "metadata/sources.yaml": """
        sources:
          orders:
            system: s3_raw
            bucket: bench-raw
            prefix: orders/
            format: jsonl
            columns:
              - {name: order_id, type: bigint, nullable: false}
              - {name: customer_id, type: bigint}
              - {name: status, type: string}
              - {name: amount, type: "decimal(18,2)"}
              - {name: currency, type: string}
              - {name: order_ts, type: timestamp}
              - {name: shipped_ts, type: timestamp}
          customers:
            system: s3_raw
            bucket: bench-raw
            prefix: customers/
            format: jsonl
            columns:
              - {name: customer_id, type: bigint, nullable: false}
              - {name: email, type: string}
    """,
    "metadata/datasets.yaml": """
        datasets:
          silver.orders:
            rules:
              - {kind: row_count, min: 1}
              - {kind: not_null, columns: [order_id, customer_id, order_ts, amount]}
              - {kind: unique, columns: [order_id]}
              - {kind: accepted_values, column: status,
                 values: [placed, paid, shipped, delivered, cancelled]}
              - {kind: range, column: amount, min: 0}
              - {kind: regex, column: currency, pattern: '[A-Z]{3}$'}
              - {kind: freshness, column: order_ts, max_age_hours: 1000000}
              - {kind: schema, allow_new_nullable_columns: false}
              - {kind: referential_integrity, columns: [customer_id],
                 to_table: bronze.customers, to_columns: [customer_id]}
              - kind: sql
                name: shipped_after_ordered
                query: "SELECT order_id FROM {table} WHERE shipped_ts < order_ts"
    """,
    "sql/bronze/orders.sql": """
        SELECT order_id, customer_id, status, amount, currency, order_ts, shipped_ts,
               _ingested_at, _source_file, _batch_id
        FROM raw.orders
    """,
    "sql/bronze/customers.sql": """
        SELECT customer_id, email, _ingested_at, _source_file, _batch_id
        FROM raw.customers
    """,
    "sql/silver/orders.sql": """
        SELECT
            o.order_id,
            o.customer_id,
            lower(o.status) AS status,
            CAST(o.amount AS DECIMAL(18, 2)) AS amount,
            upper(o.currency) AS currency,
            o.order_ts,
            o.shipped_ts,
            to_date(o.order_ts) AS order_date,
            o.amount * 0.2 AS tax_amount
        FROM bronze.orders AS o
        WHERE o.status <> 'test'
    """,
}


def write_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def publish_inputs(spark: Any, lake: Any, catalog: Any, rows: int) -> dict[str, int]:
    """Write and publish both bronze tables; returns their row counts."""
    from pyspark.sql import functions as F

    now = time.time()
    ingestion = [
        F.lit(now).cast("timestamp").alias("_ingested_at"),
        F.lit("s3://bench-raw/generated.jsonl").alias("_source_file"),
        F.lit("bench").alias("_batch_id"),
    ]
    customers = rows // 10
    statuses = F.array(*[F.lit(s) for s in STATUSES])
    orders = spark.range(rows).select(
        F.col("id").alias("order_id"),
        (F.col("id") * 7919 % customers).alias("customer_id"),
        F.element_at(statuses, (F.col("id") % len(STATUSES) + 1).cast("int")).alias("status"),
        ((F.col("id") * 37 % 100_000) / 100).cast("decimal(18,2)").alias("amount"),
        F.element_at(
            F.array(F.lit("usd"), F.lit("EUR"), F.lit("gbp")), (F.col("id") % 3 + 1).cast("int")
        ).alias("currency"),
        (F.lit(now - 86_400 * 30) + F.col("id") % 2_592_000).cast("timestamp").alias("order_ts"),
        (F.lit(now - 86_400 * 30) + F.col("id") % 2_592_000 + 3_600)
        .cast("timestamp")
        .alias("shipped_ts"),
        *ingestion,
    )
    people = spark.range(customers).select(
        F.col("id").alias("customer_id"),
        F.concat(F.lit("customer"), F.col("id"), F.lit("@example.com")).alias("email"),
        *ingestion,
    )
    counts = {}
    from medallion_assets.lake import Produced

    for table, frame in (("bronze.orders", orders), ("bronze.customers", people)):
        code = catalog.datasets[table].code_version
        staged = lake.stage(spark, frame, table, Produced(code, {"generated": str(rows)}))
        counts[table] = lake.publish(spark, staged).rows
    return counts
