"""The ``medallion`` command on TheWorldShop: what each command prints and how it exits.

Exit codes (README): 0 ok, 1 ``--fail-on`` or ``--fail-on-error`` matched, 2 the project does not
load, a table is unknown, or the tables of a scanned folder form a cycle.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from medallion_assets.cli import cli
from tests.conftest import copy_demo_project

DATASETS = {
    "bronze.address_validation_feed",
    "bronze.customers",
    "bronze.fx_rates",
    "bronze.orders",
    "bronze.payments",
    "bronze.products",
    "bronze.shipments",
    "bronze.user_events",
    "silver.addresses_validated",
    "silver.customers_clean",
    "silver.customers_history",
    "silver.order_items",
    "silver.orders_usd",
    "silver.payments",
    "silver.products",
    "silver.shipments",
    "silver.user_events",
    "silver.users_masked",
    "gold.customer_ltv",
    "gold.daily_user_events",
    "gold.fraud_features",
    "gold.late_shipments",
    "gold.product_sales",
    "gold.revenue_by_region",
    "gold.shipping_dashboard_feed",
}

PLAN = """\
level 1: bronze.address_validation_feed, bronze.customers, bronze.fx_rates, bronze.orders, \
bronze.payments, bronze.products, bronze.shipments, bronze.user_events
level 2: silver.addresses_validated, silver.customers_clean, silver.customers_history, \
silver.orders_usd, silver.payments, silver.products, silver.shipments, silver.user_events
level 3: gold.daily_user_events, gold.shipping_dashboard_feed, silver.order_items, \
silver.users_masked
level 4: gold.customer_ltv, gold.fraud_features, gold.late_shipments, gold.product_sales, \
gold.revenue_by_region
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A read-only copy of the demo, so the commands' parse cache never lands in the repo."""
    return copy_demo_project(tmp_path_factory.mktemp("cli") / "theworldshop")


@pytest.fixture
def medallion(project: Path):
    def run(*args: str, at: Path | None = None) -> Result:
        return CliRunner().invoke(cli, [*args, "--project", str(at or project)])

    return run


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


# --- lineage TABLE -------------------------------------------------------------------------------


def test_lineage_tree_marks_every_table_with_layer_and_criticality(medallion):
    out = ok(medallion("lineage", "gold.revenue_by_region"))
    lines = stripped_lines(out)
    assert lines[0] == "gold.revenue_by_region  [gold, critical]"
    assert lines[1] == "upstream:"
    assert "├── silver.orders_usd  [silver, high]" in lines
    assert "└── bronze.customers  [bronze, high, pii]" in lines
    assert "└── raw.customers  [raw, pii]" in lines
    assert "downstream:" in lines
    assert lines[-1] == "└── exposure.finance_revenue_dashboard  [exposure, critical]"


def test_lineage_upstream_depth_one_shows_only_the_direct_inputs(medallion):
    out = ok(medallion("lineage", "gold.revenue_by_region", "--upstream", "--depth", "1"))
    assert stripped_lines(out) == [
        "gold.revenue_by_region  [gold, critical]",
        "├── silver.orders_usd  [silver, high]",
        "└── silver.users_masked  [silver, high]",
    ]


def test_lineage_downstream_shows_only_what_reads_the_table(medallion):
    out = ok(medallion("lineage", "gold.shipping_dashboard_feed", "--downstream"))
    assert stripped_lines(out) == [
        "gold.shipping_dashboard_feed  [gold, critical]",
        "├── exposure.shipping_dashboard  [exposure, critical]",
        "└── gold.late_shipments  [gold, high]",
        "└── exposure.carrier_escalations  [exposure, high]",
    ]


def test_lineage_columns_shows_where_each_column_comes_from(medallion):
    out = ok(
        medallion("lineage", "gold.revenue_by_region", "--upstream", "--depth", "1", "--columns")
    )
    lines = stripped_lines(out)
    assert "· revenue_usd <- silver.orders_usd.total_amount_usd (aggregate)" in lines
    assert (
        "· country_code <- silver.orders_usd.ship_to_country, "
        "silver.users_masked.country_code (expression)"
    ) in lines
    assert "· order_date <- silver.orders_usd.order_date (direct)" in lines


def test_lineage_json_has_the_documented_shape(medallion):
    data = json.loads(
        ok(medallion("lineage", "silver.orders_usd", "--format", "json", "--columns"))
    )
    assert set(data) == {"root", "direction", "nodes", "edges", "column_edges", "unresolved"}
    assert (data["root"], data["direction"]) == ("silver.orders_usd", "both")
    nodes = {node["id"]: node for node in data["nodes"]}
    assert all(
        set(node) == {"id", "kind", "layer", "criticality", "owners", "depth", "file"}
        for node in data["nodes"]
    )
    assert nodes["bronze.orders"] == {
        "id": "bronze.orders",
        "kind": "dataset",
        "layer": "bronze",
        "criticality": "high",
        "owners": ["team:checkout"],
        "depth": -1,
        "file": "sql/bronze/orders.sql",
    }
    assert (nodes["raw.orders"]["kind"], nodes["raw.orders"]["depth"]) == ("source", -2)
    assert nodes["raw.orders"]["file"] is None
    assert nodes["gold.revenue_by_region"]["depth"] == 1
    assert nodes["gold.late_shipments"]["depth"] == 2
    assert nodes["exposure.carrier_escalations"]["kind"] == "exposure"
    assert {"from": "bronze.fx_rates", "to": "silver.orders_usd"} in data["edges"]
    assert {
        "from": "bronze.orders.total_amount",
        "to": "silver.orders_usd.total_amount_usd",
        "transform": "expression",
    } in data["column_edges"]
    assert data["unresolved"] == []


def test_lineage_json_without_columns_has_no_column_lists(medallion):
    data = json.loads(ok(medallion("lineage", "silver.orders_usd", "--format", "json")))
    assert set(data) == {"root", "direction", "nodes", "edges"}


def test_lineage_mermaid_is_a_left_to_right_graph(medallion):
    out = ok(medallion("lineage", "gold.revenue_by_region", "--format", "mermaid"))
    assert out.startswith("graph LR\n")
    assert '  gold_revenue_by_region["gold.revenue_by_region"]:::gold' in out.splitlines()
    assert "  silver_orders_usd --> gold_revenue_by_region" in out.splitlines()


def test_lineage_dot_is_a_digraph(medallion):
    out = ok(medallion("lineage", "gold.revenue_by_region", "--format", "dot"))
    assert out.startswith("digraph")
    assert '  "silver.orders_usd" -> "gold.revenue_by_region";' in out.splitlines()
    assert out.rstrip().endswith("}")


# --- lineage scan DIR ----------------------------------------------------------------------------


SCAN_FILES = {
    "orders_enriched.sql": "SELECT o.order_id, c.name AS customer_name\n"
    "FROM shop.orders AS o JOIN shop.customers AS c ON c.id = o.customer_id",
    "daily_totals.sql": "SELECT order_id, count(*) AS line_count FROM orders_enriched GROUP BY 1",
    "broken.sql": "SELECT (order_id FROM shop.orders",
}


def test_scan_reports_the_file_that_does_not_parse_and_keeps_the_others(tmp_path):
    for name, sql in SCAN_FILES.items():
        (tmp_path / name).write_text(sql, encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["lineage", "scan", str(tmp_path), "--format", "json", "--columns"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [error["file"] for error in data["errors"]] == ["broken.sql"]
    assert "does not parse" in data["errors"][0]["message"]
    assert {node["id"] for node in data["nodes"]} == {
        "shop.orders",
        "shop.customers",
        "orders_enriched",
        "daily_totals",
    }
    assert sorted((e["from"], e["to"]) for e in data["edges"]) == [
        ("orders_enriched", "daily_totals"),
        ("shop.customers", "orders_enriched"),
        ("shop.orders", "orders_enriched"),
    ]
    assert sorted((e["from"], e["to"], e["transform"]) for e in data["column_edges"]) == [
        ("orders_enriched.order_id", "daily_totals.order_id", "direct"),
        ("shop.customers.name", "orders_enriched.customer_name", "direct"),
        ("shop.orders.order_id", "orders_enriched.order_id", "direct"),
    ]
    assert data["unresolved"] == []


SCAN_CASES = Path(__file__).parents[1] / "lineage" / "scans"


def scan(*args: str) -> Result:
    return CliRunner().invoke(cli, ["lineage", "scan", *args])


def test_scan_lists_files_sqlglot_cannot_analyse_and_exits_0():
    result = scan(str(SCAN_CASES / "spark_internal_errors_among_good_files"), "--columns")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(e["file"], e["kind"], e["stage"]) for e in data["errors"]] == [
        ("broken.sql", None, "statement"),
        ("self_join.sql", "select", "columns"),
    ]
    assert data["passed_over"] == ["drop_table.sql"]  # it moves no data


@pytest.mark.parametrize("fmt", ["tree", "mermaid", "dot"])
def test_scan_graph_formats_list_the_errors_on_stderr(fmt):
    result = scan(
        str(SCAN_CASES / "spark_internal_errors_among_good_files"), "--columns", "--format", fmt
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "1 file(s) move no data, passed over: drop_table.sql"
    assert lines[1] == "2 error(s):"
    assert lines[2].startswith("error: broken.sql: does not parse as spark SQL")
    assert lines[3].startswith("error: self_join.sql: its column lineage could not be analysed")
    assert lines[3].endswith("give each its own alias (its table edges are shown)")
    assert "self_join" in result.stdout  # the file's table is drawn all the same


def test_scan_draws_a_script_of_copies_with_its_files(tmp_path):
    (tmp_path / "load.sql").write_text(
        "COPY raw.orders FROM 's3://Raw-Bucket/orders/';\n"
        "INSERT INTO mart.daily SELECT o.day, sum(o.amount) AS revenue FROM raw.orders o "
        "GROUP BY o.day;\nUNLOAD ('SELECT * FROM mart.daily') TO 's3://exports/daily_';\n",
        encoding="utf-8",
    )
    result = scan(str(tmp_path), "--dialect", "redshift", "--format", "tree")
    assert result.exit_code == 0 and result.stderr == "", result.output
    assert result.stdout.splitlines() == [
        "s3://Raw-Bucket/orders/  [files]",
        "  └── raw.orders  [table, normal]",
        "      └── mart.daily  [table, normal]",
        "          └── s3://exports/daily_  [files, normal]",
    ]


def test_scan_fail_on_error_exits_1_when_a_file_has_an_error(tmp_path):
    (tmp_path / "good.sql").write_text("SELECT id FROM src", encoding="utf-8")
    assert scan(str(tmp_path), "--columns", "--fail-on-error").exit_code == 0
    (tmp_path / "pairs.sql").write_text("SELECT id FROM src, src", encoding="utf-8")
    assert scan(str(tmp_path), "--columns").exit_code == 0
    result = scan(str(tmp_path), "--columns", "--fail-on-error", "--format", "tree")
    assert result.exit_code == 1
    assert "error: pairs.sql: its column lineage could not be analysed" in result.stderr


@pytest.mark.parametrize("fmt", ["json", "tree"])
def test_scan_of_files_in_a_cycle_names_the_cycle_and_exits_2(fmt):
    result = scan(str(SCAN_CASES / "cycle_between_two_files"), "--format", fmt)
    assert result.exit_code == 2
    named = "cycle: mart.a -> mart.b -> mart.a; files: a.sql, b.sql; break the cycle"
    if fmt == "json":
        assert named in json.loads(result.stdout)["errors"][0]["message"]
    else:
        assert f"error: a.sql: {named}" in result.stderr
        # every table is in the tree, those that only read one another too
        tables = {line.strip(" │├└─").split()[0] for line in result.stdout.splitlines()}
        assert tables == {"mart.a", "mart.b", "mart.events", "raw.events"}


def test_scan_format_dot_draws_every_table_and_edge():
    result = scan(str(SCAN_CASES / "two_cycles_and_a_clean_chain"), "--format", "dot")
    assert result.exit_code == 2  # the folder holds cycles; the graph is drawn all the same
    lines = result.stdout.splitlines()
    assert lines[0] == "digraph lineage {" and lines[-1] == "}"
    assert '  "src" [label="src\\nsource"];' in lines
    assert '  "f" [label="f\\ntable"];' in lines
    edges = sorted(line.strip() for line in lines if "->" in line)
    assert edges == [
        f'"{u}" -> "{d}";'
        for u, d in sorted(
            [("c", "d"), ("d", "e"), ("e", "c"), ("f", "g"), ("p", "q"), ("q", "p"), ("src", "f")]
        )
    ]


def test_catalog_validate_names_a_file_sqlglot_cannot_analyse(demo_project, medallion):
    (demo_project / "sql" / "gold" / "late_shipments.sql").write_text(
        "SELECT order_id FROM silver.orders_usd JOIN silver.orders_usd ON 1 = 1\n"
    )
    result = medallion("catalog", "validate", at=demo_project)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert (
        "  sql/gold/late_shipments.sql: sql: its column lineage could not be analysed "
        "(OptimizeError: Alias already used: orders_usd): two tables or subqueries in one FROM "
        "clause are both named 'orders_usd': give each its own alias"
    ) in result.stderr


# --- impact --------------------------------------------------------------------------------------


def test_impact_fail_on_critical_exits_1_naming_the_critical_nodes(medallion):
    result = medallion("impact", "raw.address_validation_feed", "--fail-on", "critical")
    assert result.exit_code == 1
    assert result.stdout.startswith("impact of raw.address_validation_feed\n")
    assert "highest criticality critical" in result.stdout
    assert result.stderr.strip() == (
        "fail-on critical: impact reaches gold.shipping_dashboard_feed, exposure.shipping_dashboard"
    )


def test_impact_fail_on_critical_exits_0_when_nothing_critical_is_reached(medallion):
    # Clickstream feeds the low-criticality events mart and the high-criticality fraud features.
    result = medallion("impact", "raw.user_events", "--fail-on", "critical")
    assert result.exit_code == 0, result.output
    assert "highest criticality high" in result.stdout
    assert medallion("impact", "raw.user_events", "--fail-on", "high").exit_code == 1


def test_impact_text_groups_by_layer_with_owners(medallion):
    lines = stripped_lines(ok(medallion("impact", "raw.address_validation_feed")))
    assert lines[:3] == [
        "impact of raw.address_validation_feed",
        "bronze:",
        "bronze.address_validation_feed           high      depth 1  owners: team:logistics-data",
    ]
    assert [line for line in lines if line.endswith(":")] == [
        "bronze:",
        "silver:",
        "gold:",
        "exposure:",
    ]
    assert lines[-1] == (
        "raw.address_validation_feed: 5 downstream table(s) (1 bronze, 1 silver, 3 gold), "
        "3 exposure(s), 2 critical, highest criticality critical, 3 owner(s) to notify"
    )


def test_impact_of_a_column_lists_the_columns_it_reaches(medallion):
    data = json.loads(
        ok(
            medallion(
                "impact",
                "raw.address_validation_feed",
                "--column",
                "address_line1",
                "--format",
                "json",
            )
        )
    )
    assert (data["root"], data["column"]) == ("raw.address_validation_feed", "address_line1")
    assert {
        layer: [(n["id"], n["columns"]) for n in nodes] for layer, nodes in data["layers"].items()
    } == {
        "bronze": [("bronze.address_validation_feed", ["address_line1"])],
        "silver": [("silver.addresses_validated", ["address_line1"])],
    }
    assert data["highest_criticality"] == "high"


def test_impact_of_a_column_in_text_names_the_reached_columns(medallion):
    out = ok(medallion("impact", "raw.address_validation_feed", "--column", "country_code"))
    assert "columns: destination_country" in out
    assert "gold.fraud_features" not in out


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["lineage", "gold.nope"], "gold.nope"),
        (["lineage", "gold.nope", "--format", "json"], "gold.nope"),
        (["impact", "gold.nope"], "gold.nope"),
        (["impact", "raw.address_validation_feed", "--column", "nope"], "'nope'"),
        (["split", "--sinks", "gold.revenue_by_region,gold.nope"], "gold.nope"),
    ],
    ids=["lineage", "lineage-json", "impact", "impact-column", "split"],
)
def test_an_unknown_table_or_column_exits_2_with_one_line_naming_it(medallion, args, named):
    result = medallion(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = result.stderr.splitlines()
    assert len(errors) == 1
    assert errors[0].startswith("error: ")
    assert named in errors[0]


# --- plan, split, trace-pii ---------------------------------------------------------------------


def test_plan_prints_the_execution_levels(medallion):
    # then the run under the profile in force (tests/cli/test_plan_cmd.py)
    assert ok(medallion("plan")).split("\n\n")[0] + "\n" == PLAN


def test_plan_json_lists_the_same_levels(medallion):
    levels = json.loads(ok(medallion("plan", "--format", "json")))["levels"]
    assert [", ".join(level) for level in levels] == [
        line.split(": ", 1)[1] for line in PLAN.splitlines()
    ]


def test_split_gives_shared_upstream_to_the_first_group(medallion):
    parts = json.loads(
        ok(
            medallion(
                "split",
                "--sinks",
                "gold.revenue_by_region,gold.product_sales",
                "--sinks",
                "gold.customer_ltv",
                "--format",
                "json",
            )
        )
    )
    assert [part["sinks"] for part in parts] == [
        ["gold.revenue_by_region", "gold.product_sales"],
        ["gold.customer_ltv"],
    ]
    assert set(parts[0]["tables"]) == {
        "bronze.customers",
        "bronze.fx_rates",
        "bronze.orders",
        "bronze.products",
        "silver.customers_clean",
        "silver.orders_usd",
        "silver.products",
        "silver.order_items",
        "silver.users_masked",
        "gold.product_sales",
        "gold.revenue_by_region",
    }
    assert parts[1]["tables"] == ["gold.customer_ltv"]  # all of its upstream is in group 1


def test_split_text_names_each_sub_pipeline(medallion):
    out = ok(
        medallion(
            "split",
            "--sinks",
            "gold.revenue_by_region,gold.product_sales",
            "--sinks",
            "gold.customer_ltv",
        )
    )
    assert out.splitlines()[0] == (
        "sub-pipeline 1 (sinks: gold.revenue_by_region, gold.product_sales): 11 table(s)"
    )
    assert out.endswith(
        "sub-pipeline 2 (sinks: gold.customer_ltv): 1 table(s)\n  gold.customer_ltv\n"
    )


def test_trace_pii_marks_hashed_columns_masked_and_copies_exposed(medallion):
    out = ok(medallion("trace-pii"))
    lines = out.splitlines()
    masked = lines.index("silver.users_masked")
    assert (
        "  email_sha256 (masked, from bronze.customers.email, raw.customers.email, "
        "silver.customers_clean.email)"
    ) in lines[masked:]
    assert "  email (EXPOSED, from raw.customers.email)" in lines[lines.index("bronze.customers") :]
    assert re.fullmatch(
        r"PII reaches \d+ column\(s\) in 8 table\(s\); unmasked in \d+ table\(s\)", lines[-1]
    )


def test_trace_pii_json_gives_exposure_per_column(medallion):
    reach = {r["column"]: r for r in json.loads(ok(medallion("trace-pii", "--format", "json")))}
    assert reach["gold.customer_ltv.email_sha256"]["exposed"] is False
    assert reach["bronze.customers.email"] == {
        "column": "bronze.customers.email",
        "from": ["raw.customers.email"],
        "exposed": True,
        "depth": 1,
    }


# --- catalog -----------------------------------------------------------------------------------


def test_catalog_validate_says_ok_and_exits_0(medallion):
    out = ok(medallion("catalog", "validate"))
    assert re.fullmatch(r"ok: 25 datasets, 8 sources, 7 exposures, \d+ column edges\n", out)


def test_catalog_show_json_describes_every_dataset(medallion):
    data = json.loads(ok(medallion("catalog", "show", "--format", "json")))
    assert set(data["datasets"]) == DATASETS
    for name, dataset in data["datasets"].items():
        layer, table = name.split(".")
        assert dataset["layer"] == layer
        assert dataset["sql"] == f"sql/{layer}/{table}.sql"
        for key in ("upstream", "columns", "criticality", "owners", "checks", "system"):
            assert key in dataset, f"{name} lacks {key}"
        assert dataset["columns"], f"{name} has no columns"


def test_catalog_show_gives_each_kind_its_keyed_inputs_and_what_a_full_table_could_be(medallion):
    datasets = json.loads(ok(medallion("catalog", "show", "--format", "json")))["datasets"]
    assert datasets["silver.orders_usd"]["kind"] == "merge"
    assert datasets["silver.orders_usd"]["keys"] == ["order_id"]
    assert "could_be" not in datasets["silver.orders_usd"]  # incremental already
    # the fx rates on the order's currency and day: driving columns, no keys
    assert datasets["silver.orders_usd"]["keyed_inputs"] == {
        "bronze.fx_rates": {"currency": "currency", "order_date": "rate_date"}
    }
    assert datasets["gold.fraud_features"]["keyed_inputs"]["silver.payments"] == {
        "order_id": "order_id"
    }
    assert datasets["gold.late_shipments"]["kind"] == "full"
    assert datasets["gold.late_shipments"]["could_be"] == ["append"]
    assert datasets["silver.users_masked"]["could_be"] == ["append", "merge on customer_id"]
    assert "could_be" not in datasets["bronze.orders"]
    assert "could_be" not in datasets["gold.daily_user_events"]  # daily: a day at a time


def test_catalog_show_json_gives_the_derived_settings_of_a_mart(medallion):
    data = json.loads(ok(medallion("catalog", "show", "--format", "json")))
    revenue = data["datasets"]["gold.revenue_by_region"]
    assert revenue["upstream"] == ["silver.orders_usd", "silver.users_masked"]
    assert revenue["criticality"] == "critical"
    assert revenue["owners"] == ["team:finance-data"]
    assert revenue["system"] == "redshift"  # its warehouse target's system
    # The warehouse_contract rule set first, then the dataset's own rules, in file order.
    assert [check["kind"] for check in revenue["checks"]] == [
        "schema",
        "reconciliation",
        "unique",
        "not_null",
        "range",
        "row_count",
        "accepted_values",
        "sql",
    ]
    assert [c["name"] for c in revenue["columns"]] == [
        "order_date",
        "region",
        "country_code",
        "order_count",
        "customer_count",
        "revenue_usd",
        "avg_order_value_usd",
    ]
    assert data["datasets"]["bronze.address_validation_feed"]["system"] == "s3_vendor"
    assert data["datasets"]["silver.orders_usd"]["system"] == "spark"
    assert data["datasets"]["silver.products"]["owners"] == ["team:merchandising"]


def _typo(project: Path) -> int:
    """Misspell the first ``criticality:`` key of datasets.yaml; return its line number."""
    path = project / "metadata" / "datasets.yaml"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if line.strip().startswith("criticality:"))
    lines[number] = lines[number].replace("criticality:", "criticalty:")
    path.write_text("".join(lines), encoding="utf-8")
    return number + 1


def test_catalog_validate_on_a_broken_project_exits_2_naming_file_and_line(demo_project, medallion):
    line = _typo(demo_project)
    result = medallion("catalog", "validate", at=demo_project)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"metadata/datasets.yaml:{line}:" in result.stderr
    assert "unknown key 'criticalty' (fix: did you mean 'criticality'?)" in result.stderr


def test_a_metadata_typo_is_the_only_problem_reported(demo_project, medallion):
    # One misspelt key must not invent follow-on problems, such as the alternate producer that
    # datasets.yaml does reference being reported as unused.
    _typo(demo_project)
    result = medallion("catalog", "validate", at=demo_project)
    problems = [line for line in result.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) == 1, result.stderr


# --- --project from anywhere ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["lineage", "gold.revenue_by_region"],
        ["impact", "raw.address_validation_feed"],
        ["plan"],
        ["split", "--sinks", "gold.revenue_by_region"],
        ["trace-pii"],
        ["catalog", "validate"],
        ["catalog", "show"],
    ],
    ids=lambda args: "-".join(args[:2]),
)
def test_every_project_command_takes_project_from_another_folder(
    medallion, tmp_path, monkeypatch, args
):
    monkeypatch.chdir(tmp_path)  # an empty folder: nothing to find without --project
    assert medallion(*args).exit_code == 0
    without = CliRunner().invoke(cli, args)
    assert without.exit_code == 2
    assert "does not load" in without.stderr


# --- the installed console script ------------------------------------------------------------


@pytest.mark.slow
def test_the_installed_medallion_script_exits_1_for_fail_on(project, tmp_path):
    script = Path(sys.executable).with_name("medallion")
    command = str(script) if script.exists() else shutil.which("medallion")
    assert command, "the medallion console script is not installed"
    done = subprocess.run(
        [
            command,
            "impact",
            "raw.address_validation_feed",
            "--fail-on",
            "critical",
            "--project",
            str(project),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("impact of raw.address_validation_feed\n")
    assert "fail-on critical: impact reaches" in done.stderr
