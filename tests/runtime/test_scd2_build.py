"""An ``scd2`` table on real Spark and Iceberg: after every landing of customer exports (new
customers, changes, unchanged re-exports, late versions, a change of an untracked column, a
rollback of the input), its history equals one built by hand from the same exports; a full
refresh keeps the history; a version that cannot be placed is one line naming the table."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from medallion_assets.lake import Lake, Produced
from medallion_assets.runtime.scd2 import UnplacedVersions
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from tests.runtime.small_project import small_project

pytestmark = pytest.mark.slow

FILES = {
    "metadata/sources.yaml": """
sources:
  customers:
    system: s3_raw
    bucket: raw
    prefix: customers/
    format: jsonl
    columns:
      - {name: customer_id, type: bigint, nullable: false}
      - {name: updated_at, type: timestamp}
      - {name: country, type: string}
      - {name: tier, type: string}
      - {name: email, type: string}
""",
    "metadata/datasets.yaml": """
datasets:
  silver.customers_history:
    kind: scd2
    keys: [customer_id]
    updated_at: updated_at
    track: [country, tier]
""",
    "sql/bronze/customers.sql": (
        "SELECT customer_id, updated_at, country, tier, email, _ingested_at, _source_file, "
        "_batch_id FROM raw.customers"
    ),
    # Every export of a customer as it came, the country as ISO spells it.
    "sql/silver/customers_history.sql": """
SELECT customer_id,
    CASE WHEN country = 'UK' THEN 'GB' ELSE country END AS country,
    tier, email, updated_at
FROM bronze.customers
""",
}
SCHEMA = (
    "customer_id bigint, updated_at timestamp, country string, tier string, email string, "
    "_ingested_at timestamp, _source_file string, _batch_id string"
)
TABLE = "silver.customers_history"
START = datetime(2026, 1, 1)


@pytest.fixture
def project(tmp_path: Path):
    return small_project(tmp_path, "history", FILES)


def land(spark, lake: Lake, rows: list[tuple]) -> None:
    """One export object, appended to bronze.customers as ingest appends it."""
    stamped = [(*row, START, f"s3://raw/customers/{id(rows)}.jsonl", "b") for row in rows]
    frame = spark.createDataFrame(stamped, SCHEMA)
    lake.publish(spark, lake.stage(spark, frame, "bronze.customers", Produced("b"), mode="append"))


def build(catalog, lake: Lake, spark, rebuild: bool = False):
    dataset = catalog.datasets[TABLE]
    run = TableRun(catalog=catalog, dataset=dataset, lake=lake, spark=spark, rebuild=rebuild)
    return build_table(run.without_checks())


def by_hand(exports: list[tuple]) -> list[tuple]:
    """The history of ``exports`` (every row ever landed, in landing order), as a person
    would write it down: per customer, the versions in time order, a later landing of the
    same instant replacing the earlier one, a version that changes neither country nor tier
    dropped; each valid until the next one began."""
    versions: dict[int, dict[datetime, tuple]] = {}
    for customer, at, country, tier, email in exports:
        country = "GB" if country == "UK" else country
        versions.setdefault(customer, {})[at] = (customer, country, tier, email, at)
    rows = []
    for customer in sorted(versions):
        kept: list[tuple] = []
        for at in sorted(versions[customer]):
            row = versions[customer][at]
            if kept and kept[-1][1:3] == row[1:3]:
                continue  # no tracked column changed: no new version
            kept.append(row)
        for index, row in enumerate(kept):
            until = kept[index + 1][4] if index + 1 < len(kept) else None
            rows.append((*row, row[4], until, until is None))
    return sorted(rows, key=_order)


def _order(row: tuple) -> list:
    return [(value is None, value) for value in row]


def history(lake: Lake, spark) -> list[tuple]:
    frame = lake.read_current(spark, TABLE)
    assert frame.columns == [
        "customer_id",
        "country",
        "tier",
        "email",
        "updated_at",
        "valid_from",
        "valid_to",
        "is_current",
    ]
    return sorted((tuple(r) for r in frame.collect()), key=_order)


def at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


def test_the_history_follows_changes_reexports_late_versions_and_keeps_what_input_lost(
    spark, project
):
    catalog, lake = project
    exports: list[tuple] = []

    def landing(*rows: tuple) -> str:
        land(spark, lake, list(rows))
        exports.extend(rows)
        outcome = build(catalog, lake, spark)
        assert history(lake, spark) == by_hand(exports), outcome.metadata.get("built")
        return str(outcome.metadata.get("built", outcome.reason))

    first = landing((1, at(1), "DE", "basic", "a@x"), (2, at(1), "UK", "basic", "b@x"))
    assert first.startswith("in full: its first build")
    # The daily export again, nothing changed: no new version (the first stays valid).
    again = landing((1, at(24), "DE", "basic", "a@x"), (2, at(24), "UK", "basic", "b@x"))
    assert again.startswith("merged 2 versions over the keys")
    assert len(history(lake, spark)) == 2
    landing((1, at(48), "FR", "basic", "a@x"), (3, at(48), "US", "gold", "c@x"))  # a move
    landing((1, at(30), "DE", "gold", "a@x"))  # late: lands between 1's versions
    landing((2, at(50), "GB", "basic", "new@x"))  # only the email changed: not tracked
    landing((2, at(60), "DE", "basic", "b@x"), (2, at(70), "GB", "basic", "b@x"))  # and back
    rows = history(lake, spark)
    rows = sorted(rows, key=lambda r: (r[0], r[5]))
    assert [(r[1], r[2], r[5], r[6]) for r in rows if r[0] == 1] == [
        ("DE", "basic", at(1), at(30)),
        ("DE", "gold", at(30), at(48)),
        ("FR", "basic", at(48), None),
    ]
    assert [r[1] for r in rows if r[0] == 2] == ["GB", "DE", "GB"]

    # A full refresh (and so a changed SQL) keeps the versions the table holds.
    refreshed = build(catalog, lake, spark, rebuild=True)
    assert refreshed.metadata["built"] == "in full: a full refresh was asked for"
    assert history(lake, spark) == by_hand(exports)
    # The input rolled back past its last exports: the history keeps what it recorded.
    before = history(lake, spark)
    lake.rollback(spark, "bronze.customers", lake.history("bronze.customers")[1].snapshot_id)
    rolled = build(catalog, lake, spark)
    assert "no longer holds version" in rolled.metadata["built"]
    assert history(lake, spark) == before


@pytest.mark.parametrize("seed", [11])
def test_twenty_random_landings_keep_the_history_a_person_would_write(spark, project, seed):
    catalog, lake = project
    rng = random.Random(seed)
    exports: list[tuple] = []
    seen: dict[int, tuple] = {}
    used: set[tuple[int, datetime]] = set()
    for number in range(20):
        rows = []
        for customer in rng.sample(range(1, 9), rng.randint(1, 4)):
            hour = rng.randint(0, 400)  # late versions as often as new ones
            if (customer, at(hour)) in used:
                continue  # one version per instant: two would be refused (tested below)
            used.add((customer, at(hour)))
            old = seen.get(customer)
            if old is not None and rng.random() < 0.4:
                row = (customer, at(hour), old[2], old[3], old[4])  # a re-export
            else:
                row = (
                    customer,
                    at(hour),
                    rng.choice(["DE", "UK", "GB", "FR", None]),
                    rng.choice(["basic", "gold"]),
                    f"{rng.randint(0, 3)}@x",
                )
            seen[customer] = row
            rows.append(row)
        land(spark, lake, rows)
        exports.extend(rows)
        built = build(catalog, lake, spark)
        assert history(lake, spark) == by_hand(exports), (
            f"seed {seed}, landing {number}: {built.metadata.get('built')}"
        )


def test_versions_that_cannot_be_placed_are_one_line_and_publish_nothing(spark, project):
    catalog, lake = project
    land(spark, lake, [(1, at(1), "DE", "basic", "a@x")])
    build(catalog, lake, spark)
    before = history(lake, spark)
    land(spark, lake, [(1, at(5), "FR", "basic", "a@x"), (1, at(5), "US", "basic", "a@x")])
    with pytest.raises(UnplacedVersions) as clash:
        build(catalog, lake, spark)
    said = str(clash.value)
    assert "\n" not in said
    assert said.startswith(
        "sql/silver/customers_history.sql: silver.customers_history (kind scd2): 1 key(s) have "
        "two different versions at one updated_at (e.g. customer_id=1 at 2026-01-01 05:00:00)"
    ), said
    assert history(lake, spark) == before
    land(spark, lake, [(2, None, "FR", "basic", "b@x")])
    with pytest.raises(UnplacedVersions, match="1 row\\(s\\) have no updated_at"):
        build(catalog, lake, spark, rebuild=True)
    assert history(lake, spark) == before
