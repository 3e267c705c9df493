"""The lake as Apache Iceberg tables in one catalog: where the catalog and warehouse are
(``catalog``), and what Spark does with a table (``tables``: staged writes, publish, history,
rollback, expiry)."""

from medallion_assets.lake.iceberg import Lake
from medallion_assets.lake.records import OldLakeLayout, Produced, StagedWrite
from medallion_assets.lake.versions import Version

__all__ = ["Lake", "OldLakeLayout", "Produced", "StagedWrite", "Version"]
