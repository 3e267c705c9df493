"""A table as a dev environment builds it: its warehouse load into the environment's schema, or
none; never the table main's runs load."""

from __future__ import annotations

import pytest

from medallion_assets.environments.scope import in_env
from medallion_assets.lake.env_refs import BadEnvName


def test_a_gold_tables_load_goes_to_the_environments_schema_or_nowhere(demo_catalog):
    dataset = demo_catalog.datasets["gold.revenue_by_region"]
    assert (
        dataset.target is not None and dataset.target.warehouse_table == "finance.revenue_by_region"
    )
    moved = in_env(dataset, "dev_anna", "schema")
    assert moved.target.warehouse_table == "finance_env_dev_anna.revenue_by_region"
    assert (moved.target.mode, moved.target.keys) == (dataset.target.mode, dataset.target.keys)
    assert in_env(dataset, "dev_anna", "none").target is None
    silver = demo_catalog.datasets["silver.products"]
    assert in_env(silver, "dev_anna", "schema") is silver


def test_a_name_that_cannot_name_a_branch_is_refused_in_one_line(demo_catalog):
    with pytest.raises(BadEnvName, match="environment name 'Dev Anna'"):
        in_env(demo_catalog.datasets["gold.revenue_by_region"], "Dev Anna", "schema")
