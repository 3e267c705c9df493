"""A dbt model (SQL under Jinja) scanned as the SQL dbt compiles it to: ref, source and this
name tables, config, set, macros and comments write nothing, a macro call reads the columns its
arguments name. Jinja renders it (``dbt_jinja``); the approximation without Jinja
(``render_template``, for a model Jinja cannot render) takes the first branch of an if."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.scan import scan_directory
from medallion_assets.lineage.templates import render_template

STG = """{{ config(materialized='view') }}
{# staging: one row per order #}
select
    id as order_id,
    {{ cents_to_dollars('subtotal') }} as subtotal,
    {{ dbt.date_trunc('day', 'ordered_at') }} as ordered_on,
    '{{ var("region", "eu") }}' as region
from {{ source('ecom', 'raw_orders') }}
"""

MART = """{{ config(materialized='incremental', unique_key='order_id') }}
{% set methods = ['card', 'cash'] %}
with days as (
    -- a macro that writes a query
    {{ dbt_date.get_base_dates(n_dateparts=30, datepart="day") }}
),
orders as (select * from {{ ref('stg_orders') }})
select
    orders.order_id,
    {% for m in methods %}
    sum(case when orders.region = '{{ m }}' then orders.subtotal end) as amount,
    {% endfor %}
    max(orders.ordered_on) as last_order
from orders
{% if is_incremental() %}
where orders.ordered_on > (select max(last_order) from {{ this }})
{% else %}
where orders.ordered_on > current_date - 30
{% endif %}
group by 1
"""

MACRO = """{% macro cents_to_dollars(column_name) -%}
    ({{ column_name }} / 100)::numeric(16, 2)
{%- endmacro %}
"""


def test_a_dbt_project_scans_model_by_model_with_its_refs_and_sources(tmp_path: Path):
    (tmp_path / "stg_orders.sql").write_text(STG)
    (tmp_path / "orders.sql").write_text(MART)
    (tmp_path / "cents.sql").write_text(MACRO)
    result = scan_directory(tmp_path, "snowflake")
    assert result.errors == ()
    assert result.passed == ("cents.sql",)  # a file of macros writes no table
    assert set(result.edges) == {
        ("ecom.raw_orders", "stg_orders"),
        ("stg_orders", "orders"),
    }
    columns = {(e.source, e.target) for e in result.column_edges}
    assert ("ecom.raw_orders.subtotal", "stg_orders.subtotal") in columns
    assert ("ecom.raw_orders.ordered_at", "stg_orders.ordered_on") in columns  # 'day' is a unit
    assert ("stg_orders.subtotal", "orders.amount") in columns
    assert not any("region" in source for source, _ in columns if source.startswith("ecom"))


def test_plain_sql_is_left_as_it_is():
    sql = SqlFile("a.sql", "select '{ not jinja }' as a from t", "spark", "a")
    assert render_template(sql) is sql


def test_the_incremental_branch_reads_the_model_itself_and_the_else_branch_is_left_out():
    rendered = " ".join(
        render_template(SqlFile("orders.sql", MART, "snowflake", "orders")).text.split()
    )
    assert "(select max(last_order) from orders )" in rendered
    assert "current_date - 30" not in rendered
    assert "{" not in rendered and "methods" not in rendered
    assert "with days as ( -- a macro that writes a query SELECT NULL )" in rendered


def test_a_scope_sqlglot_cannot_walk_logs_nothing(tmp_path: Path, caplog):
    (tmp_path / "spine.sql").write_text("with days as (null) select * from days")
    with caplog.at_level(logging.WARNING):
        scan_directory(tmp_path, "snowflake")
    assert caplog.records == []


MODELS = {
    "a macro that is the model's query reads its refs": (
        "{{ dbt_utils.union_relations(relations=[ref('a'), ref('b')]) }}",
        {("a", "m"), ("b", "m")},
    ),
    "a macro query followed by a filter": (
        "{{ latest_record(source('raw', 'account')) }}\nwhere not isdeleted",
        {("raw.account", "m")},
    ),
    "a macro run before the query writes nothing": (
        "{% if is_incremental() %}{{ cleanup('t') }}{% endif %}\nselect x from {{ ref('a') }}",
        {("a", "m")},
    ),
    "a macro that writes a clause": (
        "select k, count(*) as n from {{ ref('a') }} where k > 0 {{ dbt_utils.group_by(n=1) }}",
        {("a", "m")},
    ),
    "a loop's separator and its variable in ref()": (
        "{% for r in ['a', 'b'] %}select x from {{ ref(r) }}"
        "{% if not loop.last %} union all {% endif %}{% endfor %}",
        {("a", "m"), ("b", "m")},
    ),
    "the first branch of a conditional ref": (
        "select * from {{ ref('a') if var('x', true) else ref('b') }}",
        {("a", "m")},
    ),
    "a ref glued to its JOIN": (
        "select a.x from {{ ref('a') }} a left join{{ ref('c') }} on true",
        {("a", "m"), ("c", "m")},
    ),
    "a set variable naming a CTE": (
        "with e as (select x from {{ ref('a') }})\n{% set cte = 'e' %}\nselect x from {{ cte }}",
        {("a", "m")},
    ),
    "a post-hook naming this inside its string": (
        '{{ config(post_hook="grant select on {{ this }} to role r") }}\n'
        "select x from {{ ref('a') }}",
        {("a", "m")},
    ),
    "source() by keyword": (
        "select x from {{ source(source_name='s', table_name='t') }}",
        {("s.t", "m")},
    ),
    "a variable as a table is no table": (
        "select x from {{ var('orders_table') }} join {{ ref('a') }} on true",
        {("a", "m")},
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_dbt_construct_keeps_the_models_tables(tmp_path: Path, name: str):
    text, edges = MODELS[name]
    (tmp_path / "m.sql").write_text(text)
    result = scan_directory(tmp_path, "snowflake")
    assert result.errors == ()
    assert set(result.edges) == edges


def test_a_test_block_and_a_loop_variable_in_a_name(tmp_path: Path):
    (tmp_path / "t.sql").write_text(
        "{% test not_null_x(model, column_name) %}\n"
        "select * from {{ model }} where {{ column_name }} is null\n{% endtest %}"
    )
    (tmp_path / "m.sql").write_text(
        "select {% for p in ['card', 'coupon'] %}sum(x) as {{ p }}_amount"
        "{% if not loop.last %}, {% endif %}{% endfor %} from {{ ref('a') }}"
    )
    result = scan_directory(tmp_path, "snowflake")
    assert result.passed == ("t.sql",)
    assert {(e.source, e.target) for e in result.column_edges} == {
        ("a.x", "m.card_amount"),
        ("a.x", "m.coupon_amount"),
    }
