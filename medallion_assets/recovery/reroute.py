"""Where a table is read from: its primary path, its source's replicas, its alternate producers.

A bronze table reads its raw source from the source's bucket; when that bucket is unreachable
it can read a replica of it (``sources.yaml: replicas``). Any table can instead be built by an
alternate producer (``datasets.yaml: alternates``): another SQL file reading other inputs. Each
has a cost; the primary path costs 1. ``routes`` lists them cheapest first (the primary always
first), and ``next_route`` is where a reroute goes from the route in force: the next one in that
order, so a chain of failures walks every route once and then stops. Pure: no I/O.

    routes(catalog, catalog.datasets["bronze.customers"])
    # (Route("primary", ...), Route("customers_us_east_replica", "replica", 2.5, ...))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from medallion_assets.catalog import AlternateProducer, Catalog, Dataset
from medallion_assets.catalog.datasets import code_version
from medallion_assets.catalog.sources import Replica

PRIMARY = "primary"


@dataclass(frozen=True)
class Route:
    name: str  # "primary", a replica's name or an alternate's name
    kind: str  # primary | replica | alternate | backup
    cost: float
    detail: str  # where it reads: "s3://bucket/prefix (system)" or the alternate's SQL file
    replica: Replica | None = None
    alternate: AlternateProducer | None = None

    def describe(self) -> str:
        return f"{self.name} ({self.kind}, cost {self.cost:g}): {self.detail}"


def routes(catalog: Catalog, dataset: Dataset) -> tuple[Route, ...]:
    """Every route of ``dataset``, the primary first, then the others by cost (then name)."""
    primary = Route(PRIMARY, PRIMARY, 1.0, dataset.sql_path)
    others: list[Route] = []
    raw = catalog.raw_sources(dataset)
    if len(raw) == 1:
        source = raw[0][1]
        where = f"s3://{source.bucket}/{source.prefix} ({source.system})"
        primary = Route(PRIMARY, PRIMARY, 1.0, where)
        others += [
            Route(r.name, "replica", r.cost, f"s3://{r.bucket}/{r.prefix} ({r.system})", replica=r)
            for r in source.replicas
        ]
    others += [Route(a.name, a.kind, a.cost, a.sql_path, alternate=a) for a in dataset.alternates]
    return (primary, *sorted(others, key=lambda r: (r.cost, r.name)))


def find_route(catalog: Catalog, dataset: Dataset, name: str) -> Route | None:
    return next((r for r in routes(catalog, dataset) if r.name == name), None)


def next_route(options: Sequence[Route], current: str) -> Route | None:
    """The route after ``current`` in cost order; None when ``current`` is the last one. An
    unknown ``current`` (a route removed from metadata) counts as the primary."""
    names = [r.name for r in options]
    position = names.index(current) if current in names else 0
    return options[position + 1] if position + 1 < len(options) else None


def along(dataset: Dataset, route: Route) -> Dataset:
    """The dataset as built along ``route``: an alternate's SQL and inputs, with a code version
    of its own so a version built one way is never reused as the other. A replica changes only
    where ingest reads, so the dataset itself is unchanged."""
    alternate = route.alternate
    if alternate is None:
        return dataset
    return replace(
        dataset,
        sql_path=alternate.sql_path,
        sql=alternate.sql,
        dialect=alternate.dialect,
        upstream=alternate.upstream,
        code_version=code_version(dataset.code_version, "alternate", alternate.name, alternate.sql),
    )
