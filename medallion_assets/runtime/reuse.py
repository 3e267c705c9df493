"""Whether a table's current version can be reused: the inputs a build of it records, and the
decision, made without Spark.

A version records the code and the inputs it was built from (``Produced``); the lake reuses it
when a build would record the same and the version is still what was published
(``Lake.reusable``). Bronze's inputs are digests of its source's manifest (and evolved
columns); a SQL table's, the version of every table it reads (and, for a MERGE, its own, which
does not count: a MERGE whose code and sources are unchanged has nothing new to apply).

``ingest`` and ``build_table`` decide with these as they run; ``TableRunner.unchanged`` asks
the same questions ahead of a whole run, with nothing opened and nothing written, so a run
with nothing new need not start one step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.runtime.ingest.intake import new_objects, readable_entries
from medallion_assets.runtime.ingest.schema_drift import evolved_columns, evolved_digest
from medallion_assets.runtime.ingest.source_objects import (
    manifest_digest,
    missing_at_source,
    source_of,
    source_prefix,
)

if TYPE_CHECKING:
    from medallion_assets.lake import Lake, Version
    from medallion_assets.runtime.table_run import TableRun


class MissingInput(RuntimeError):
    """An upstream table has no published version yet (``table`` names it)."""

    def __init__(self, message: str, table: str = ""):
        super().__init__(message)
        self.table = table


def ingest_inputs(
    source: str, manifest: Mapping[str, Any], evolved: Sequence[tuple[str, str]]
) -> dict[str, str]:
    """What a bronze version built from ``manifest``'s readable objects (with ``evolved``
    columns) records as its inputs."""
    inputs = {f"raw.{source}": manifest_digest(readable_entries(manifest))}
    if evolved:
        inputs[f"raw.{source}#evolved"] = evolved_digest(evolved)
    return inputs


def reused_ingest(run: TableRun, listed: Sequence[Any]) -> Version | None:
    """The bronze version ``run`` would keep, its source listing ``listed`` (the primary's
    objects under the run's prefix): none landed, changed or went missing since the manifest,
    and the version was built from it by this code. None when the ingest would do anything."""
    name, _source = source_of(run.catalog, run.dataset)
    state = run.state
    manifest = state.manifest(name, run.partition)
    keyed = {o.key: o for o in listed if not o.key.endswith("/")}
    if run.rebuild or missing_at_source(manifest, keyed) or new_objects(keyed, manifest):
        return None
    inputs = ingest_inputs(name, manifest, evolved_columns(state, name, run.log.warn))
    dataset = run.dataset
    return run.lake.reusable(
        dataset.name, run.partition, dataset.code_version, inputs, say=run.log.warn
    )


def ingest_prefix(run: TableRun) -> tuple[str, str]:
    """(bucket, prefix) the primary source of ``run``'s bronze table lists for its day."""
    _name, source = source_of(run.catalog, run.dataset)
    return source.bucket, source_prefix(source, run.partition)


def reused_build(run: TableRun, sources: Mapping[str, str], merge: bool) -> Version | None:
    """The version of ``run``'s SQL table to keep: built by this code from ``sources`` (the
    upstream versions it would read now), and still what was published. A MERGE's own version
    does not count. None when the table is to be built (or ``run.rebuild`` asks for it)."""
    if run.rebuild:
        return None
    dataset = run.dataset
    own = dataset.name if merge else None
    return run.lake.reusable(
        dataset.name, run.partition, dataset.code_version, sources, own, say=run.log.warn
    )


def input_versions(
    lake: Lake, catalog: Catalog, dataset: Dataset, partition: str | None
) -> dict[str, str]:
    """The version of every upstream table this build would read."""
    versions: dict[str, str] = {}
    for upstream in dataset.upstream:
        if upstream.startswith("raw."):
            continue  # only bronze reads raw; the ingest step tracks objects instead
        versions[upstream] = _upstream_version(lake, catalog, dataset, upstream, partition)
    return versions


def _upstream_version(
    lake: Lake, catalog: Catalog, dataset: Dataset, upstream: str, partition: str | None
) -> str:
    if lake.is_partitioned(upstream):
        keys = (
            [partition]
            if same_partitions(catalog, dataset, upstream)
            else lake.partitions(upstream)
        )
        found = [(k, lake.current(upstream, k)) for k in keys if k is not None]
        missing = [k for k, v in found if v is None]
        if missing or not found:
            raise MissingInput(
                f"{upstream} has no published version for partition(s) "
                f"{', '.join(str(k) for k in missing) or '(none)'}: materialize it first",
                upstream,
            )
        joined = ",".join(f"{k}={v.version_id}" for k, v in found if v is not None)
        return hashlib.sha256(joined.encode()).hexdigest()[:16] if len(found) > 1 else joined
    current = lake.current(upstream)
    if current is None:
        raise MissingInput(f"{upstream} has no published version: materialize it first", upstream)
    return current.version_id


def same_partitions(catalog: Catalog, dataset: Dataset, upstream: str) -> bool:
    """A daily dataset reading a daily upstream reads the same day (identity mapping)."""
    mine = dataset.settings.partitions
    theirs = (
        catalog.datasets[upstream].settings.partitions if upstream in catalog.datasets else None
    )
    return mine is not None and theirs is not None
