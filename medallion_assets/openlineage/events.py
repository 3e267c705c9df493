"""OpenLineage's view of the catalog: dataset names, jobs, column lineage and design-time events.

Pure (no Dagster, no Spark): the runtime's events (``adapters/openlineage_events.py``) and
``medallion lineage export --format openlineage`` build on these with the openlineage-python
client's own models, so what leaves the pipeline has the spec's shape.

Names follow the OpenLineage naming spec:

- a raw source is an S3 prefix: namespace ``s3://<bucket>``, name ``<prefix>`` (no slashes at
  either end);
- a lake table is its folder: namespace ``file``, name the folder's absolute path, with a
  ``symlinks`` facet naming the logical table (``bronze.orders``) in the job namespace;
- a warehouse table: ``postgres://<host>:<port>`` or ``redshift://<cluster>.<region>:<port>``
  with ``<database>.<schema>.<table>``; DuckDB (not in the spec) ``duckdb://<file>`` with
  ``<schema>.<table>``.

Each table is one job, named after the table, in the job namespace (``OPENLINEAGE_NAMESPACE``,
else ``medallion``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from openlineage.client.event_v2 import InputDataset, Job, JobEvent, OutputDataset, set_producer
from openlineage.client.facet_v2 import (
    DatasetFacet,
    JobFacet,
    OutputDatasetFacet,
    column_lineage_dataset,
    documentation_dataset,
    job_type_job,
    schema_dataset,
    sql_job,
    symlinks_dataset,
)

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.lineage.graph import ColumnEdge

PRODUCER = "https://github.com/medallion-assets/medallion_assets"
RAW = "raw."

# the lineage engine's transforms as OpenLineage's (type, subtype, masking)
TRANSFORMATIONS: dict[str, tuple[str, str, bool]] = {
    "direct": ("DIRECT", "IDENTITY", False),
    "star": ("DIRECT", "IDENTITY", False),
    "expression": ("DIRECT", "TRANSFORMATION", False),
    "aggregate": ("DIRECT", "AGGREGATION", False),
    "masked": ("DIRECT", "TRANSFORMATION", True),
    "constant": ("DIRECT", "TRANSFORMATION", False),
}


@dataclass(frozen=True)
class DatasetName:
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Naming:
    """Where things live, for their OpenLineage names: the job namespace, the lake's warehouse
    (a folder, or ``s3://bucket/prefix``) and the warehouse's namespace and name prefix
    (``warehouse_naming``)."""

    job_namespace: str
    lake_root: Path | str
    warehouse_namespace: str | None = None
    warehouse_prefix: str = ""  # "<database>." where the spec names one


def warehouse_naming(url: str) -> tuple[str, str]:
    """(namespace, name prefix) of the warehouse at ``url``, per the naming spec.

    >>> warehouse_naming("postgresql://u:secret@db.example:5433/analytics")
    ('postgres://db.example:5433', 'analytics.')
    >>> warehouse_naming("redshift://u@shop.abc123.eu-west-1.redshift.amazonaws.com:5439/dev")
    ('redshift://shop.eu-west-1:5439', 'dev.')
    >>> warehouse_naming("duckdb:///var/lib/medallion/warehouse.duckdb")
    ('duckdb:///var/lib/medallion/warehouse.duckdb', '')
    """
    parts = urlsplit(url)
    scheme = parts.scheme.split("+")[0]
    if scheme in ("postgres", "postgresql"):
        port = parts.port or 5432
        return f"postgres://{parts.hostname}:{port}", f"{parts.path.strip('/') or 'postgres'}."
    if scheme == "redshift":
        host = parts.hostname or ""
        labels = host.split(".")
        if host.endswith(".redshift.amazonaws.com") and len(labels) >= 3:
            host = f"{labels[0]}.{labels[2]}"
        return f"redshift://{host}:{parts.port or 5439}", f"{parts.path.strip('/') or 'dev'}."
    path = url.split("://", 1)[1] if "://" in url else url
    return f"duckdb://{Path(path).resolve() if path != ':memory:' else path}", ""


def dataset_name(catalog: Catalog, node: str, naming: Naming) -> DatasetName:
    """The OpenLineage name of a lineage node: ``raw.<source>`` or a table."""
    if node.startswith(RAW):
        source = catalog.sources[node[len(RAW) :]]
        return DatasetName(f"s3://{source.bucket}", source.prefix.strip("/"))
    layer, table = node.split(".", 1)
    root = str(naming.lake_root).removeprefix("file:")
    if root.startswith(("s3://", "s3a://")):  # an Iceberg table's location under the warehouse
        bucket, _, prefix = root.split("://", 1)[1].partition("/")
        return DatasetName(f"s3://{bucket}", "/".join(p for p in (prefix, layer, table) if p))
    return DatasetName("file", str((Path(root) / layer / table).resolve()))


def warehouse_name(dataset: Dataset, naming: Naming) -> DatasetName | None:
    if dataset.target is None or naming.warehouse_namespace is None:
        return None
    return DatasetName(
        naming.warehouse_namespace, naming.warehouse_prefix + dataset.target.warehouse_table
    )


def symlink(table: str, naming: Naming) -> symlinks_dataset.SymlinksDatasetFacet:
    """The logical table behind a lake folder."""
    return symlinks_dataset.SymlinksDatasetFacet(
        identifiers=[symlinks_dataset.Identifier(naming.job_namespace, table, "TABLE")]
    )


def column_lineage(
    catalog: Catalog, table: str, naming: Naming
) -> column_lineage_dataset.ColumnLineageDatasetFacet | None:
    """The lineage engine's column edges into ``table`` as a ``columnLineage`` facet; each
    input field's transformation carries the engine's transform name as its description."""
    edges = catalog.lineage.columns_in(table)
    if not edges:
        return None
    by_column: dict[str, list[ColumnEdge]] = {}
    for edge in edges:
        by_column.setdefault(edge.target[len(table) + 1 :], []).append(edge)
    fields = {}
    for column, into in sorted(by_column.items()):
        inputs = []
        for edge in sorted(into, key=lambda e: e.source):
            node, field = edge.source.rsplit(".", 1)
            name = dataset_name(catalog, node, naming)
            kind, subtype, masking = TRANSFORMATIONS.get(edge.transform, TRANSFORMATIONS["direct"])
            step = column_lineage_dataset.Transformation(
                type=kind, subtype=subtype, description=edge.transform, masking=masking
            )
            inputs.append(
                column_lineage_dataset.InputField(name.namespace, name.name, field, [step])
            )
        fields[column] = column_lineage_dataset.Fields(inputFields=inputs)
    return column_lineage_dataset.ColumnLineageDatasetFacet(fields=fields)


def column_edges(
    facet: Mapping[str, Any], names: Mapping[str, str], table: str
) -> set[tuple[str, str, str | None]]:
    """(source "node.column", target "table.column", transform) of a ``columnLineage`` facet
    as JSON, with ``names`` mapping "namespace/name" back to lineage nodes: the inverse of
    ``column_lineage``, for comparing an event with ``medallion lineage``."""
    found = set()
    for column, spec in facet.get("fields", {}).items():
        for field in spec["inputFields"]:
            node = names[f"{field['namespace']}/{field['name']}"]
            for step in field.get("transformations") or [{}]:
                found.add(
                    (f"{node}.{field['field']}", f"{table}.{column}", step.get("description"))
                )
    return found


def table_job(dataset: Dataset, naming: Naming, with_sql: bool = True) -> Job:
    """The job that builds ``dataset``: its SQL and its type."""
    set_producer(PRODUCER)  # the facets made from here on are this project's
    facets: dict[str, JobFacet] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="MEDALLION", jobType="TABLE"
        )
    }
    if with_sql and dataset.sql:
        facets["sql"] = sql_job.SQLJobFacet(query=dataset.sql, dialect=dataset.dialect or "spark")
    return Job(namespace=naming.job_namespace, name=dataset.name, facets=facets)


def declared_schema(dataset: Dataset) -> schema_dataset.SchemaDatasetFacet | None:
    """The columns the lineage engine knows ``dataset`` to have, with their types where the SQL
    or the source's declaration gives one."""
    columns = [c for c in dataset.columns if c.column != "*"]
    if not columns:
        return None
    return schema_dataset.SchemaDatasetFacet(
        fields=[
            schema_dataset.SchemaDatasetFacetFields(name=c.column, type=c.type or None)
            for c in columns
        ]
    )


def input_nodes(catalog: Catalog, table: str) -> list[str]:
    """The lineage nodes ``table`` reads (raw sources and tables), in name order."""
    return sorted(catalog.lineage.dag.parents(table))


def static_events(
    catalog: Catalog, naming: Naming, tables: Iterable[str] | None = None
) -> list[JobEvent]:
    """Design-time events, one job per table with its inputs, outputs (the lake table, and the
    warehouse table it loads) and their column lineage, for Marquez or DataHub to load before
    anything runs."""
    now = datetime.now(UTC).isoformat()
    events = []
    for table in sorted(tables if tables is not None else catalog.datasets):
        dataset = catalog.datasets[table]
        inputs = [
            InputDataset(name.namespace, name.name)
            for name in (dataset_name(catalog, n, naming) for n in input_nodes(catalog, table))
        ]
        events.append(
            JobEvent(
                eventTime=now,
                job=table_job(dataset, naming),
                inputs=inputs,
                outputs=outputs_of(catalog, dataset, naming, declared_schema(dataset)),
                producer=PRODUCER,
            )
        )
    return events


def outputs_of(
    catalog: Catalog,
    dataset: Dataset,
    naming: Naming,
    schema: schema_dataset.SchemaDatasetFacet | None,
    facets: Mapping[str, DatasetFacet] | None = None,
    output_facets: Mapping[str, OutputDatasetFacet] | None = None,
) -> list[OutputDataset]:
    """The lake table (with ``facets`` and ``output_facets``) and the warehouse table it loads,
    each with its schema and column lineage."""
    lake = dataset_name(catalog, dataset.name, naming)
    shared: dict[str, DatasetFacet] = {"symlinks": symlink(dataset.name, naming)}
    if schema is not None:
        shared["schema"] = schema
    lineage = column_lineage(catalog, dataset.name, naming)
    if lineage is not None:
        shared["columnLineage"] = lineage
    outputs = [
        OutputDataset(
            lake.namespace,
            lake.name,
            facets={**shared, **(facets or {})},
            outputFacets=dict(output_facets or {}),
        )
    ]
    warehouse = warehouse_name(dataset, naming)
    if warehouse is not None:
        wh: dict[str, DatasetFacet] = {k: v for k, v in shared.items() if k != "symlinks"}
        wh["documentation"] = documentation_dataset.DocumentationDatasetFacet(
            description=f"{dataset.name} loaded into the warehouse"
        )
        outputs.append(OutputDataset(warehouse.namespace, warehouse.name, facets=wh))
    return outputs


def node_names(catalog: Catalog, naming: Naming) -> dict[str, str]:
    """ "namespace/name" -> lineage node, for every source and table."""
    nodes: Sequence[str] = [*(RAW + s for s in catalog.sources), *catalog.datasets]
    return {dataset_name(catalog, n, naming).key: n for n in nodes}
