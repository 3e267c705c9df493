"""The 121 TPC-H and TPC-DS queries: every file parses, reads exactly the hand-checked tables and,
given the TPC schemas, every output column traces back to real base-table columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.file_lineage import FileLineage
from medallion_assets.lineage.scan import ScanResult, scan_directory, scan_files
from tests.conftest import CORPORA, fixture_path
from tests.data.tpc_expected import EXPECTED_SOURCES

SCHEMA: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).parents[1] / "data" / "tpc_schema.json").read_text()
)
QUERIES = sorted(EXPECTED_SOURCES)
CORPUS_SIZES = {"tpch": 22, "tpcds": 99}

# Output columns that cannot be traced even with the full TPC schema, with the reason. Every
# query was checked: with the schema every column resolves (the star-free corpus names all its
# columns, and unqualified names are unambiguous across the joined TPC tables), so none remain.
GENUINELY_UNRESOLVABLE: dict[str, dict[str, str]] = {}

# Read by hand from tpch_q01.sql and tpch_q15.sql: column -> base columns its value comes from.
TPCH_Q01_COLUMNS = {
    "l_returnflag": ("lineitem.l_returnflag",),
    "l_linestatus": ("lineitem.l_linestatus",),
    "sum_qty": ("lineitem.l_quantity",),
    "sum_base_price": ("lineitem.l_extendedprice",),
    "sum_disc_price": ("lineitem.l_discount", "lineitem.l_extendedprice"),
    "sum_charge": ("lineitem.l_discount", "lineitem.l_extendedprice", "lineitem.l_tax"),
    "avg_qty": ("lineitem.l_quantity",),
    "avg_price": ("lineitem.l_extendedprice",),
    "avg_disc": ("lineitem.l_discount",),
    "count_order": (),  # count(*) carries no column's value
}
TPCH_Q15_COLUMNS = {  # total_revenue is renamed by the CTE column list "revenue (supplier_no, ...)"
    "s_suppkey": (("supplier.s_suppkey",), "direct"),
    "s_name": (("supplier.s_name",), "direct"),
    "s_address": (("supplier.s_address",), "direct"),
    "s_phone": (("supplier.s_phone",), "direct"),
    "total_revenue": (("lineitem.l_discount", "lineitem.l_extendedprice"), "aggregate"),
}


def _by_stem(result: ScanResult) -> dict[str, FileLineage]:
    return {Path(label).stem: lineage for label, lineage in result.files.items()}


@pytest.fixture(scope="module")
def scans() -> dict[str, ScanResult]:
    return {
        corpus: scan_directory(fixture_path(CORPORA / corpus), "duckdb", schema=SCHEMA)
        for corpus in CORPUS_SIZES
    }


@pytest.fixture(scope="module")
def queries(scans: Mapping[str, ScanResult]) -> dict[str, FileLineage]:
    return {
        stem: lineage for result in scans.values() for stem, lineage in _by_stem(result).items()
    }


@pytest.mark.parametrize("corpus", sorted(CORPUS_SIZES))
def test_every_file_of_the_corpus_parses_without_errors(scans, corpus):
    assert scans[corpus].errors == ()
    assert len(scans[corpus].files) == CORPUS_SIZES[corpus]


def test_the_corpus_holds_exactly_the_queries_with_ground_truth(queries):
    assert sorted(queries) == QUERIES


@pytest.mark.parametrize("query", QUERIES)
def test_a_bare_select_writes_its_file_stem_from_exactly_the_tables_it_reads(queries, query):
    lineage = queries[query]
    assert lineage.target == query
    assert lineage.kind == "select"
    assert frozenset(lineage.sources) == EXPECTED_SOURCES[query]


@pytest.mark.parametrize("query", QUERIES)
def test_with_the_schema_no_output_column_is_left_unresolved(queries, query):
    unresolved = {c.column: c.unresolved for c in queries[query].columns if c.unresolved}
    assert unresolved == GENUINELY_UNRESOLVABLE.get(query, {})


@pytest.mark.parametrize("query", QUERIES)
def test_every_column_source_is_a_real_column_of_a_table_the_query_reads(queries, query):
    lineage = queries[query]
    for column in lineage.columns:
        for source in column.sources:
            table, name = source.rsplit(".", 1)
            assert table in lineage.sources, f"{column.column} <- {source}"
            assert name in SCHEMA[table], f"{column.column} <- {source}"


@pytest.mark.parametrize("query", QUERIES)
def test_every_output_column_has_a_name(queries, query):
    # An unaliased expression such as "Sum(sales)" still yields a named column in every engine;
    # an empty name cannot be asked about (impact --column) and collides with the next one.
    nameless = [c for c in queries[query].columns if not c.column]
    assert nameless == []


def test_tpch_q01_aggregates_trace_to_the_lineitem_columns_they_sum(queries):
    columns = {c.column: c.sources for c in queries["tpch_q01"].columns}
    assert columns == TPCH_Q01_COLUMNS
    transforms = {c.column: c.transform for c in queries["tpch_q01"].columns}
    assert transforms["l_returnflag"] == "direct"
    assert transforms["sum_charge"] == "aggregate"


def test_tpch_q15_follows_a_cte_column_list_and_a_scalar_subquery_filter(queries):
    columns = {c.column: (c.sources, c.transform) for c in queries["tpch_q15"].columns}
    assert columns == TPCH_Q15_COLUMNS


def test_the_scan_links_every_query_to_its_tables_in_the_edge_list(scans):
    result = scans["tpch"]
    assert set(result.edges) == {
        (table, query) for query, lineage in _by_stem(result).items() for table in lineage.sources
    }
    assert ("lineitem", "tpch_q01") in result.edges


# --- the same queries as DDL: CREATE TABLE gold.<stem> AS ... ----------------------------------


def _as_ctas(path: Path) -> SqlFile:
    query = path.read_text(encoding="utf-8").rstrip().rstrip(";")
    # The newline keeps the file's leading "-- TPC-..." comment from swallowing the query.
    return SqlFile(path.name, f"CREATE TABLE gold.{path.stem} AS\n{query}", "duckdb", None)


@pytest.fixture(scope="module")
def ctas() -> dict[str, FileLineage]:
    files = [_as_ctas(path) for path in sorted(fixture_path(CORPORA).glob("tpc*/*.sql"))]
    result = scan_files(files, schema=SCHEMA)
    assert result.errors == ()
    return _by_stem(result)


@pytest.mark.parametrize("query", QUERIES)
def test_wrapped_as_ctas_the_query_writes_gold_stem_from_the_same_tables(ctas, query):
    lineage = ctas[query]
    assert lineage.target == f"gold.{query}"
    assert lineage.kind == "create_table"
    assert frozenset(lineage.sources) == EXPECTED_SOURCES[query]


def test_wrapping_as_ctas_keeps_every_column_lineage(ctas, queries):
    changed = [q for q in QUERIES if ctas[q].columns != queries[q].columns]
    assert changed == []
