"""SQL lineage with sqlglot: table and column lineage, the DAG, impact, renderers, parse cache.

No Dagster and no Spark here. Entry points: ``scan.scan_directory`` for any folder of SQL,
``analysis.analyze`` for a set of files, ``graph.LineageGraph`` and ``impact.impact`` for
questions about a loaded project (``Catalog.lineage``).
"""
