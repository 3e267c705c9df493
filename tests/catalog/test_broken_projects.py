"""One small broken project per error kind: each must fail to load with a message that names the
file, the line where YAML gives one, the field, and the fix.

Each case overlays a few files onto ``minimal_project/`` (a valid project) and lists the
problems expected, as (file, line or None, text the message must contain).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from medallion_assets.catalog import CatalogError, load_catalog

MINIMAL = Path(__file__).parent / "minimal_project"


@dataclass(frozen=True)
class Broken:
    files: dict[str, str | None]  # path -> new content (None deletes the file)
    expected: list[tuple[str, int | None, str]]


CASES: dict[str, Broken] = {
    "malformed_yaml": Broken(
        {"metadata/sources.yaml": "sources:\n  orders:\n    system: s3_raw\n   bucket: x\n"},
        [("metadata/sources.yaml", 4, "malformed YAML")],
    ),
    "unknown_key_with_suggestion": Broken(
        {"metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    criticallity: high\n"},
        [
            (
                "metadata/datasets.yaml",
                3,
                "unknown key 'criticallity' (fix: did you mean 'criticality'?)",
            )
        ],
    ),
    "duplicate_yaml_key": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    criticality: high\n"
            "    criticality: low\n"
        },
        [("metadata/datasets.yaml", 4, "key 'criticality' appears twice")],
    ),
    "wrong_value": Broken(
        {"metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    criticality: urgent\n"},
        [
            (
                "metadata/datasets.yaml",
                3,
                "'urgent' is not allowed (fix: use one of: 'critical', 'high', 'normal' or 'low')",
            )
        ],
    ),
    "missing_rule_set": Broken(
        {"metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    checks: [kees]\n"},
        [
            (
                "metadata/datasets.yaml",
                3,
                "rule set (validation.yaml) 'kees' does not exist (fix: did you mean 'keys'?)",
            )
        ],
    ),
    "target_names_missing_table": Broken(
        {
            "metadata/targets.yaml": "targets:\n  - {table: gold.revenu, system: warehouse, "
            "warehouse_table: analytics.revenue}\n"
        },
        [
            (
                "metadata/targets.yaml",
                2,
                "targets[0].table: table 'gold.revenu' does not exist "
                "(fix: did you mean 'gold.revenue'?)",
            )
        ],
    ),
    "pipeline_sink_missing": Broken(
        {
            "metadata/pipelines.yaml": "pipelines:\n  - id: daily\n    select:\n"
            "      sinks: [gold.nothing]\n"
        },
        [("metadata/pipelines.yaml", 4, "sink table 'gold.nothing' does not exist")],
    ),
    "unknown_healing_action": Broken(
        {
            "metadata/policies.yaml": "retry_policies: {}\nhealing_rules:\n  - name: x\n"
            "    match: {message: boom}\n    error_code: X\n    actions: [reboot_the_world]\n"
        },
        [("metadata/policies.yaml", 6, "unknown healing action 'reboot_the_world'")],
    ),
    "duplicate_table_across_files": Broken(
        {
            "sql/silver/orders_copy.sql": "CREATE TABLE silver.orders_clean AS "
            "SELECT order_id FROM bronze.orders\n"
        },
        [
            (
                "sql/silver/orders_copy.sql",
                None,
                "table 'silver.orders_clean' is also produced by sql/silver/orders_clean.sql",
            )
        ],
    ),
    "sql_does_not_parse": Broken(
        {
            "sql/gold/revenue.sql": "SELECT country, sum(amount AS revenue "
            "FROM silver.orders_clean\n"
        },
        [("sql/gold/revenue.sql", None, "does not parse as spark SQL")],
    ),
    "unknown_table_in_sql": Broken(
        {"sql/bronze/orders.sql": "SELECT order_id, amount, country FROM raw.orderz\n"},
        [
            (
                "sql/bronze/orders.sql",
                None,
                "reads unknown table 'raw.orderz' (fix: did you mean 'raw.orders'?",
            )
        ],
    ),
    "cycle": Broken(
        {
            "sql/silver/orders_clean.sql": "SELECT order_id, amount, country FROM gold.revenue\n",
            "sql/gold/revenue.sql": "SELECT order_id, amount, country FROM silver.orders_clean\n",
        },
        [
            (
                "sql/gold/revenue.sql",
                None,
                "cycle: gold.revenue -> silver.orders_clean -> gold.revenue; "
                "files: sql/gold/revenue.sql, sql/silver/orders_clean.sql",
            )
        ],
    ),
    "unknown_rule_kind": Broken(
        {"metadata/validation.yaml": "rule_sets:\n  keys:\n    - {kind: not_nul, columns: [a]}\n"},
        [("metadata/validation.yaml", 3, "unknown rule kind 'not_nul'")],
    ),
    "regex_does_not_compile": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    rules:\n"
            "      - {kind: regex, column: country, pattern: '[A-Z'}\n"
        },
        [("metadata/datasets.yaml", 4, "pattern '[A-Z' does not compile")],
    ),
    "rule_names_unknown_column": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    rules:\n"
            "      - {kind: not_null, columns: [ammount]}\n"
        },
        [
            (
                "metadata/datasets.yaml",
                4,
                "not_null rule names column 'ammount', which "
                "silver.orders_clean does not have (fix: did you mean 'amount'?)",
            )
        ],
    ),
    "referential_integrity_unknown_table": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    rules:\n"
            "      - {kind: referential_integrity, columns: [country], to_table: silver.countries,"
            " to_columns: [code]}\n"
        },
        [("metadata/datasets.yaml", 4, "table 'silver.countries' does not exist")],
    ),
    "unsafe_s3_prefix": Broken(
        {
            "metadata/sources.yaml": (MINIMAL / "metadata/sources.yaml")
            .read_text()
            .replace("prefix: orders/", "prefix: ../../etc/")
        },
        [("metadata/sources.yaml", 5, "'../../etc/' is not a safe S3 prefix")],
    ),
    "unknown_source_encoding": Broken(
        {
            "metadata/sources.yaml": (MINIMAL / "metadata/sources.yaml")
            .read_text()
            .replace("format: jsonl", "format: jsonl\n    encoding: utf-17")
        },
        [("metadata/sources.yaml", 7, "unknown text encoding 'utf-17': write e.g. utf-8")],
    ),
    "encoding_on_a_parquet_source": Broken(
        {
            "metadata/sources.yaml": (MINIMAL / "metadata/sources.yaml")
            .read_text()
            .replace("format: jsonl", "format: parquet\n    encoding: utf-16")
        },
        [("metadata/sources.yaml", None, "applies to csv and jsonl sources only")],
    ),
    "unsafe_file_name": Broken(
        {"sql/gold/Revenue-Report.sql": "SELECT 1 AS x\n"},
        [
            (
                "sql/gold/Revenue-Report.sql",
                None,
                "file name 'Revenue-Report' is not a safe table name",
            )
        ],
    ),
    "unknown_metadata_file": Broken(
        {"metadata/sourcs.yaml": "sources: {}\n"},
        [("metadata/sourcs.yaml", None, "unknown metadata file (fix: rename it to sources.yaml)")],
    ),
    "bad_cron": Broken(
        {
            "metadata/pipelines.yaml": "pipelines:\n  - id: daily\n    schedule: every day\n"
            "    select: {layers: [gold]}\n"
        },
        [("metadata/pipelines.yaml", 3, "schedule 'every day' is not a 5-field cron expression")],
    ),
    "target_in_wrong_layer_folder": Broken(
        {
            "sql/silver/orders_clean.sql": "CREATE TABLE gold.orders_clean AS "
            "SELECT order_id FROM bronze.orders\n"
        },
        [
            (
                "sql/silver/orders_clean.sql",
                None,
                "writes 'gold.orders_clean', but the file is in the silver folder",
            )
        ],
    ),
    "merge_target_without_keys": Broken(
        {
            "metadata/targets.yaml": "targets:\n  - {table: gold.revenue, system: warehouse, "
            "warehouse_table: analytics.revenue, mode: merge}\n"
        },
        [("metadata/targets.yaml", 2, "mode 'merge' needs 'keys'")],
    ),
    "source_system_missing": Broken(
        {
            "metadata/sources.yaml": (MINIMAL / "metadata/sources.yaml")
            .read_text()
            .replace("system: s3_raw", "system: s3_rawr")
        },
        [
            (
                "metadata/sources.yaml",
                3,
                "system 's3_rawr' does not exist (fix: did you mean 's3_raw'?)",
            )
        ],
    ),
}


def build(tmp_path: Path, broken: Broken) -> Path:
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    for relative, content in broken.files.items():
        path = root / relative
        if content is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    return root


def test_minimal_project_loads():
    catalog = load_catalog(MINIMAL, use_cache=False)
    assert list(catalog.datasets) == ["bronze.orders", "silver.orders_clean", "gold.revenue"]


def test_there_are_at_least_twelve_error_kinds():
    assert len(CASES) >= 12


@pytest.mark.parametrize("kind", sorted(CASES))
def test_broken_project_names_file_line_and_fix(tmp_path: Path, kind: str):
    broken = CASES[kind]
    with pytest.raises(CatalogError) as raised:
        load_catalog(build(tmp_path, broken), use_cache=False)
    issues = raised.value.issues
    for file, line, text in broken.expected:
        matching = [i for i in issues if i.file.startswith(file) and text in str(i)]
        assert matching, f"no issue in {file} containing {text!r}; got:\n" + "\n".join(
            str(i) for i in issues
        )
        if line is not None:
            assert matching[0].line == line, str(matching[0])


def test_every_problem_is_reported_not_only_the_first(tmp_path: Path):
    broken = Broken(
        {
            **CASES["unknown_key_with_suggestion"].files,
            **CASES["pipeline_sink_missing"].files,
            **CASES["sql_does_not_parse"].files,
            **CASES["unknown_healing_action"].files,
        },
        [],
    )
    with pytest.raises(CatalogError) as raised:
        load_catalog(build(tmp_path, broken), use_cache=False)
    files = {i.file for i in raised.value.issues}
    assert {
        "metadata/datasets.yaml",
        "metadata/pipelines.yaml",
        "sql/gold/revenue.sql",
        "metadata/policies.yaml",
    } <= files


def test_a_broken_project_loses_nothing(tmp_path: Path):
    """Loading validates only: it never rewrites or removes the user's files."""
    root = build(tmp_path, CASES["malformed_yaml"])
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(CatalogError):
        load_catalog(root, use_cache=False)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_unknown_dialect_is_named_with_a_suggestion(tmp_path: Path):
    broken = Broken({"metadata/project.yaml": "name: minimal\ndialect: redshfit\n"}, [])
    with pytest.raises(CatalogError) as raised:
        load_catalog(build(tmp_path, broken), use_cache=False)
    assert (
        "metadata/project.yaml:2: dialect: unknown SQL dialect 'redshfit'; did you mean "
        "'redshift'?" in str(raised.value)
    )


def test_identifiers_with_a_trailing_newline_are_not_safe():
    from medallion_assets.catalog.base import check_identifier, check_table_name

    with pytest.raises(ValueError):
        check_identifier("orders\n")
    with pytest.raises(ValueError):
        check_table_name("silver.orders\n")
