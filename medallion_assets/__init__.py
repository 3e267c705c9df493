"""medallion_assets: a metadata-driven medallion ETL as a Dagster code location on Spark.

The pure core (``catalog``, ``lineage`` and the operator features' decisions) imports neither
Dagster nor Spark; ``docs/layout.md`` walks the folders from the bottom up.
"""

__version__ = "0.1.0"
