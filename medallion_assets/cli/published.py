"""``catalog validate`` against the lake: the types of the tables already published, read from
a local lake's embedded catalog without Spark (``catalog/published_types.py`` judges them)."""

from __future__ import annotations

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.catalog.published_types import changed_types
from medallion_assets.settings import EMBEDDED_CATALOG, MedallionSettings


def published_type_issues(
    catalog: Catalog, settings: MedallionSettings
) -> tuple[list[CatalogIssue], str]:
    """The columns whose type changed against the published tables, and a note when the lake
    was not read (one on S3 or behind a shared catalog: `medallion run` reaches those)."""
    root = settings.lake_root
    if root is None or settings.lake_catalog:
        return [], "note: column types not compared with a shared or S3 lake (a local one only)"
    if not (root / EMBEDDED_CATALOG).is_file():
        return [], ""  # nothing published yet
    # pyiceberg: loaded only when there is a lake to read
    from medallion_assets.lake import Lake

    lake = Lake.of(settings)
    published = {name: lake.schema(name) for name in catalog.datasets}
    return changed_types(catalog.datasets, published), ""
