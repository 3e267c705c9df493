"""The lake as Apache Iceberg tables in one catalog: where the catalog and warehouse are
(``catalog``), and what Spark does with a table (``tables``: staged writes, publish, history,
rollback, expiry)."""
