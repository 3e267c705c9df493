"""Values at the door, on a real Spark session: a record whose value does not fit its declared
type (a NULL where the source declares ``nullable: false``, too many digits for its decimal,
more decimal places than it keeps, NaN or Infinity in a double, text in a number column),
one too deep or too long to parse, goes to the quarantine alone with its reason, and its
file's good records land; what the source's metadata allows (``on_excess_scale: round``,
``allow_nan``, ``on_contract_break: quarantine_rows``) lands instead."""

from __future__ import annotations

from decimal import Decimal

import pytest

from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.testing import read_table
from tests.runtime.test_ingest_bad_input import Project, bucket

pytestmark = pytest.mark.slow

WITH_SCORE = (
    "SELECT order_id, amount, country, score, _ingested_at, _source_file, _batch_id FROM raw.orders"
)


def project_with_score(tmp_path, fmt: str, **source_keys: str) -> Project:
    """The minimal project whose orders carry a double ``score`` too; ``source_keys`` go into
    the source (e.g. on_excess_scale: round); ``allow_nan`` onto score."""
    # The SQL reading score is written once the source declares it (a project reading a column
    # its source does not have does not load).
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), fmt)
    sources = project.root / "metadata" / "sources.yaml"
    score = (
        "{name: score, type: double"
        + (", allow_nan: true" if source_keys.pop("allow_nan", "") else "")
        + "}"
    )
    text = sources.read_text().replace(
        "      - {name: country, type: string}",
        f"      - {{name: country, type: string}}\n      - {score}",
    )
    extra = "".join(f"    {k}: {v}\n" for k, v in source_keys.items())
    sources.write_text(text.replace("    columns:\n", extra + "    columns:\n"))
    (project.root / "sql" / "bronze" / "orders.sql").write_text(WITH_SCORE)
    from medallion_assets.catalog import load_catalog

    project.catalog = load_catalog(project.root, use_cache=False)
    return project


JSONL_RECORDS = (
    '{"order_id": 1, "amount": 10.5, "country": "de", "score": 1.5}\n'
    '{"order_id": 2, "amount": 123.456789, "country": "de", "score": 2}\n'
    '{"order_id": 3, "amount": 1e20, "country": "de", "score": 3}\n'
    '{"order_id": 4, "amount": 4, "country": "de", "score": NaN}\n'
    '{"order_id": 5, "amount": 5, "country": "de", "score": Infinity}\n'
    '{"order_id": 6, "amount": 6, "country": "de", "score": -Infinity}\n'
    '{"order_id": 7, "amount": "abc", "country": "de", "score": 7}\n'
    '{"order_id": null, "amount": 8, "country": "de", "score": 8}\n'
    + '{"a": ' * 5000
    + "1"
    + "}" * 5000
    + "\n"
    + '{"order_id": 10, "amount": 1, "country": "'
    + "x" * 25_000_000
    + '"}\n'
    '{"order_id": 11, "amount": "99.10", "country": "fr", "score": 0}\n'
)
CSV_RECORDS = (
    "order_id,amount,country,score\n"
    "1,10.5,de,1.5\n"
    "2,123.456789,de,2\n"
    "3,1e20,de,3\n"
    "4,4,de,NaN\n"
    "5,5,de,Infinity\n"
    "6,6,de,-Infinity\n"
    "7,abc,de,7\n"
    ",8,de,8\n"
    "11,99.10,fr,0\n"
)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_each_value_that_does_not_fit_is_quarantined_alone_with_its_reason(spark, tmp_path, fmt):
    project = project_with_score(tmp_path, fmt)
    project.put(f"orders/a.{fmt}", (JSONL_RECORDS if fmt == "jsonl" else CSV_RECORDS).encode())
    outcome = project.run(spark, "r1")

    landed = read_table("bronze.orders", lake_root=project.lake.root)
    assert sorted(landed["order_id"].tolist()) == [1, 11]
    assert landed.set_index("order_id")["amount"].to_dict() == {
        1: Decimal("10.50"),
        11: Decimal("99.10"),
    }
    quarantine = read_table("bronze.orders__quarantine", lake_root=project.lake.root)
    reasons = sorted(quarantine["_reason"].tolist())
    expected = [
        "amount does not fit decimal(18,2) (more than 16 digit(s) before the point)",
        "amount has more decimal places than decimal(18,2) keeps (declare "
        "on_excess_scale: round to round it)",
        "amount is not a number",
        "order_id is NULL (declared nullable: false)",
        *["score is NaN or infinite (declare allow_nan: true to take them)"] * 3,
    ]
    if fmt == "jsonl":  # the record nested 5,000 deep, and the one of 25 MB
        expected += [
            f"malformed: not a jsonl record {'with the declared column types'}"
            + (" (bad syntax, nested too deep, too long, or a value of the wrong type)")
        ] * 2
    assert reasons == sorted(expected)
    assert outcome.quarantined == len(expected)
    (warned,) = [w for w in project.warned if "quarantined" in w and "record(s)" in w]
    assert f"quarantined {len(expected)} record(s) of bronze.orders" in warned
    assert "3 score is NaN or infinite" in warned
    assert "123.45" not in warned  # reasons name columns, never values


def test_what_the_source_allows_lands(spark, tmp_path):
    project = project_with_score(tmp_path, "jsonl", on_excess_scale="round", allow_nan="yes")
    project.put(
        "orders/a.jsonl",
        b'{"order_id": 2, "amount": 123.456789, "country": "de", "score": NaN}\n'
        b'{"order_id": 5, "amount": 5, "country": "de", "score": -Infinity}\n',
    )
    project.run(spark, "r1")
    landed = read_table("bronze.orders", lake_root=project.lake.root).set_index("order_id")
    assert landed.loc[2, "amount"] == Decimal("123.46")
    assert landed.loc[5, "score"] == float("-inf")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_object_with_no_value_in_a_non_nullable_column_is_set_aside_or_its_rows_quarantined(
    spark, tmp_path, fmt
):
    def put(project):
        if fmt == "jsonl":
            project.put("orders/a.jsonl", b'{"order_id": 1, "amount": 2, "country": "de"}\n')
            project.put("orders/b.jsonl", b'{"order_id": null, "amount": 3}\n{"amount": 4}\n')
        else:
            project.put("orders/a.csv", b"order_id,amount,country\n1,2,de\n")
            project.put("orders/b.csv", b"order_id,amount,country\n,3,fr\n,4,fr\n")

    project = Project(
        tmp_path / "set_aside", LocalFolderObjectStore(tmp_path / "s1"), bucket(), fmt
    )
    put(project)
    outcome = project.run(spark, "r1")
    assert project.rows() == [1]
    (set_aside,) = outcome.metadata["quarantined_object_keys"]
    assert set_aside == {
        "key": f"orders/b.{fmt}",
        "reason": "its column(s) order_id hold no value in any record, but sources.yaml "
        "declares them nullable: false",
    }

    rows = project_with_score(tmp_path / "rows", fmt, on_contract_break="quarantine_rows")
    put(rows)
    outcome = rows.run(spark, "r1")
    assert rows.rows() == [1] and outcome.quarantined == 2
    assert "quarantined_object_keys" not in outcome.metadata


def test_events_filed_under_another_days_folder_are_quarantined_never_loaded_twice(spark, tmp_path):
    """Events of 2026-01-05 under dt=2026-01-02 would change 2026-01-05 from another day's
    ingest (and be loaded into the warehouse twice): they are kept in the quarantine with the
    reason, and each day holds only its own events."""
    from medallion_assets.catalog import load_catalog
    from medallion_assets.control.store import ControlStore
    from medallion_assets.lake import Lake
    from medallion_assets.runtime.ingest.bronze_ingest import ingest
    from medallion_assets.runtime.table_run import RunLog, TableRun
    from tests.conftest import copy_demo_project

    root = copy_demo_project(tmp_path / "theworldshop")
    catalog = load_catalog(root, use_cache=False)
    store = LocalFolderObjectStore(tmp_path / "s3")
    store.ensure_bucket("theworldshop-raw")

    def event(n: int, day: str) -> str:
        return (
            f'{{"event_id": "e{n}", "event_ts": "{day}T10:00:00", "event_type": "login", '
            f'"session_id": "s{n}"}}\n'
        )

    store.put(
        "theworldshop-raw",
        "user_events/dt=2026-01-02/part-0.jsonl",
        (event(1, "2026-01-02") + event(2, "2026-01-05") + event(3, "2026-01-05")).encode(),
    )
    store.put(
        "theworldshop-raw",
        "user_events/dt=2026-01-05/part-0.jsonl",
        event(4, "2026-01-05").encode(),
    )
    lake = Lake.local(tmp_path / "lake")
    control = ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}")
    warned: list[str] = []
    for day in ("2026-01-02", "2026-01-05"):
        run = TableRun(
            catalog=catalog,
            dataset=catalog.datasets["bronze.user_events"],
            lake=lake,
            spark=spark,
            partition=day,
            run_id=f"r-{day}",
            log=RunLog(lambda _: None, warned.append),
            control=control,
        )
        ingest(run, store)

    bronze = read_table("bronze.user_events", lake_root=lake.root)
    by_day = bronze.groupby(bronze["event_date"].astype(str))["event_id"].apply(sorted)
    assert by_day.to_dict() == {"2026-01-02": ["e1"], "2026-01-05": ["e4"]}
    quarantine = read_table("bronze.user_events__quarantine", lake_root=lake.root)
    assert (
        sorted(quarantine["_reason"])
        == [
            "event_date 2026-01-05 is not the day of its folder (2026-01-02): filed under the "
            "wrong day"
        ]
        * 2
    )
    assert sorted(quarantine["_partition"]) == ["2026-01-02"] * 2
    assert any("quarantined 2 record(s) of bronze.user_events[2026-01-02]" in w for w in warned)
    audited = [e.message for e in control.audit() if e.kind == "quarantine"]
    assert len(audited) == 1 and "wrong day" in audited[0]
