"""A table as a dev environment builds it: its warehouse load goes to a schema of the
environment's (``<schema>_env_<name>``; a bare table into ``env_<name>``), or nowhere
(``MEDALLION_ENV_WAREHOUSE=none``), never into the tables ``main``'s runs load.

>>> from medallion_assets.catalog.models import Target
>>> env_table("analytics.sales", "tidy"), env_table("sales", "tidy")
('analytics_env_tidy.sales', 'env_tidy.sales')
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from medallion_assets.catalog import Dataset
from medallion_assets.lake.env_refs import ENV_PREFIX, check_env_name


def env_table(warehouse_table: str, env: str) -> str:
    schema, _, name = warehouse_table.rpartition(".")
    return f"{schema}_{ENV_PREFIX}{env}.{name}" if schema else f"{ENV_PREFIX}{env}.{name}"


def in_env(dataset: Dataset, env: str, warehouse: Literal["schema", "none"]) -> Dataset:
    """``dataset`` as environment ``env`` builds it."""
    check_env_name(env)
    target = dataset.target
    if target is None:
        return dataset
    if warehouse == "none":
        return replace(dataset, target=None)
    moved = target.model_copy(update={"warehouse_table": env_table(target.warehouse_table, env)})
    return replace(dataset, target=moved)
