"""A dbt project scanned as dbt parses it: Jinja renders each model with the project's macros
and its installed packages'; every ref/source call is a dependency (set blocks, loops over set
lists, comments, macro bodies, macros in FROM and CTE bodies); what cannot be expanded is named,
never lost in silence; the sandbox holds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from medallion_assets.lineage.scan import ScanResult, scan_directory

PROJECT_FILE = "name: shop\nversion: '1.0'\nmacro-paths: ['macros']\nmodel-paths: ['models']\n"

MACROS = {
    # a macro whose body reads a table, used in a FROM subquery
    "macros/observations.sql": """
{% macro get_observations(codes, include_history=false) %}
    select * from {{ ref('stg_observations') }} where code in ({{ codes }})
    {% if include_history %} union all select * from {{ ref('stg_history') }}{% endif %}
{% endmacro %}
""",
    # GitLab's simple_cte: model names as plain strings, CTEs written by the macro
    "macros/simple_cte.sql": """
{%- macro simple_cte(tuple_list) -%}
WITH {% for cte_and_model in tuple_list %}
{{ cte_and_model[0] }} AS (
    SELECT * FROM {{ ref(cte_and_model[1]) }}
){%- if not loop.last -%},{%- endif -%}
{%- endfor -%}
{%- endmacro -%}
""",
    # a macro returning a value with return(), and dispatch to the dialect's implementation
    "macros/helpers.sql": """
{% macro model_for(name) %}{{ return('stg_' ~ name) }}{% endmacro %}
{% macro limit_dev() %}{{ return(adapter.dispatch('limit_dev', 'shop')()) }}{% endmacro %}
{% macro default__limit_dev() %}{% endmacro %}
{% macro forever() %}{{ forever() }}{% endmacro %}
""",
    # a test block and a materialization in a macro file are not models, nor Jinja errors
    "macros/tests.sql": "{% test positive(model, column_name) %}select 1{% endtest %}",
}

PACKAGE = {
    "dbt_packages/helpers/dbt_project.yml": "name: helpers\nversion: '1.0'\n",
    "dbt_packages/helpers/macros/union.sql": """
{% macro union_tables(relations) %}
{% for r in relations %}select * from {{ r }}
{% if not loop.last %} union all {% endif %}{% endfor %}
{% endmacro %}
""",
}

MODELS = {
    "stg_observations": "select code, value from {{ source('emis', 'observations') }}",
    "stg_history": "select code from {{ source('emis', 'history') }}",
    "stg_orders": "select id, amount from {{ source('shop', 'orders') }}",
    "stg_customers": "select id, name from {{ source('shop', 'customers') }}",
    "obs_latest": "select o.code from ({{ get_observations(\"'ALT'\") }}) o",
    "obs_full": "select o.code from ({{ get_observations(\"'ALT'\", include_history=true) }}) o",
    "orders_cte": (
        "{{ simple_cte([('orders', 'stg_orders'), ('customers', 'stg_customers')]) }}\n"
        "select orders.id, customers.name from orders join customers on orders.id = customers.id"
    ),
    "by_name": "select id from {{ ref(model_for('orders')) }} {{ limit_dev() }}",
    # a ref in a set block that only run_query reads: still a dependency (dbt's graph)
    "methods": (
        "{% set q %}select distinct name from {{ ref('stg_customers') }}{% endset %}\n"
        "{% set found = run_query(q) %}\n"
        "select {% for m in found.columns[0].values() %}{{ m }}, {% endfor %}id "
        "from {{ ref('stg_orders') }}"
    ),
    # sources named by a loop over a set list
    "all_raw": (
        "{% set tables = ['orders', 'customers'] %}\n"
        "{% for t in tables %}select id from {{ source('shop', t) }}"
        "{% if not loop.last %} union all {% endif %}{% endfor %}"
    ),
    # dbt's documented way to declare a dependency Jinja does not otherwise see
    "declared": "-- depends_on: {{ ref('stg_history') }}\nselect 1 as one",
    # a package macro, installed: expanded; a variable holding refs
    "unioned": (
        "{% set rels = [ref('stg_orders'), ref('stg_customers')] %}\n"
        "select id from ({{ helpers.union_tables(rels) }}) u"
    ),
    # a macro as a CTE body, the else branch of an incremental model (dbt parses a full refresh)
    "incremental": (
        "with base as (\n{% if is_incremental() %}\n{{ helpers.recent(this) }}\n{% else %}\n"
        "select * from {{ ref('stg_orders') }}\n{% endif %}\n)\nselect id from base"
    ),
    # a package that is not installed, where rows come from: named, not silent
    "not_installed": "select * from {{ fivetran_utils.union_data(table_identifier='deal') }}",
    # a macro that never returns: named, the scan goes on
    "endless": "select {{ forever() }} as x from {{ ref('stg_orders') }}",
}


def _project(root: Path, models: dict[str, str] | None = None) -> Path:
    (root / "dbt_project.yml").write_text(PROJECT_FILE)
    for path, text in {**MACROS, **PACKAGE}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "models" / "staging").mkdir(parents=True)
    for name, text in (models or MODELS).items():
        folder = root / "models" / ("staging" if name.startswith("stg_") else "")
        (folder / f"{name}.sql").write_text(text)
    # dbt's compiled output is no model
    (root / "target" / "compiled").mkdir(parents=True)
    (root / "target" / "compiled" / "copy.sql").write_text("select * from stg_orders")
    return root / "models"


def _inputs(result: ScanResult, model: str) -> set[str]:
    return {source for source, target in result.edges if target == model}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    return scan_directory(_project(tmp_path_factory.mktemp("dbt")), "snowflake")


@pytest.mark.parametrize(
    ("model", "inputs"),
    [
        ("obs_latest", {"stg_observations"}),  # include_history false: its branch not run
        ("obs_full", {"stg_observations", "stg_history"}),
        ("orders_cte", {"stg_orders", "stg_customers"}),
        ("by_name", {"stg_orders"}),
        ("methods", {"stg_orders", "stg_customers"}),
        ("all_raw", {"shop.orders", "shop.customers"}),
        ("declared", {"stg_history"}),
        ("unioned", {"stg_orders", "stg_customers"}),
        ("incremental", {"stg_orders"}),
    ],
)
def test_each_models_tables_are_what_dbt_records(scanned: ScanResult, model: str, inputs: set):
    assert _inputs(scanned, model) == inputs


def test_macro_package_and_target_folders_are_not_models(scanned: ScanResult):
    labels = set(scanned.files) | {e.file for e in scanned.errors}
    assert not any(label.startswith(("..", "target", "macros")) for label in labels)
    assert "copy" not in scanned.nodes


def test_what_cannot_be_expanded_is_named_with_the_reason(scanned: ScanResult):
    named = dict(scanned.incomplete)
    assert "fivetran_utils.union_data" in named["not_installed.sql"]
    assert "not expanded" in named["not_installed.sql"]
    assert "RecursionError" in named["endless.sql"]  # Jinja could not render it: said
    assert _inputs(scanned, "endless") == {"stg_orders"}  # read without Jinja, still traced
    assert "incomplete" in scanned.as_dict()
    # every model the folder has is traced or named
    traced = {label for label, fl in scanned.files.items() if fl.sources}
    assert set(MODELS) == {p.removesuffix(".sql").rsplit("/", 1)[-1] for p in traced} | {
        "not_installed"
    }


def test_column_lineage_reads_through_an_expanded_macro(scanned: ScanResult):
    columns = {(e.source, e.target) for e in scanned.column_edges}
    assert ("stg_observations.code", "obs_latest.code") in columns
    assert ("stg_customers.name", "orders_cte.name") in columns


@pytest.mark.parametrize(
    "text",
    [
        "select {{ ''.__class__.__mro__[1].__subclasses__() }} as x from {{ ref('stg_orders') }}",
        "{{ cycler.__init__.__globals__.os.system('touch PWNED') }} select 1 as x",
        "{{ self._TemplateReference__context.eval_ctx.environment }} select 1 as x",
        "{% for i in range(10**9) %}{% endfor %}select 1 as x",
    ],
)
def test_the_sandbox_holds(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch):
    models = _project(tmp_path, {"stg_orders": "select 1 as id", "evil": text})
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    result = scan_directory(models, "snowflake")
    assert time.monotonic() - started < 30
    assert not (tmp_path / "PWNED").exists()
    assert "subclasses" not in str(result.as_dict()) and "<class" not in str(result.as_dict())
    assert "evil" in result.nodes


def test_a_range_too_big_for_the_sandbox_is_named(tmp_path: Path):
    text = "{% for i in range(10**9) %}{% endfor %}select 1 as x"
    result = scan_directory(_project(tmp_path, {"evil": text}), "snowflake")
    assert "Range too big" in dict(result.incomplete)["evil.sql"]


def test_a_hostile_dbt_project_file_costs_nothing(tmp_path: Path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    (tmp_path / "dbt_project.yml").write_text("name: x\n" + bomb)
    (tmp_path / "m.sql").write_text("select id from {{ ref('a') }}")
    started = time.monotonic()
    result = scan_directory(tmp_path, "snowflake")
    assert time.monotonic() - started < 10
    assert set(result.edges) == {("a", "m")}


def test_a_long_flat_union_chain_is_not_nested(tmp_path: Path):
    branches = " union all ".join(f"select {i} as n from t{i % 7}" for i in range(400))
    (tmp_path / "wide.sql").write_text(branches)
    result = scan_directory(tmp_path, "spark")
    assert result.errors == ()
    assert {s for s, _ in result.edges} == {f"t{i}" for i in range(7)}


def test_the_cli_names_what_is_not_traced_whole_on_stderr(tmp_path: Path):
    import subprocess
    import sys

    models = _project(
        tmp_path, {"stg_orders": "select 1 as id", "not_installed": MODELS["not_installed"]}
    )
    medallion = Path(sys.executable).parent / "medallion"
    done = subprocess.run(
        [str(medallion), "lineage", "scan", str(models), "--format", "tree"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "not traced whole: not_installed.sql: fivetran_utils.union_data" in done.stderr
    assert "not_installed" in done.stdout
