"""Lineage of TheWorldShop, checked against what its SQL and metadata say (values read by hand)."""

from __future__ import annotations

import re

import pytest

from medallion_assets.lineage.graph import SubPipeline
from medallion_assets.lineage.impact import impact

BRONZE = {
    "bronze.address_validation_feed",
    "bronze.customers",
    "bronze.fx_rates",
    "bronze.orders",
    "bronze.payments",
    "bronze.products",
    "bronze.shipments",
    "bronze.user_events",
}

# A table runs one level after the latest of its upstream tables; bronze reads only raw sources.
EXECUTION_LEVELS = [
    BRONZE,
    {
        "silver.addresses_validated",
        "silver.customers_clean",
        "silver.customers_history",
        "silver.orders_usd",
        "silver.payments",
        "silver.products",
        "silver.shipments",
        "silver.user_events",
    },
    {  # each reads a level-2 silver table
        "gold.daily_user_events",
        "gold.shipping_dashboard_feed",
        "silver.order_items",  # silver.products
        "silver.users_masked",  # silver.customers_clean
    },
    {
        "gold.customer_ltv",  # silver.users_masked
        "gold.fraud_features",  # silver.users_masked
        "gold.late_shipments",  # gold.shipping_dashboard_feed
        "gold.product_sales",  # silver.order_items
        "gold.revenue_by_region",  # silver.users_masked
    },
]


# --- table lineage ---------------------------------------------------------------------------


def test_revenue_by_region_reads_orders_and_masked_users_down_to_the_raw_sources(demo_catalog):
    assert demo_catalog.lineage.upstream("gold.revenue_by_region") == {
        "silver.orders_usd": 1,
        "silver.users_masked": 1,
        "bronze.orders": 2,
        "bronze.fx_rates": 2,
        "silver.customers_clean": 2,
        "raw.orders": 3,
        "raw.fx_rates": 3,
        "bronze.customers": 3,
        "raw.customers": 4,
    }


def test_fraud_features_reads_five_silver_tables_and_no_cte_names(demo_catalog):
    # Its CTEs "orders", "payment_attempts" and "recent_activity" are not tables.
    assert demo_catalog.datasets["gold.fraud_features"].upstream == (
        "silver.addresses_validated",
        "silver.orders_usd",
        "silver.payments",
        "silver.user_events",
        "silver.users_masked",
    )
    assert demo_catalog.lineage.upstream("gold.fraud_features", depth=1) == {
        "silver.addresses_validated": 1,
        "silver.orders_usd": 1,
        "silver.payments": 1,
        "silver.user_events": 1,
        "silver.users_masked": 1,
    }


def test_bronze_orders_feeds_five_gold_marts_and_their_exposures(demo_catalog):
    assert demo_catalog.lineage.downstream("bronze.orders") == {
        "silver.orders_usd": 1,
        "silver.order_items": 1,
        "gold.customer_ltv": 2,
        "gold.fraud_features": 2,
        "gold.product_sales": 2,
        "gold.revenue_by_region": 2,
        "gold.shipping_dashboard_feed": 2,
        "gold.late_shipments": 3,
        "exposure.crm_reverse_etl": 3,
        "exposure.finance_revenue_dashboard": 3,
        "exposure.fraud_model": 3,
        "exposure.merchandising_report": 3,
        "exposure.shipping_dashboard": 3,
        "exposure.carrier_escalations": 4,
    }


def test_downstream_depth_limit_stops_at_the_first_hop(demo_catalog):
    assert demo_catalog.lineage.downstream("bronze.orders", depth=1) == {
        "silver.orders_usd": 1,
        "silver.order_items": 1,
    }


def test_clickstream_reaches_only_the_events_mart_and_the_fraud_features(demo_catalog):
    assert demo_catalog.lineage.downstream("raw.user_events") == {
        "bronze.user_events": 1,
        "silver.user_events": 2,
        "gold.daily_user_events": 3,
        "gold.fraud_features": 3,
        "exposure.fraud_model": 4,
        "exposure.growth_weekly_report": 4,
    }


def test_sources_datasets_and_exposures_are_nodes_of_their_own_kind(demo_catalog):
    graph = demo_catalog.lineage
    raw = graph.node("raw.customers")
    assert (raw.kind, raw.layer) == ("source", "raw")
    assert graph.node("gold.revenue_by_region").criticality == "critical"
    assert graph.node("exposure.shipping_dashboard").kind == "exposure"
    assert graph.node("silver.customers_clean").file == "sql/silver/customers_clean.sql"


def test_an_unknown_table_is_a_key_error_naming_it(demo_catalog):
    with pytest.raises(KeyError, match=re.escape("gold.nope")):
        demo_catalog.lineage.upstream("gold.nope")


# --- execution levels and split -------------------------------------------------------------


def test_execution_levels_follow_the_longest_chain_of_upstream_tables(demo_catalog):
    assert [set(level) for level in demo_catalog.lineage.levels()] == EXECUTION_LEVELS


def test_every_bronze_table_is_in_the_first_level(demo_catalog):
    assert set(demo_catalog.lineage.levels()[0]) == BRONZE


def test_levels_hold_only_datasets_not_sources_or_exposures(demo_catalog):
    placed = {table for level in demo_catalog.lineage.levels() for table in level}
    assert placed == set(demo_catalog.datasets)
    assert len(placed) == 25


def _respects_dependencies(part: SubPipeline, graph) -> bool:
    position = {table: i for i, table in enumerate(part.tables)}
    return all(
        position[up] < position[table]
        for table in part.tables
        for up in graph.dag.parents(table)
        if up in position
    )


def test_split_of_independent_sinks_gives_each_its_whole_upstream(demo_catalog):
    graph = demo_catalog.lineage
    events, shipping = graph.split([["gold.daily_user_events"], ["gold.late_shipments"]])
    assert set(events.tables) == {
        "bronze.user_events",
        "silver.user_events",
        "gold.daily_user_events",
    }
    assert set(shipping.tables) == {
        "bronze.address_validation_feed",
        "bronze.fx_rates",
        "bronze.orders",
        "bronze.shipments",
        "silver.addresses_validated",
        "silver.orders_usd",
        "silver.shipments",
        "gold.shipping_dashboard_feed",
        "gold.late_shipments",
    }
    assert (events.sinks, shipping.sinks) == (("gold.daily_user_events",), ("gold.late_shipments",))
    assert _respects_dependencies(events, graph) and _respects_dependencies(shipping, graph)


def test_split_gives_shared_upstream_to_the_first_group_that_needs_it(demo_catalog):
    graph = demo_catalog.lineage
    revenue, products = graph.split([["gold.revenue_by_region"], ["gold.product_sales"]])
    # bronze.orders, bronze.fx_rates and silver.orders_usd feed both: built once, in the first.
    assert set(revenue.tables) == {
        "bronze.customers",
        "bronze.fx_rates",
        "bronze.orders",
        "silver.customers_clean",
        "silver.orders_usd",
        "silver.users_masked",
        "gold.revenue_by_region",
    }
    assert set(products.tables) == {
        "bronze.products",
        "silver.products",
        "silver.order_items",
        "gold.product_sales",
    }
    assert _respects_dependencies(revenue, graph) and _respects_dependencies(products, graph)
    assert revenue.tables[-1] == "gold.revenue_by_region"
    assert products.tables[-1] == "gold.product_sales"


def test_a_group_whose_upstream_is_all_taken_keeps_only_its_sink(demo_catalog):
    parts = demo_catalog.lineage.split(
        [["gold.revenue_by_region", "gold.product_sales"], ["gold.customer_ltv"]]
    )
    assert len(parts[0].tables) == 11
    assert parts[1].tables == ("gold.customer_ltv",)


# --- PII -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pii(demo_catalog):
    return {reach.column: reach for reach in demo_catalog.lineage.pii_trace()}


def test_hashed_email_arrives_masked(pii):
    hashed = pii["silver.users_masked.email_sha256"]
    assert hashed.exposed is False
    assert hashed.origins == (
        "bronze.customers.email",
        "raw.customers.email",
        "silver.customers_clean.email",
    )
    assert pii["gold.customer_ltv.email_sha256"].exposed is False


def test_a_column_copying_pii_unmasked_is_exposed(pii):
    assert pii["bronze.customers.email"].exposed is True  # lower(trim(email))
    assert pii["bronze.customers.email"].origins == ("raw.customers.email",)
    assert pii["bronze.customers.email"].depth == 1
    assert pii["silver.customers_clean.email"].exposed is True
    assert pii["bronze.user_events.ip_address"].exposed is True


def test_pii_reaches_exactly_the_tables_whose_columns_derive_from_pii_columns(pii):
    tables = {column.rsplit(".", 1)[0] for column in pii}
    assert tables == {
        "bronze.address_validation_feed",
        "bronze.customers",
        "bronze.user_events",
        "silver.addresses_validated",
        "silver.customers_clean",
        "silver.users_masked",  # email_sha256, email_domain, phone_masked
        "gold.customer_ltv",  # email_sha256
        "gold.fraud_features",  # email_domain
    }
    # silver.user_events drops the IP address; names and street addresses stop in silver.
    assert not any(column.startswith("silver.user_events.") for column in pii)
    assert not any(
        column.endswith(("first_name", "last_name")) for column in pii if column.startswith("gold.")
    )


# --- column lineage ----------------------------------------------------------------------------


def _columns(catalog, table: str) -> dict[str, tuple[tuple[str, ...], str]]:
    return {c.column: (c.sources, c.transform) for c in catalog.datasets[table].columns}


def test_revenue_by_region_columns_trace_through_both_ctes_and_the_join(demo_catalog):
    orders, users = "silver.orders_usd", "silver.users_masked"
    country = ((f"{orders}.ship_to_country", f"{users}.country_code"), "expression")
    assert _columns(demo_catalog, "gold.revenue_by_region") == {
        "order_date": ((f"{orders}.order_date",), "direct"),
        "region": country,  # CASE over coalesce(o.ship_to_country, u.country_code, 'ZZ')
        "country_code": country,
        "order_count": ((f"{orders}.order_id",), "aggregate"),
        "customer_count": ((f"{orders}.customer_id",), "aggregate"),
        "revenue_usd": ((f"{orders}.total_amount_usd",), "aggregate"),
        "avg_order_value_usd": ((f"{orders}.total_amount_usd",), "aggregate"),
    }


def test_customer_ltv_columns_trace_through_the_left_join_cte(demo_catalog):
    columns = _columns(demo_catalog, "gold.customer_ltv")
    assert columns["email_sha256"] == (("silver.users_masked.email_sha256",), "direct")
    assert columns["country_code"] == (("silver.users_masked.country_code",), "direct")
    assert columns["first_order_date"] == (("silver.orders_usd.order_date",), "aggregate")
    assert columns["order_count"] == (("silver.orders_usd.order_id",), "aggregate")
    assert columns["lifetime_revenue_usd"] == (("silver.orders_usd.total_amount_usd",), "aggregate")
    assert columns["ltv_segment"] == (
        ("silver.orders_usd.order_id", "silver.orders_usd.total_amount_usd"),
        "aggregate",
    )


def test_fraud_features_columns_trace_through_aggregating_ctes(demo_catalog):
    columns = _columns(demo_catalog, "gold.fraud_features")
    assert columns["order_id"] == (("silver.orders_usd.order_id",), "direct")
    assert columns["account_age_days"] == (
        ("silver.orders_usd.order_date", "silver.users_masked.signup_date"),
        "expression",
    )
    assert columns["card_country_mismatch"] == (  # max(card_country) <> ship_to_country
        ("silver.orders_usd.ship_to_country", "silver.payments.card_country"),
        "aggregate",
    )
    assert columns["events_24h"] == (("silver.user_events.event_id",), "aggregate")
    assert columns["failed_logins_24h"] == (("silver.user_events.event_type",), "aggregate")
    assert columns["address_validation_status"] == (
        ("silver.addresses_validated.validation_status",),
        "expression",
    )
    assert columns["used_promo_code"] == (("silver.orders_usd.promo_code",), "expression")


def test_order_items_columns_come_out_of_the_lateral_view_over_items(demo_catalog):
    columns = _columns(demo_catalog, "silver.order_items")
    assert columns["product_id"][0] == ("bronze.orders.items",)
    assert columns["line_amount"][0] == ("bronze.orders.items",)
    assert columns["line_cost_usd"][0] == ("bronze.orders.items", "silver.products.unit_cost_usd")
    assert columns["sku"] == (("silver.products.sku",), "direct")


def test_product_revenue_is_priced_with_the_orders_rate(demo_catalog):
    columns = _columns(demo_catalog, "gold.product_sales")
    assert columns["revenue_usd"] == (
        ("silver.order_items.line_amount", "silver.orders_usd.usd_rate"),
        "aggregate",
    )
    assert columns["gross_margin_usd"][0] == (
        "silver.order_items.line_amount",
        "silver.order_items.line_cost_usd",
        "silver.orders_usd.usd_rate",
    )


SHIPPING_FEED_COLUMNS = [
    "shipment_id",
    "order_id",
    "customer_id",
    "order_date",
    "carrier",
    "service_level",
    "tracking_number",
    "shipment_status",
    "status_ts",
    "shipped_ts",
    "delivered_ts",
    "promised_delivery_date",
    "transit_days",
    "is_late",
    "destination_country",
    "destination_city",
    "destination_postal_code",
    "address_validation_status",
    "address_source",
]


def test_select_star_expands_to_every_column_of_the_table_it_reads(demo_catalog):
    # gold.late_shipments is "SELECT * FROM gold.shipping_dashboard_feed WHERE ..."
    late = demo_catalog.datasets["gold.late_shipments"]
    assert late.upstream == ("gold.shipping_dashboard_feed",)
    assert [c.column for c in late.columns] == SHIPPING_FEED_COLUMNS
    assert {c.column: (c.sources, c.transform) for c in late.columns} == {
        name: ((f"gold.shipping_dashboard_feed.{name}",), "direct")
        for name in SHIPPING_FEED_COLUMNS
    }
    assert not any(c.unresolved for c in late.columns)


def test_the_shipping_feed_prefers_the_validated_country(demo_catalog):
    columns = _columns(demo_catalog, "gold.shipping_dashboard_feed")
    assert columns["destination_country"] == (
        ("silver.addresses_validated.country_code", "silver.shipments.destination_country"),
        "expression",
    )
    assert columns["shipment_status"] == (("silver.shipments.status",), "direct")
    assert columns["customer_id"] == (("silver.orders_usd.customer_id",), "direct")


def test_no_demo_column_is_unresolved(demo_catalog):
    unresolved = [
        f"{d.name}.{c.column}: {c.unresolved}"
        for d in demo_catalog.datasets.values()
        for c in d.columns
        if c.unresolved
    ]
    assert unresolved == []


# --- impact -----------------------------------------------------------------------------------


def test_impact_of_the_address_feed_by_layer_with_exposures(demo_catalog):
    report = impact(demo_catalog.lineage, "raw.address_validation_feed")
    layers = {layer: {n.id: n.depth for n in nodes} for layer, nodes in report.by_layer().items()}
    assert layers == {
        "bronze": {"bronze.address_validation_feed": 1},
        "silver": {"silver.addresses_validated": 2},
        "gold": {
            "gold.fraud_features": 3,
            "gold.shipping_dashboard_feed": 3,
            "gold.late_shipments": 4,
        },
        "exposure": {
            "exposure.fraud_model": 4,
            "exposure.shipping_dashboard": 4,
            "exposure.carrier_escalations": 5,
        },
    }
    assert list(layers) == ["bronze", "silver", "gold", "exposure"]
    assert {n.id for n in report.exposures} == {
        "exposure.fraud_model",
        "exposure.shipping_dashboard",
        "exposure.carrier_escalations",
    }


def test_impact_of_the_address_feed_is_critical_and_names_who_to_notify(demo_catalog):
    report = impact(demo_catalog.lineage, "raw.address_validation_feed")
    assert report.highest_criticality == "critical"
    assert {n.id for n in report.reaches("critical")} == {
        "gold.shipping_dashboard_feed",
        "exposure.shipping_dashboard",
    }
    assert report.owners == (
        "ops-analytics@theworldshop.example",
        "team:logistics-data",
        "team:risk-ml",
    )


def test_impact_of_a_column_reaches_only_tables_whose_columns_derive_from_it(demo_catalog):
    # The street address stops in silver: no gold table selects address_line1.
    report = impact(demo_catalog.lineage, "raw.address_validation_feed", column="address_line1")
    assert {n.id: n.columns for n in report.nodes} == {
        "bronze.address_validation_feed": ("address_line1",),
        "silver.addresses_validated": ("address_line1",),
    }
    assert report.exposures == []
    assert report.highest_criticality == "high"


def test_impact_of_the_vendor_country_skips_the_fraud_features(demo_catalog):
    report = impact(demo_catalog.lineage, "raw.address_validation_feed", column="country_code")
    assert {n.id: n.columns for n in report.nodes} == {
        "bronze.address_validation_feed": ("country_code",),
        "silver.addresses_validated": ("country_code",),
        "gold.shipping_dashboard_feed": ("destination_country",),
        "gold.late_shipments": ("destination_country",),  # through SELECT *
        "exposure.shipping_dashboard": (),
        "exposure.carrier_escalations": (),
    }


def test_impact_of_an_unknown_column_names_the_table_columns(demo_catalog):
    with pytest.raises(
        KeyError, match=re.escape("raw.address_validation_feed has no column 'nope'")
    ):
        impact(demo_catalog.lineage, "raw.address_validation_feed", column="nope")


# --- recovery paths in the metadata ---------------------------------------------------------------


def test_addresses_validated_has_the_customer_profile_alternate(demo_catalog):
    dataset = demo_catalog.datasets["silver.addresses_validated"]
    assert [(a.name, a.sql_path, a.upstream, a.cost) for a in dataset.alternates] == [
        (
            "from_customer_profiles",
            "sql/alternates/silver/addresses_validated_from_customers.sql",
            ("bronze.customers",),
            3.0,
        )
    ]
    # The alternate is a recovery path, not a dependency of the default build.
    assert dataset.upstream == ("bronze.address_validation_feed",)
    assert "bronze.customers" not in demo_catalog.lineage.upstream("silver.addresses_validated")


def test_customers_have_a_cross_region_replica(demo_catalog):
    replicas = demo_catalog.sources["customers"].replicas
    assert [(r.name, r.system, r.bucket, r.prefix, r.cost) for r in replicas] == [
        (
            "customers_us_east_replica",
            "s3_raw_replica",
            "theworldshop-raw-replica",
            "customers/",
            2.5,
        )
    ]
    assert "s3_raw_replica" in demo_catalog.systems


def test_the_pii_in_a_table_is_what_is_declared_or_arrives_unmasked(demo_catalog):
    """What check samples mask (checks/results.py): declared, or reached in the clear."""
    graph = demo_catalog.lineage
    assert "email_domain" in graph.pii_in("gold.fraud_features")  # declared nowhere there
    assert "email_sha256" not in graph.pii_in("gold.customer_ltv")  # hashed on the way
    assert graph.pii_in("silver.customers_clean") >= {"email", "phone"}
    assert graph.pii_in("gold.revenue_by_region") == frozenset()
