"""Targets and columns as a warehouse writes them, seen through ``scan_directory``."""

from __future__ import annotations

from pathlib import Path

from medallion_assets.lineage.scan import scan_directory


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def edges(result) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.transform) for e in result.column_edges}


def test_insert_maps_by_position_onto_a_table_another_file_creates(tmp_path: Path):
    # The inserting file sorts first: the creating file must still be analysed before it.
    folder = write(
        tmp_path,
        {
            "a_load.sql": "INSERT INTO mart.t SELECT s.x AS y, s.z FROM raw.s s",
            "b_create.sql": "CREATE TABLE mart.t AS SELECT id AS k, name AS label FROM raw.u",
        },
    )
    result = scan_directory(folder, "postgres")
    assert ("raw.s.x", "mart.t.k", "direct") in edges(result)
    assert ("raw.s.z", "mart.t.label", "direct") in edges(result)
    assert not any(target == "mart.t.y" for _, target, _ in edges(result))


def test_insert_maps_by_position_onto_a_table_of_the_schema_file(tmp_path: Path):
    folder = write(tmp_path, {"load.sql": "INSERT INTO mart.t SELECT s.x AS y FROM raw.s s"})
    result = scan_directory(folder, "redshift", schema={"mart.t": {"amount": "int"}})
    assert edges(result) == {("raw.s.x", "mart.t.amount", "direct")}


def test_select_into_writes_the_named_table_not_the_file_stem(tmp_path: Path):
    folder = write(tmp_path, {"q1.sql": "SELECT a INTO dbo.new_t FROM dbo.s"})
    result = scan_directory(folder, "tsql")
    assert result.edges == (("dbo.s", "dbo.new_t"),)
    assert "q1" not in result.nodes


def test_unexpanded_star_is_one_star_edge_and_stays_listed_as_unresolved(tmp_path: Path):
    folder = write(tmp_path, {"copy.sql": "INSERT INTO t SELECT * FROM s"})
    result = scan_directory(folder, "spark").as_dict()
    assert result["column_edges"] == [{"from": "s.*", "to": "t.*", "transform": "star"}]
    assert [u["column"] for u in result["unresolved"]] == ["t.*"]


def test_union_with_different_column_counts_is_an_error_naming_the_file(tmp_path: Path):
    folder = write(
        tmp_path,
        {
            "bad.sql": "SELECT a, b FROM s UNION ALL SELECT c FROM u",
            "good.sql": "SELECT a FROM s",
        },
    )
    result = scan_directory(folder, "spark")
    assert [e.file for e in result.errors] == ["bad.sql"]
    assert "different numbers of columns (2, 1)" in result.errors[0].message
    assert ("s.a", "good.a", "direct") in edges(result)


def test_a_bigquery_partition_decorator_reads_its_table(tmp_path: Path):
    folder = write(
        tmp_path,
        {
            "q.sql": "SELECT a.col1, d.v FROM `p.ds.events$__UNPARTITIONED__` a "
            "JOIN ds.daily$20230101 d ON a.col1 = d.k",
        },
    )
    schema = {"p.ds.events": {"col1": "int"}, "ds.daily": {"k": "int", "v": "int"}}
    result = scan_directory(folder, "bigquery", schema=schema)
    assert set(result.edges) == {("p.ds.events", "q"), ("ds.daily", "q")}
    assert edges(result) == {
        ("p.ds.events.col1", "q.col1", "direct"),
        ("ds.daily.v", "q.v", "direct"),
    }
    # elsewhere ``$`` is part of a name (Oracle's V$SESSION)
    (tmp_path / "oracle").mkdir()
    oracle = write(tmp_path / "oracle", {"s.sql": "SELECT sid FROM v$session"})
    assert set(scan_directory(oracle, "oracle").edges) == {("v$session", "s")}


def test_an_ambiguous_name_in_a_merge_names_the_target_table(tmp_path: Path):
    sql = "MERGE INTO ds.tgt T USING ds.src S ON T.id = S.id WHEN MATCHED THEN UPDATE SET w = v"
    result = scan_directory(write(tmp_path, {"m.sql": sql}), "bigquery")
    assert [u["reason"] for u in result.unresolved] == [
        "v: ambiguous, could come from ds.tgt, ds.src (schemas unknown)"
    ]


def test_a_table_function_is_no_table_and_its_columns_are_said_unknown(tmp_path: Path):
    folder = write(
        tmp_path,
        {
            "series.sql": "SELECT g, o.id FROM generate_series(1, 3) g, shop.orders o",
            "numbers.sql": "SELECT id FROM range(10)",
        },
    )
    result = scan_directory(folder, "postgres")
    assert set(result.edges) == {("shop.orders", "series")}  # no table named '' or 'range'
    assert edges(result) == {("shop.orders.id", "series.id", "direct")}
    assert {u["column"] for u in result.unresolved} == {"series.g", "numbers.id"}


def test_a_snowflake_semantic_view_reads_the_view_it_names(tmp_path: Path):
    folder = write(tmp_path, {"q.sql": "SELECT a FROM SEMANTIC_VIEW(sem.sales FACTS a)"})
    result = scan_directory(folder, "snowflake")
    assert set(result.edges) == {("sem.sales", "q")}
    assert edges(result) == {("sem.sales.a", "q.a", "direct")}
