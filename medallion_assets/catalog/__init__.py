"""The metadata catalog: load and validate a project into one frozen ``Catalog``.

No Dagster and no Spark here: the catalog imports in milliseconds and is tested without servers.
"""

from medallion_assets.catalog.catalog import AlternateProducer, Catalog, Dataset
from medallion_assets.catalog.errors import CatalogError, CatalogIssue
from medallion_assets.catalog.loader import load_catalog

__all__ = [
    "AlternateProducer",
    "Catalog",
    "CatalogError",
    "CatalogIssue",
    "Dataset",
    "load_catalog",
]
