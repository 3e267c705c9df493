"""The versions of lake tables, read from the catalog without a JVM (pyiceberg): what is
current, what produced it, and each table's history. Spark writes; this only reads, so the CLI,
the checks and other engines' tests see the same commits Spark made.

A version is a snapshot whose summary carries ``medallion.*`` (``lake.tables`` writes them):
``run-id``, ``code-version``, ``inputs`` (JSON: input table -> the version read), ``partition``
and ``rows``. A daily table's day is current at the snapshot its ``medallion_day_<day>`` tag
names; any other table's is ``main``'s head (or, when that head is a cherry-picked copy, the
snapshot it was copied from).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from medallion_assets.credentials import mask_credentials
from medallion_assets.lake.catalog import SPARK_CATALOG, LakeCatalog, LakeCatalogError
from medallion_assets.lake.env_refs import env_branch, env_day_prefix, env_day_tag
from medallion_assets.lake.repair import lost_metadata
from medallion_assets.lake.tables import DAY_TAG, SUMMARY_PREFIX, day_tag

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.types import NestedField


@dataclass(frozen=True)
class Version:
    """One published version of a table (or of one day of it)."""

    table: str
    partition: str | None
    version_id: str  # the snapshot id holding the medallion summary
    code_version: str
    inputs: dict[str, str]
    rows: int
    created_at: float
    run_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    shape: str = ""  # the SQL's fingerprints it was built from (lineage.shape), JSON
    drops: tuple[str, ...] = ()  # a dev environment's: columns kept NULL until it is promoted
    files_bytes: int = 0  # the table's data files after this snapshot (its summary's size)


@dataclass(frozen=True)
class HistoryEntry:
    """One snapshot of the table, newest first in ``history``: ``main``'s, or with ``every`` also
    those rolled away from or held by another ref (a day's tag, a staging branch)."""

    snapshot_id: int
    committed_at: float
    operation: str
    rows: int  # the table's rows after it (``table_rows``)
    run_id: str
    code_version: str
    partition: str | None
    current: bool
    on_main: bool = True  # False: rolled away from, or never published (a staged write)
    refs: tuple[str, ...] = ()  # the tags and branches other than main that point at it

    def as_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "committed_at": self.committed_at,
            "operation": self.operation,
            "rows": self.rows,
            "run_id": self.run_id,
            "code_version": self.code_version,
            "partition": self.partition,
            "current": self.current,
            "on_main": self.on_main,
            "refs": list(self.refs),
        }


def open_catalog(lake: LakeCatalog) -> Catalog:
    """The lake's catalog for pyiceberg, under the name Spark uses for it; a catalog that
    cannot be reached is a ``LakeCatalogError`` naming it (without its password)."""
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    from pyiceberg.catalog import load_catalog

    try:
        catalog = load_catalog(SPARK_CATALOG, **lake.pyiceberg_properties())
        catalog.list_namespaces()  # reach it now: a catalog that is down is said here
    except Exception as error:  # SQLAlchemy's, pyiceberg's or the REST client's own errors
        if not _no_tables_yet(error):
            raise _unreachable(lake.uri or lake.kind, error) from None
    return catalog


def _no_tables_yet(error: BaseException) -> bool:
    """Whether ``error`` says the catalog's own tables are not there (yet): a JDBC catalog
    Spark has not written a table to yet (it makes them; pyiceberg's would lack a column), or
    one Spark is making right now (Iceberg creates ``iceberg_tables``, then adds the column
    ``iceberg_type`` of its V1 schema: a reader in between finds no such column)."""
    text = str(error)
    missing = ("no such table", "no such column", "does not exist")
    return "iceberg_" in text and any(words in text for words in missing)


def namespaces(catalog: Catalog) -> list[tuple[str, ...]]:
    """The catalog's namespaces ([] while Spark has not made its tables yet); a catalog that
    cannot be used is a ``LakeCatalogError``."""
    try:
        return list(catalog.list_namespaces())
    except Exception as error:  # SQLAlchemy's, pyiceberg's or the REST client's own errors
        if _no_tables_yet(error):
            return []
        raise _unreachable(str(catalog.properties.get("uri", catalog.name)), error) from None


def load(catalog: Catalog, table: str) -> Table | None:
    """The table, or None when the lake has none of that name."""
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        return catalog.load_table(table)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    except Exception as error:
        if _no_tables_yet(error):
            return None
        lost = lost_metadata(table, error)  # the table's own file, not the catalog, is gone
        if lost is not None:
            raise lost from None
        raise _unreachable(str(catalog.properties.get("uri", catalog.name)), error) from None


_DAMAGED_SQLITE = re.compile(r"file is not a database|database disk image is malformed")


def _unreachable(where: str, error: BaseException) -> LakeCatalogError:

    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    text = text.split(") ", 1)[-1] if text.startswith("(") else text  # SQLAlchemy's "(driver)"
    if where.startswith("jdbc:sqlite:") and _DAMAGED_SQLITE.search(text):
        # No server to bring up: the file itself is broken. The tables' data and metadata
        # files in the lake are untouched, and Iceberg can register each from them again.
        path = where.removeprefix("jdbc:sqlite:")
        return LakeCatalogError(
            f"the lake's catalog file {path} is damaged ({text}): restore it from a backup; or "
            "move it aside, and either run `medallion run` to rebuild every table from raw, or "
            "register each table again from its newest metadata file in the lake (Spark SQL: "
            "CALL lake.system.register_table('layer.table', "
            "'<lake>/layer/table/metadata/<newest>.metadata.json'))"
        )
    return LakeCatalogError(
        f"the lake's catalog {mask_credentials(where)} cannot be used: {mask_credentials(text)}; "
        "check MEDALLION_LAKE_CATALOG and that the catalog's server is up"
    )


def current(catalog: Catalog, table: str, partition: str | None = None) -> Version | None:
    """The version readers of ``main`` see (of one day of a daily table), if any."""
    loaded = load(catalog, table)
    return current_in(loaded, table, partition) if loaded is not None else None


def current_in(
    loaded: Table, table: str, partition: str | None = None, env: str | None = None
) -> Version | None:
    """``current`` of a table already loaded (a caller asking for many days loads it once).
    In environment ``env``: the environment's version where it built one, else ``main``'s."""
    snapshot = in_force(loaded, partition, env)
    if partition is None:  # a cherry-picked head: the staged snapshot holds the summary
        snapshot = versioned(loaded, snapshot)
    return version_of(table, snapshot) if snapshot is not None else None


def in_force(
    loaded: Table, partition: str | None = None, env: str | None = None
) -> Snapshot | None:
    """The snapshot readers see of the table (its day's tag, for ``partition``): in
    environment ``env``, the environment's branch or day tag where it has one, else ``main``'s."""
    refs = loaded.metadata.refs
    if partition is None:
        ref = refs.get(env_branch(env)) if env else None
        return (
            loaded.snapshot_by_id(ref.snapshot_id) if ref is not None else loaded.current_snapshot()
        )
    ref = (refs.get(env_day_tag(env, partition)) if env else None) or refs.get(day_tag(partition))
    return loaded.snapshot_by_id(ref.snapshot_id) if ref is not None else None


def written_fields(loaded: Table, snapshot_ids: Iterable[int]) -> dict[int, NestedField]:
    """The columns (by field id) of the schemas these snapshots were written with."""
    schemas = loaded.schemas()
    found: dict[int, NestedField] = {}
    for snapshot_id in snapshot_ids:
        snapshot = loaded.snapshot_by_id(snapshot_id)
        schema_id = snapshot.schema_id if snapshot is not None else None
        schema = schemas.get(schema_id) if schema_id is not None else None
        if schema is not None:
            found |= {f.field_id: f for f in schema.fields}
    return found


def partitions(catalog: Catalog, table: str) -> list[str]:
    """The days of a daily table with a published version."""
    loaded = load(catalog, table)
    return partitions_in(loaded) if loaded is not None else []


def partitions_in(loaded: Table, env: str | None = None) -> list[str]:
    """``partitions`` of a table already loaded (in environment ``env``: its days too)."""
    prefixes = (DAY_TAG, env_day_prefix(env)) if env else (DAY_TAG,)
    found = set()
    for name, ref in loaded.metadata.refs.items():
        if name.startswith(prefixes):
            snapshot = loaded.snapshot_by_id(ref.snapshot_id)
            day = _summary(snapshot).get("partition") if snapshot is not None else None
            if day:
                found.add(day)
    return sorted(found)


def history(catalog: Catalog, table: str, every: bool = False) -> list[HistoryEntry]:
    """``main``'s snapshots, newest first (those not yet expired); ``every``: every snapshot the
    table's metadata still holds, those rolled away from too."""
    loaded = load(catalog, table)
    if loaded is None:
        return []
    head = loaded.current_snapshot()
    main = list(ancestors(loaded, head))
    on_main = {s.snapshot_id for s in main}
    held: dict[int, list[str]] = {}
    for name, ref in loaded.metadata.refs.items():
        if name != "main":
            held.setdefault(ref.snapshot_id, []).append(name)
    # A staged snapshot main took a copy of (cherry-pick) is that version, not another one.
    copied = {getattr(versioned(loaded, s), "snapshot_id", None) for s in main} - on_main
    chosen = (
        [s for s in loaded.metadata.snapshots if s.snapshot_id not in copied] if every else main
    )
    chosen.sort(key=lambda s: -s.timestamp_ms)
    entries = []
    for snapshot in chosen:
        source = versioned(loaded, snapshot)
        summary = _summary(source) if source is not None else {}
        totals = _properties(snapshot)
        entries.append(
            HistoryEntry(
                snapshot.snapshot_id,
                snapshot.timestamp_ms / 1000,
                str(snapshot.summary.operation.value) if snapshot.summary else "",
                table_rows(totals),
                summary.get("run-id", ""),
                summary.get("code-version", ""),
                summary.get("partition"),
                head is not None and snapshot.snapshot_id == head.snapshot_id,
                snapshot.snapshot_id in on_main,
                tuple(sorted(held.get(snapshot.snapshot_id, ()))),
            )
        )
    return entries


def read(catalog: Catalog, table: str, snapshot_id: int | None = None) -> pa.Table:
    """The table's rows (at ``snapshot_id``), read by pyiceberg through pyarrow."""
    loaded = load(catalog, table)
    if loaded is None:
        raise LookupError(f"the lake has no table {table}")
    return loaded.scan(snapshot_id=snapshot_id).to_arrow()


class Recorded(Protocol):
    """What a version records of how it was built (the lake's ``Version``, and the folder
    layout's ``TableVersion`` until it goes)."""

    @property
    def code_version(self) -> str: ...

    @property
    def inputs(self) -> dict[str, str]: ...


def built_from(
    version: Recorded, code_version: str, inputs: Mapping[str, str], ignoring: str | None = None
) -> bool:
    """Whether ``version`` was built from this code and these inputs, ``ignoring`` one recorded
    input (a MERGE table's own previous version): then there is nothing to recompute.

    >>> built_from(Version("t", None, "1", "c", {"a": "9", "t": "0"}, 1, 0.0), "c", {"a": "9"}, "t")
    True
    """
    if version.code_version != code_version:
        return False
    recorded = {k: v for k, v in version.inputs.items() if k != ignoring}
    return recorded == dict(inputs)


def version_of(table: str, snapshot: Snapshot) -> Version | None:
    """The version a snapshot's summary records, or None for a snapshot medallion did not
    write (a table's empty first snapshot, another engine's commit)."""
    summary = _summary(snapshot)
    if "code-version" not in summary:
        return None
    return Version(
        table,
        summary.get("partition") or None,
        str(snapshot.snapshot_id),
        summary["code-version"],
        json.loads(summary.get("inputs", "{}")),
        _rows(snapshot, summary),
        snapshot.timestamp_ms / 1000,
        summary.get("run-id", ""),
        json.loads(summary.get("extra", "{}")),
        summary.get("shape", ""),
        tuple(json.loads(summary.get("env-drops", "[]"))),
        _files_bytes(snapshot),
    )


def _properties(snapshot: Snapshot) -> dict[str, Any]:
    """Every property of a snapshot's summary (Iceberg's totals and medallion's own)."""
    return snapshot.summary.additional_properties if snapshot.summary else {}


def _rows(snapshot: Snapshot, summary: Mapping[str, str]) -> int:
    return snapshot_rows(_properties(snapshot), summary.get("partition") or None)


def _files_bytes(snapshot: Snapshot) -> int:
    try:
        return int(_properties(snapshot).get("total-files-size", 0))
    except ValueError:  # another engine's summary: the size is not known
        return 0


def _summary(snapshot: Snapshot) -> dict[str, str]:
    props = _properties(snapshot)
    return {
        k.removeprefix(SUMMARY_PREFIX): str(v)
        for k, v in props.items()
        if k.startswith(SUMMARY_PREFIX)
    }


def versioned(loaded: Table, snapshot: Snapshot | None) -> Snapshot | None:
    """The snapshot holding ``snapshot``'s medallion summary: itself, or the staged snapshot a
    cherry-picked copy was made from."""
    if snapshot is None:
        return None
    props = _properties(snapshot)
    source = props.get("source-snapshot-id")
    if f"{SUMMARY_PREFIX}code-version" not in props and source is not None:
        return loaded.snapshot_by_id(int(source)) or snapshot
    return snapshot


def ancestors(loaded: Table, head: Snapshot | None) -> Iterable[Snapshot]:
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    from pyiceberg.table.snapshots import ancestors_of

    if head is None:
        return ()
    return ancestors_of(head, loaded.metadata)


def snapshot_rows(summary: Mapping[str, str], partition: str | None) -> int:
    """The rows of the version a snapshot's summary describes: recorded (``medallion.rows``, a
    day's append), else what a day's overwrite added, else the table's rows after it.

    >>> snapshot_rows({"added-records": "5", "total-records": "30"}, "2026-01-02")
    5
    >>> snapshot_rows({"added-records": "5", "total-records": "30"}, None)
    30
    """
    if f"{SUMMARY_PREFIX}rows" in summary:
        return int(summary[f"{SUMMARY_PREFIX}rows"])
    if partition is not None:
        return int(summary.get("added-records", 0))
    return table_rows(summary)


def table_rows(summary: Mapping[str, str]) -> int:
    """The table's rows after the snapshot a summary describes. A merge-on-read write's
    deleted rows stay in the data files, named by position deletes, and ``total-records``
    counts them too.

    >>> table_rows({"total-records": "3", "total-position-deletes": "1"})
    2
    """
    return int(summary.get("total-records", 0)) - int(summary.get("total-position-deletes", 0))
