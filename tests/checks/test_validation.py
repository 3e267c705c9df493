"""Every rule kind on a real Spark DataFrame: a passing case and a failing case, with the failing
row count, the total and the samples asserted. Row rules are judged by pandera on Spark."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from medallion_assets.catalog import load_catalog
from medallion_assets.catalog.rules import ReconciliationRule, Rule
from medallion_assets.checks.results import MASKED, CheckContext
from medallion_assets.checks.table_rules import reconciliation_result
from medallion_assets.checks.validation import reused_validation, validate_frame
from medallion_assets.control.check_results import CheckLedger
from medallion_assets.control.store import ControlStore
from medallion_assets.lake import Lake
from medallion_assets.lake.versions import Version
from tests.lake_helpers import publish_frame

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC).timestamp()

pytestmark = pytest.mark.slow


def rule(**fields) -> Rule:
    return TypeAdapter(Rule).validate_python(fields)


@pytest.fixture(scope="module")
def env(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("validation") / "project"
    shutil.copytree(MINIMAL, root)
    catalog = load_catalog(root, use_cache=False)
    lake = Lake.local(root / "lake")
    return catalog, lake


def orders(spark, rows):
    frame = spark.createDataFrame(rows, "order_id bigint, amount int, country string, email string")
    return frame.withColumn("amount", frame["amount"].cast("decimal(18,2)"))


def check(spark, env, frame, the_rule, table="silver.orders_clean", **context):
    catalog, lake = env
    dataset = catalog.datasets[table]
    pii = context.pop("pii", ())
    if pii:
        settings = dataset.settings.model_copy(update={"pii_columns": tuple(pii)})
        dataset = dataclasses.replace(dataset, settings=settings)
    ctx = CheckContext(lambda: spark, lake, catalog, dataset, now=NOW, **context)
    (result,) = validate_frame(frame, ctx, [the_rule]).results
    return result


GOOD = [(1, 10, "DE", "a@x.com"), (2, 20, "FR", "b@x.com"), (3, None, None, None)]


def test_row_count(spark, env):
    frame = orders(spark, GOOD)
    ok = check(spark, env, frame, rule(kind="row_count", min=1, max=3))
    assert (ok.passed, ok.failing_rows, ok.total_rows) == (True, 0, 3)
    bad = check(spark, env, frame, rule(kind="row_count", min=4))
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 3, 3)
    assert "outside [4, -]" in bad.message


def test_not_null_counts_rows_with_any_null_and_nulls_per_column(spark, env):
    frame = orders(spark, [*GOOD, (None, 5, "GB", "c@x.com")])
    ok = check(spark, env, orders(spark, GOOD[:2]), rule(kind="not_null", columns=["order_id"]))
    assert ok.passed and ok.engine == "pandera" and ok.failing_rows == 0
    bad = check(spark, env, frame, rule(kind="not_null", columns=["order_id", "country"]))
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 2, 4)
    assert bad.details["nulls_by_column"] == {"order_id": 1, "country": 1}
    assert len(bad.samples) == 2
    # Several columns are judged by one pandera table-level check (one scan, not one each).
    assert "not_null(order_id, country)" in bad.details["pandera"][0]
    both = rule(kind="not_null", columns=["order_id", "amount"])
    assert check(spark, env, orders(spark, GOOD[:2]), both).passed


def test_unique_on_one_and_on_several_columns(spark, env):
    rows = [(1, 10, "DE", None), (1, 10, "FR", None), (2, 20, "DE", None), (2, 30, "DE", None)]
    frame = orders(spark, rows)
    one = check(spark, env, frame, rule(kind="unique", columns=["order_id"]))
    assert (one.passed, one.failing_rows, one.details["duplicate_keys"]) == (False, 4, 2)
    two = check(spark, env, frame, rule(kind="unique", columns=["order_id", "country"]))
    assert (two.passed, two.failing_rows, two.details["duplicate_keys"]) == (False, 2, 1)
    three = check(spark, env, frame, rule(kind="unique", columns=["order_id", "country", "amount"]))
    assert three.passed and three.failing_rows == 0


def test_accepted_values_ignores_nulls_and_names_the_unexpected_values(spark, env):
    values = ["DE", "FR", "GB"]
    ok = check(
        spark,
        env,
        orders(spark, GOOD),
        rule(kind="accepted_values", column="country", values=values),
    )
    assert ok.passed
    frame = orders(spark, [*GOOD, (4, 1, "UK", "d@x.com"), (5, 1, "UK", "e@x.com")])
    bad = check(
        spark,
        env,
        frame,
        rule(kind="accepted_values", column="country", values=values),
        pii=["email"],
    )
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 2, 5)
    assert bad.details["unexpected_values"] == ["UK"] and "'UK'" in bad.message
    # Samples show the failing rows with the PII column masked.
    assert {s["order_id"] for s in bad.samples} == {4, 5}
    assert all(s["email"] == MASKED and s["country"] == "UK" for s in bad.samples)
    # A PII column's own unexpected values are not shown either.
    on_pii = check(
        spark,
        env,
        frame,
        rule(kind="accepted_values", column="email", values=["a@x.com"]),
        pii=["email"],
    )
    assert on_pii.details["unexpected_values"] == [MASKED] * 3  # b@, d@ and e@x.com
    assert "@x.com" not in on_pii.message and "b@x.com" not in str(on_pii.details)


def test_range_with_inclusive_and_exclusive_bounds(spark, env):
    frame = orders(spark, [(1, 0, "DE", None), (2, 50, "DE", None), (3, 100, "DE", None)])
    inclusive = check(spark, env, frame, rule(kind="range", column="amount", min=0, max=100))
    assert inclusive.passed
    exclusive = rule(
        kind="range", column="amount", min=0, max=100, min_inclusive=False, max_inclusive=False
    )
    bad = check(spark, env, frame, exclusive)
    assert (bad.passed, bad.failing_rows) == (False, 2)
    only_min = check(spark, env, frame, rule(kind="range", column="amount", min=60))
    assert (only_min.passed, only_min.failing_rows) == (False, 2)


def test_regex_matches_from_the_start_and_groups_alternatives(spark, env):
    frame = orders(
        spark, [(1, 1, "DE", "a@x.com"), (2, 1, "DE", "not-an-email"), (3, 1, "DE", None)]
    )
    email = rule(kind="regex", column="email", pattern=r"[^@\s]+@[^@\s]+\.[a-z]{2,}$")
    bad = check(spark, env, frame, email)
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 1, 3)
    assert bad.samples[0]["email"] == "not-an-email"
    # 'de|fr' must match at the start: 'xfr' fails (a bare '^de|fr' would let it through).
    codes = orders(spark, [(1, 1, "de", None), (2, 1, "fr", None), (3, 1, "xfr", None)])
    alternation = check(spark, env, codes, rule(kind="regex", column="country", pattern="de|fr"))
    assert (alternation.passed, alternation.failing_rows) == (False, 1)
    good = check(spark, env, codes.limit(2), rule(kind="regex", column="country", pattern="de|fr"))
    assert good.passed


def test_freshness_of_a_timestamp_column(spark, env):
    stamps = spark.createDataFrame(
        [(dt.datetime(2026, 11, 21, 10, 0),), (dt.datetime(2026, 11, 20, 0, 0),)],
        "order_ts timestamp",
    )
    fresh = check(spark, env, stamps, rule(kind="freshness", column="order_ts", max_age_hours=3))
    assert fresh.passed and fresh.details["age_hours"] == pytest.approx(2.0)
    stale = check(spark, env, stamps, rule(kind="freshness", column="order_ts", max_age_hours=1))
    assert (stale.passed, stale.failing_rows, stale.total_rows) == (False, 2, 2)
    assert "2.0 h old" in stale.message


def test_a_reused_versions_freshness_is_judged_again_without_reading_it(spark, env, tmp_path):
    catalog, lake = env
    stamps = spark.createDataFrame([(dt.datetime(2026, 11, 21, 10, 0),)], "order_ts timestamp")
    freshness = rule(kind="freshness", column="order_ts", max_age_hours=3)
    dataset = dataclasses.replace(catalog.datasets["silver.orders_clean"], rules=(freshness,))
    built = validate_frame(stamps, CheckContext(lambda: spark, lake, catalog, dataset, now=NOW))
    ledger = CheckLedger(ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}"))
    ledger.record("published", dataset.name, None, "v1", "c1", {}, list(built.as_json()))
    version = Version(dataset.name, None, "v1", "c1", {}, 1, NOW)

    def no_spark():
        raise AssertionError("a reused version's freshness read the table")

    for hours, passed in ((0, True), (2, False)):  # 2 h old when built, 4 h two hours later
        context = CheckContext(no_spark, lake, catalog, dataset, now=NOW + hours * 3600)
        (result,) = reused_validation(version, context, ledger).results
        assert result.passed is passed and result.details["age_hours"] == 2 + hours


def test_schema_match_and_allowed_evolution(spark, env):
    declared = orders(spark, [(1, 1, "DE", None)]).drop("email")
    ok = check(spark, env, declared, rule(kind="schema", allow_new_nullable_columns=False))
    assert ok.passed and ok.engine == "pandera"
    wider = declared.selectExpr("*", "'x' AS channel")
    allowed = check(spark, env, wider, rule(kind="schema", allow_new_nullable_columns=True))
    assert allowed.passed and allowed.details["new_columns"] == ["channel"]
    strict = check(spark, env, wider, rule(kind="schema", allow_new_nullable_columns=False))
    assert (strict.passed, strict.failing_rows) == (False, 1) and "channel" in strict.message
    retyped = declared.selectExpr("cast(order_id AS string) AS order_id", "amount", "country")
    wrong = check(spark, env, retyped, rule(kind="schema"))
    assert not wrong.passed and "order_id" in wrong.message
    missing = check(spark, env, declared.drop("amount"), rule(kind="schema"))
    assert not missing.passed and "amount" in missing.message


def test_referential_integrity_against_the_published_parent(spark, env):
    _catalog, lake = env
    parent = spark.createDataFrame([(1,), (2,)], "order_id bigint")
    publish_frame(lake, spark, parent, "bronze.orders", "c", {})
    fk = rule(
        kind="referential_integrity",
        columns=["order_id"],
        to_table="bronze.orders",
        to_columns=["order_id"],
    )
    ok = check(spark, env, orders(spark, [(1, 1, "DE", None), (None, 1, "DE", None)]), fk)
    assert ok.passed  # a null key is not_null's business
    bad = check(
        spark, env, orders(spark, [(1, 1, "DE", None), (7, 1, "DE", None), (8, 1, "FR", None)]), fk
    )
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 2, 3)
    assert sorted(s["order_id"] for s in bad.samples) == [7, 8]


def test_custom_sql_assertion_returns_the_failing_rows(spark, env):
    assertion = rule(
        kind="sql", name="no_negative", query="SELECT order_id FROM {table} WHERE amount < 0"
    )
    ok = check(spark, env, orders(spark, GOOD), assertion)
    assert ok.passed and ok.name == "no_negative"
    bad = check(spark, env, orders(spark, [*GOOD, (9, -1, "DE", None)]), assertion)
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 1, 4)
    assert bad.samples == ({"order_id": 9},)


def test_quarantine_rate(spark, env):
    quarantine = spark.createDataFrame(
        [("{broken", "s3://b/k1"), ("{also broken", "s3://b/k1")],
        "_corrupt_record string, _source_file string",
    )
    frame = orders(spark, GOOD)
    limit = rule(kind="quarantine_rate", max_fraction=0.01, severity="warn")
    bad = check(
        spark, env, frame, limit, table="bronze.orders", quarantine=quarantine, records_read=100
    )
    assert (bad.passed, bad.failing_rows, bad.total_rows) == (False, 2, 100)
    assert bad.details["rate"] == 0.02 and "2.000%" in bad.message
    ok = check(
        spark, env, frame, limit, table="bronze.orders", quarantine=quarantine, records_read=1000
    )
    assert ok.passed and ok.failing_rows == 2 and "0.200%" in ok.message


def test_quarantine_rate_takes_the_count_the_ingest_made(spark, env):
    """The ingest counted its quarantine before staging it: the rule takes that count and
    does not read the quarantine again (this one fails when read)."""
    unreadable = spark.range(1).selectExpr(
        "raise_error('the quarantine was read again') AS _corrupt_record", "'k' AS _source_file"
    )
    limit = rule(kind="quarantine_rate", max_fraction=0.01, severity="warn")
    frame, table = orders(spark, GOOD), "bronze.orders"
    context = {"quarantine": unreadable, "records_read": 100, "quarantined": 0}
    ok = check(spark, env, frame, limit, table=table, **context)
    assert (ok.passed, ok.failing_rows, ok.total_rows) == (True, 0, 100)
    assert ok.details["quarantined"] == 0
    with pytest.raises(Exception, match="the quarantine was read again"):
        check(spark, env, frame, limit, table=table, **{**context, "quarantined": None})


def test_reconciliation_after_a_warehouse_load():
    exact = ReconciliationRule(kind="reconciliation")
    assert reconciliation_result(exact, 10, 10, "gold.x").passed
    failed = reconciliation_result(exact, 10, 8, "gold.x")
    assert (failed.passed, failed.failing_rows, failed.total_rows) == (False, 2, 10)
    assert reconciliation_result(
        ReconciliationRule(kind="reconciliation", tolerance=2), 10, 8, "g.x"
    ).passed


def test_a_source_pii_column_is_masked_in_samples_of_the_tables_it_flows_into(spark, tmp_path):
    """Declared on the raw source only, the PII column is masked in a silver table's samples:
    column lineage carries it there unmasked (upper(country))."""
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    sources = root / "metadata" / "sources.yaml"
    declared = sources.read_text().replace(
        "    format: jsonl\n", "    format: jsonl\n    pii_columns: [country]\n", 1
    )
    sources.write_text(declared)
    catalog = load_catalog(root, use_cache=False)
    assert catalog.datasets["silver.orders_clean"].pii_columns == ()
    frame = orders(spark, [(1, 10, "DE", None), (2, -5, "FR", None)])
    env = (catalog, Lake.local(root / "lake"))
    bad = check(spark, env, frame, rule(kind="range", column="amount", min=0))
    assert (bad.passed, bad.failing_rows) == (False, 1)
    assert [s["country"] for s in bad.samples] == [MASKED]
    assert [s["order_id"] for s in bad.samples] == [2]
