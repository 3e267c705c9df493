"""medallion_assets: a metadata-driven medallion ETL as a Dagster code location on Spark.

The pure core (``catalog``, ``lineage``, ``planner``) imports neither Dagster nor Spark.
"""

__version__ = "0.1.0"
