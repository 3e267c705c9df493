"""Launch a backfill the way the UI does: one Dagster asset-selection backfill on the project
instance, which ``dagster dev``'s daemon runs (a run per day) and shows under Backfills."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.dagster_internals import PartitionBackfill, make_new_backfill_id
from medallion_assets.adapters.instance import project_instance
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import Catalog

BACKFILL_TAG = "medallion/backfill"


def launch_backfill(
    catalog: Catalog,
    project_root: Path,
    tables: Sequence[str],
    partitions: Sequence[str],
    tags: Mapping[str, str],
    title: str,
) -> str:
    """Add the backfill of ``tables`` over ``partitions`` (their days; empty: tables without
    days only) to the project instance; returns its id. The daemon launches its runs."""
    definitions = definitions_for(catalog, DatasetTranslator(catalog))
    with project_instance(project_root, os.environ, catalog.profiles) as instance:
        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id=make_new_backfill_id(),
            asset_graph=definitions.resolve_asset_graph(),
            partition_names=list(partitions) or None,
            asset_selection=[table_key(t) for t in tables],
            backfill_timestamp=time.time(),
            tags={**tags, BACKFILL_TAG: "medallion backfill"},
            dynamic_partitions_store=instance,
            # Tables without days only: Dagster targets each once ("all" of no partitions).
            all_partitions=not partitions,
            title=title,
            description=None,
            run_config=None,
        )
        instance.add_backfill(backfill)
    return backfill.backfill_id
