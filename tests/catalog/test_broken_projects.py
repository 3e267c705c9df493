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


_SOURCES = (MINIMAL / "metadata/sources.yaml").read_text()
_SYSTEMS = (MINIMAL / "metadata/systems.yaml").read_text()
_FORMAT = "    format: jsonl\n"


def _PARTITION(pattern: str) -> str:
    return f"    partition: '{pattern}'\n"


def _pipeline(line: str) -> str:
    return f"pipelines:\n  - id: daily\n    {line}\n    select: {{sinks: [gold.revenue]}}\n"


# "Billion laughs": each line repeats the one before nine times (9**9 values written out).
_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{x}: &{x} [{', '.join([f'*{y}'] * 9)}]\n" for x, y in zip("bcdefghi", "abcdefgh", strict=True)
)


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
    "sql_updates_in_place": Broken(
        {
            "sql/gold/revenue.sql": "UPDATE gold.revenue SET revenue = o.amount "
            "FROM silver.orders_clean o WHERE o.country = gold.revenue.country\n"
        },
        [("sql/gold/revenue.sql", None, "is an UPDATE: a project's SQL file produces its table")],
    ),
    "sql_copies_files_in": Broken(
        {"sql/gold/revenue.sql": "COPY gold.revenue FROM 's3://shop-exports/revenue/'\n"},
        [("sql/gold/revenue.sql", None, "is a COPY or UNLOAD: a project's raw files are read")],
    ),
    "sql_clones_a_table": Broken(
        {"sql/gold/revenue.sql": "-- dialect: snowflake\nCREATE TABLE gold.revenue CLONE x.y\n"},
        [("sql/gold/revenue.sql", None, "is a CREATE TABLE ... CLONE")],
    ),
    "sql_renames_a_table": Broken(
        {"sql/gold/revenue.sql": "ALTER TABLE gold.revenue_tmp RENAME TO gold.revenue\n"},
        [("sql/gold/revenue.sql", None, "is an ALTER TABLE ... RENAME")],
    ),
    "sql_writes_a_directory": Broken(
        {
            "sql/gold/revenue.sql": "INSERT OVERWRITE DIRECTORY 's3://shop/out/' "
            "SELECT country FROM silver.orders_clean\n"
        },
        [("sql/gold/revenue.sql", None, "the statement writes 's3://shop/out/'")],
    ),
    "preamble_spark_cannot_run": Broken(
        {
            "sql/gold/revenue.sql": "-- dialect: bigquery\n"
            "CREATE TEMP FUNCTION shout(x STRING) RETURNS STRING LANGUAGE js AS 'return x;';\n"
            "SELECT shout(country) AS country, sum(amount) AS revenue "
            "FROM silver.orders_clean GROUP BY 1\n"
        },
        [("sql/gold/revenue.sql", None, "defines temporary function shout in js")],
    ),
    "merge_insert_values_do_not_match_its_columns": Broken(
        {
            "sql/silver/orders_latest.sql": "MERGE INTO silver.orders_latest t "
            "USING bronze.orders s ON t.order_id = s.order_id "
            "WHEN NOT MATCHED THEN INSERT (order_id, amount) VALUES (s.order_id)\n"
        },
        [("sql/silver/orders_latest.sql", None, "lists 2 column(s) but 1 value(s)")],
    ),
    "two_writes_in_one_file": Broken(
        {
            "sql/gold/revenue.sql": "CREATE TEMP VIEW v AS SELECT * FROM silver.orders_clean;\n"
            "INSERT INTO gold.revenue SELECT country, amount AS revenue FROM v;\n"
            "INSERT INTO gold.other SELECT country FROM v\n"
        },
        [("sql/gold/revenue.sql", None, "(INSERT gold.revenue and INSERT gold.other)")],
    ),
    "unknown_table_in_sql": Broken(
        {"sql/bronze/orders.sql": "SELECT order_id, amount, country FROM raw.orderz\n"},
        [
            (
                "sql/bronze/orders.sql",
                1,
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
    "csv_encoding_spark_cannot_read": Broken(
        {
            "metadata/sources.yaml": (MINIMAL / "metadata/sources.yaml")
            .read_text()
            .replace("format: jsonl", "format: csv\n    encoding: mac_roman")
        },
        [("metadata/sources.yaml", None, "Spark cannot read CSV in encoding 'mac_roman'")],
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
    # --- issue 11: what validated but did not load in Dagster, or never ran -----------------
    "partition_pattern_leaves_the_prefix": Broken(
        {
            "metadata/sources.yaml": _SOURCES.replace(
                _FORMAT, _FORMAT + _PARTITION("../../dt={date}")
            )
        },
        [
            (
                "metadata/sources.yaml",
                7,
                "partition pattern '../../dt={date}' leaves its source's prefix",
            )
        ],
    ),
    "partition_pattern_is_absolute": Broken(
        {"metadata/sources.yaml": _SOURCES.replace(_FORMAT, _FORMAT + _PARTITION("/dt={date}"))},
        [("metadata/sources.yaml", 7, "partition pattern '/dt={date}' leaves its source's prefix")],
    ),
    "partition_pattern_without_date": Broken(
        {"metadata/sources.yaml": _SOURCES.replace(_FORMAT, _FORMAT + _PARTITION("daily"))},
        [("metadata/sources.yaml", 7, "must hold '{date}' exactly once")],
    ),
    "partition_pattern_with_another_placeholder": Broken(
        {"metadata/sources.yaml": _SOURCES.replace(_FORMAT, _FORMAT + _PARTITION("{date}/{hour}"))},
        [("metadata/sources.yaml", 7, "holds a placeholder other than '{date}'")],
    ),
    "partitioned_source_prefix_without_slash": Broken(
        {
            "metadata/sources.yaml": _SOURCES.replace("prefix: orders/", "prefix: orders").replace(
                _FORMAT, _FORMAT + _PARTITION("dt={date}")
            )
        },
        [("metadata/sources.yaml", 2, "prefix 'orders' must end with '/'")],
    ),
    "prefix_with_a_dot_segment": Broken(
        {"metadata/sources.yaml": _SOURCES.replace("prefix: orders/", "prefix: ./orders/")},
        [("metadata/sources.yaml", 5, "'./orders/' is not a safe S3 prefix")],
    ),
    "daily_table_on_an_unpartitioned_source": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  bronze.orders:\n"
            "    partitions: {column: _ingested_at, start: 2026-01-01}\n"
        },
        [
            (
                "metadata/datasets.yaml",
                3,
                "its source raw.orders has no partition pattern, so no day would ever be found",
            )
        ],
    ),
    "cron_minute_out_of_range": Broken(
        {"metadata/pipelines.yaml": _pipeline("schedule: '61 * * * *'")},
        [("metadata/pipelines.yaml", 3, "minute value 61 is out of range 0-59")],
    ),
    "cron_date_that_never_occurs": Broken(
        {"metadata/pipelines.yaml": _pipeline("schedule: '0 3 31 feb *'")},
        [("metadata/pipelines.yaml", 3, "never runs")],
    ),
    "target_name_dagster_refuses": Broken(
        {
            "sql/silver/odd.sql": 'CREATE TABLE silver."o\'dd" AS '
            "SELECT order_id FROM bronze.orders\n"
        },
        [
            (
                "sql/silver/odd.sql",
                None,
                'writes "silver.o\'dd", which is not a safe table name',
            )
        ],
    ),
    "columns_of_one_name": Broken(
        {"sql/silver/odd.sql": "SELECT order_id, amount AS ORDER_ID FROM bronze.orders\n"},
        [("sql/silver/odd.sql", None, "the query yields column 'order_id' 2 times")],
    ),
    "check_name_dagster_refuses": Broken(
        {
            "sql/silver/odd.sql": "SELECT order_id AS `order id` FROM bronze.orders\n",
            "metadata/datasets.yaml": "datasets:\n  silver.odd:\n    rules:\n"
            "      - {kind: not_null, columns: [order id]}\n",
        },
        [
            (
                "metadata/datasets.yaml",
                4,
                "its check name 'not_null_order id' is not a valid Dagster name "
                "(letters, digits and _ only) "
                "(fix: give the rule a name: 'name: not_null_order_id')",
            )
        ],
    ),
    "owner_dagster_refuses": Broken(
        {"metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    owners: [bob]\n"},
        [("metadata/datasets.yaml", 3, "owner 'bob' is neither an e-mail address nor a team")],
    ),
    "tag_dagster_refuses": Broken(
        {"metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    tags: [month end]\n"},
        [("metadata/datasets.yaml", 3, "tag 'month end' may hold only letters, digits")],
    ),
    "pipeline_id_dagster_reserves": Broken(
        {"metadata/pipelines.yaml": "pipelines:\n  - id: input\n    select: {layers: [gold]}\n"},
        [("metadata/pipelines.yaml", 2, "pipeline id 'input' is a name Dagster reserves")],
    ),
    "pipeline_id_of_a_built_in_job": Broken(
        {
            "metadata/pipelines.yaml": "pipelines:\n  - id: medallion_control\n"
            "    select: {layers: [gold]}\n"
        },
        [("metadata/pipelines.yaml", 2, "the name of a job the code location defines itself")],
    ),
    "system_name_too_long_for_a_tag": Broken(
        {
            "metadata/systems.yaml": _SYSTEMS.replace("spark:", "s" * 64 + ":"),
            "metadata/project.yaml": "name: minimal\ncompute_system: " + "s" * 64 + "\n",
        },
        [("metadata/systems.yaml", None, "has 64 characters; Dagster tags hold at most 63")],
    ),
    "silver_reads_gold": Broken(
        {"sql/silver/late.sql": "SELECT country FROM gold.revenue\n"},
        [
            (
                "sql/silver/late.sql",
                None,
                "silver.late reads gold.revenue, a later layer than silver "
                "(raw -> bronze -> silver -> gold) (fix: move the file to sql/gold/",
            )
        ],
    ),
    "bronze_reads_silver": Broken(
        {
            "sql/bronze/orders.sql": "SELECT o.order_id, o.amount, o.country FROM raw.orders o "
            "JOIN silver.orders_clean c ON o.order_id = c.order_id\n"
        },
        [("sql/bronze/orders.sql", None, "a bronze table reads only its raw source")],
    ),
    "gold_reads_raw": Broken(
        {
            "sql/gold/raw_revenue.sql": "SELECT country, sum(amount) AS r FROM raw.orders "
            "GROUP BY 1\n"
        },
        [("sql/gold/raw_revenue.sql", None, "only bronze tables read raw sources")],
    ),
    "quoted_number": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  bronze.orders:\n    rules:\n"
            '      - {kind: freshness, max_age_hours: "3"}\n'
        },
        [
            (
                "metadata/datasets.yaml",
                4,
                "max_age_hours: '3' is quoted, so YAML reads it as text, not a number "
                "(fix: remove the quotes: max_age_hours: 3)",
            )
        ],
    ),
    "quoted_boolean": Broken(
        {"metadata/pipelines.yaml": _pipeline('enabled: "false"')},
        [("metadata/pipelines.yaml", 3, "'false' is quoted, so YAML reads it as text")],
    ),
    "fraction_for_a_count": Broken(
        {"metadata/policies.yaml": "retry_policies:\n  fast: {max_retries: 2.5}\n"},
        [("metadata/policies.yaml", 2, "float 2.5 is not a whole number")],
    ),
    "quoted_date": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n"
            "    partitions: {column: order_id, start: '2026-01-01'}\n"
        },
        [("metadata/datasets.yaml", 3, "'2026-01-01' is quoted, so YAML reads it as text")],
    ),
    "sql_nested_past_the_recursion_limit": Broken(
        {
            "sql/silver/deep.sql": "SELECT "
            + "(" * 500
            + "1"
            + ")" * 500
            + " AS x FROM bronze.orders\n"
        },
        [("sql/silver/deep.sql", None, "is nested more than 150 levels deep (500 levels of paren")],
    ),
    "sql_nested_past_the_supported_depth": Broken(
        {
            "sql/silver/deep.sql": "SELECT "
            + "(" * 200
            + "1"
            + ")" * 200
            + " AS x FROM bronze.orders\n"
        },
        [("sql/silver/deep.sql", None, "is nested more than 150 levels deep")],
    ),
    "check_query_nested_too_deeply": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n    rules:\n"
            "      - kind: sql\n        query: SELECT order_id FROM {table} WHERE "
            + "(" * 500
            + "amount < 0"
            + ")" * 500
            + "\n"
        },
        [
            (
                "metadata/datasets.yaml",
                5,
                "the query is nested more than 150 levels deep (500 levels of paren",
            )
        ],
    ),
    "yaml_alias_bomb_as_top_level_keys": Broken(
        {"metadata/exposures.yaml": _LAUGHS},
        [("metadata/exposures.yaml", 6, "its aliases (*name) expand to more than 100,000 values")],
    ),
    "yaml_alias_bomb_as_a_value": Broken(
        {
            "metadata/datasets.yaml": "laughs:\n"
            + "".join("  " + line + "\n" for line in _LAUGHS.splitlines())
            + "datasets:\n  silver.orders_clean:\n    description: *i\n"
        },
        [("metadata/datasets.yaml", 7, "its aliases (*name) expand to more than 100,000 values")],
    ),
    "target_named_like_the_load_ledger": Broken(
        {
            "metadata/targets.yaml": "targets:\n  - {table: gold.revenue, system: warehouse, "
            "warehouse_table: finance.medallion_loads, mode: replace}\n"
        },
        [
            (
                "metadata/targets.yaml",
                2,
                "'finance.medallion_loads' is a name the project keeps for itself in the "
                "warehouse (its load ledger medallion_loads, staging tables _stage_*)",
            )
        ],
    ),
    "unknown_column_with_suggestion": Broken(
        {
            "sql/gold/revenue.sql": "SELECT country,\n       sum(amout) AS revenue\n"
            "FROM silver.orders_clean GROUP BY country\n"
        },
        [
            (
                "sql/gold/revenue.sql",
                2,
                "column 12: amout: silver.orders_clean has no column 'amout' "
                "(fix: did you mean 'amount'?)",
            )
        ],
    ),
    "column_dropped_that_a_downstream_table_reads": Broken(
        {
            "sql/silver/orders_clean.sql": "SELECT order_id, upper(country) AS country\n"
            "FROM bronze.orders WHERE amount >= 0\n"
        },
        [
            (
                "sql/gold/revenue.sql",
                1,
                "amount: silver.orders_clean has no column 'amount' (fix: use a column "
                "silver.orders_clean has, or add it to what makes silver.orders_clean)",
            )
        ],
    ),
    "range_rule_on_a_text_column": Broken(
        {
            "metadata/datasets.yaml": "datasets:\n  bronze.orders:\n    rules:\n"
            "      - {kind: range, column: country, min: 0}\n"
        },
        [
            (
                "metadata/datasets.yaml",
                4,
                "range rule on 'country', a string column of bronze.orders: a range compares "
                "numbers (fix: use accepted_values or regex for text",
            )
        ],
    ),
    "yaml_nested_too_deeply": Broken(
        {"metadata/datasets.yaml": "datasets: " + "[" * 100_000 + "]" * 100_000 + "\n"},
        [("metadata/datasets.yaml", 1, "nested more than 64 levels deep")],
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


def test_an_alias_bomb_is_refused_at_once_and_a_shared_block_is_not(tmp_path: Path):
    import time

    root = build(tmp_path, CASES["yaml_alias_bomb_as_a_value"])
    started = time.perf_counter()
    with pytest.raises(CatalogError):
        load_catalog(root, use_cache=False)
    assert time.perf_counter() - started < 10  # refused before anything is written out
    shared = build(
        tmp_path / "shared",
        Broken(
            {
                "metadata/datasets.yaml": "datasets:\n  silver.orders_clean:\n"
                "    owners: &owners [team:a, team:b]\n"
                "  gold.revenue:\n    owners: *owners\n"
            },
            [],
        ),
    )
    catalog = load_catalog(shared, use_cache=False)
    assert catalog.datasets["gold.revenue"].settings.owners == ("team:a", "team:b")


def test_a_link_leaving_the_project_is_refused_and_one_inside_is_not(tmp_path: Path):
    root = build(tmp_path, Broken({}, []))
    outside = tmp_path / "elsewhere.sql"
    outside.write_text("SELECT order_id FROM silver.orders_clean\n")
    (root / "sql" / "gold" / "linked.sql").symlink_to(outside)
    (root / "sql" / "gold").joinpath("linked_dir").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(CatalogError) as raised:
        load_catalog(root, use_cache=False)
    shown = [str(issue) for issue in raised.value.issues]
    fix = "(fix: copy it into the project, or remove the link)"
    assert shown == [
        f"sql/gold/linked.sql: a link to {outside}, outside the project {fix}",
        f"sql/gold/linked_dir: a link to {tmp_path}, outside the project {fix}",
    ]
    (root / "sql" / "gold" / "linked.sql").unlink()
    (root / "sql" / "gold" / "linked_dir").unlink()
    inner = root / "sql" / "gold" / "copy.sql"
    inner.symlink_to(root / "sql" / "gold" / "revenue.sql")
    assert "gold.copy" in load_catalog(root, use_cache=False).datasets


def test_a_name_that_would_print_reversed_is_shown_escaped(tmp_path: Path):
    root = build(tmp_path, Broken({}, []))
    (root / "sql" / "gold" / "revenue\u202elqs.sql").write_text("SELECT 1 AS x\n")
    with pytest.raises(CatalogError) as raised:
        load_catalog(root, use_cache=False)
    message = str(raised.value)
    assert "\u202e" not in message
    assert "sql/gold/revenue\\u202elqs.sql" in message
