"""The steps' runtime state in the control store: throttle cuts, evolved source columns, ingest
manifests and the loads the warehouse committed.

Each change is one transaction with its audit entry, so ``medallion audit`` shows who or what
changed the state, and ``medallion control status`` shows what is in force::

    state = ControlStore.open(url).state
    state.cut_throttle("s3_raw", time.time(), "S3_THROTTLED", run_id)
    state.throttle_factor("s3_raw", time.time())  # 0.5 for the next hour
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select

from medallion_assets.control import schema
from medallion_assets.control.records import AuditEntry, iso_utc, utc_now

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from medallion_assets.control.engine import StoreWrites
    from medallion_assets.io.warehouse_load import LoadReport, LoadUnit

Manifest = dict[str, dict[str, Any]]  # object key (in the primary bucket) -> its entry


# reduce_parallelism: a temporary cut of a system's limits (throttles.throttle applies it)
REDUCTION_HOLD_SECONDS = 3600.0  # a cut lasts an hour after the last failure that asked for it
MIN_FACTOR = 0.125  # three halvings at most


@dataclass(frozen=True)
class EvolvedColumn:
    """A column evolve_schema added to a source: nullable, read by name."""

    name: str
    type: str = "string"
    evolved_at: float = 0.0
    run_id: str = ""
    files: tuple[str, ...] = ()  # the raw files that carried it first


@dataclass(frozen=True)
class ThrottleCut:
    """A system's limits scaled by ``factor`` from ``since`` until ``until`` (epoch seconds)."""

    system: str
    factor: float
    since: float
    until: float
    reason: str = ""
    run_id: str = ""

    def in_force(self, now: float) -> bool:
        return self.until >= now


@dataclass(frozen=True)
class ManifestSummary:
    """What one manifest (a source, or one partition of it) holds."""

    source: str
    partition: str | None
    objects: int
    last_ingested: float  # epoch seconds


@dataclass(frozen=True)
class LoadRecord:
    """One load the warehouse committed: a lake version of a table (partition) in its table."""

    dataset: str
    partition: str | None
    lake_version: str
    warehouse_table: str
    mode: str
    rows: int
    run_id: str
    loaded_at: str = ""  # ISO 8601, UTC

    @classmethod
    def committed(cls, unit: LoadUnit, report: LoadReport, warehouse_table: str) -> LoadRecord:
        """The record of ``unit`` loaded into ``warehouse_table`` as ``report`` says."""
        rows = unit.rows if unit.rows is not None else report.rows_staged
        return cls(
            unit.lake_table,
            unit.partition,
            unit.lake_version,
            warehouse_table,
            report.mode,
            rows,
            unit.run_id,
        )


def manifest_row(
    source: str, partition: str | None, key: str, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``ingest_manifest`` row of one object's entry."""
    return {
        "source": source,
        "partition": partition or "",
        "object_key": key,
        "etag": str(entry.get("etag", "")),
        "batch_id": str(entry.get("batch_id", "")),
        "ingested_at": float(entry.get("ingested_at", 0.0)),
        "entry": json.dumps(dict(entry), sort_keys=True, default=str),
    }


class RuntimeState:
    """The runtime state of one control store; see the module docstring."""

    def __init__(self, store: StoreWrites):
        self.store = store

    # --- throttle cuts (reduce_parallelism) ---------------------------------------------------

    def throttle_cuts(self) -> list[ThrottleCut]:
        """Every cut recorded, expired ones included, by system."""
        table = schema.throttle_cuts
        query = select(*schema.columns_for(table, ThrottleCut)).order_by(table.c.system)
        with self.store.transaction() as db:
            return [ThrottleCut(*row) for row in db.execute(query).all()]

    def throttle_factor(self, system: str, now: float) -> float:
        """The factor in force on ``system``'s limits at ``now`` (1.0 when none or expired)."""
        table = schema.throttle_cuts
        query = select(table.c.factor, table.c.until).where(table.c.system == system)
        with self.store.transaction() as db:
            row = db.execute(query).first()
        return float(row[0]) if row is not None and float(row[1]) >= now else 1.0

    def cut_throttle(self, system: str, now: float, reason: str, run_id: str = "") -> ThrottleCut:
        """Halve ``system``'s limits (down to ``MIN_FACTOR``) for ``REDUCTION_HOLD_SECONDS``
        from ``now``; a cut in force is halved again, an expired one starts over. Audited."""
        table = schema.throttle_cuts
        with self.store.transaction() as db:
            row = db.execute(
                select(table.c.factor, table.c.until).where(table.c.system == system)
            ).first()
            factor = float(row[0]) if row is not None and float(row[1]) >= now else 1.0
            cut = ThrottleCut(
                system,
                max(MIN_FACTOR, factor / 2),
                now,
                now + REDUCTION_HOLD_SECONDS,
                reason,
                run_id,
            )
            db.execute(self.store.upsert(table, vars(cut) | {"changed_at": iso_utc(now)}))
            self._audit(
                db,
                "throttle",
                f"system:{system}",
                f"limits of {system} cut to {cut.factor:g}x until {iso_utc(cut.until)}: {reason}",
                run_id,
                {"factor": cut.factor, "until": iso_utc(cut.until), "reason": reason},
            )
        return cut

    # --- evolved columns of sources (evolve_schema) -------------------------------------------

    def evolved(self, source: str | None = None) -> dict[str, list[EvolvedColumn]]:
        """Evolved columns by source (only ``source``'s when given), in the order added."""
        table = schema.evolved_columns
        query = select(
            table.c.source,
            table.c.name,
            table.c.type,
            table.c.evolved_at,
            table.c.run_id,
            table.c.files,
        ).order_by(table.c.source, table.c.position)
        if source is not None:
            query = query.where(table.c.source == source)
        found: dict[str, list[EvolvedColumn]] = {}
        with self.store.transaction() as db:
            for row in db.execute(query).all():
                column = EvolvedColumn(row[1], row[2], row[3], row[4], tuple(json.loads(row[5])))
                found.setdefault(row[0], []).append(column)
        return found

    def add_evolved(self, source: str, columns: Sequence[EvolvedColumn]) -> list[str]:
        """Add the columns the source does not have yet (names compare without case, as
        Spark's do); returns the names added. Audited when any is."""
        table = schema.evolved_columns
        with self.store.transaction() as db:
            rows = db.execute(
                select(table.c.name, table.c.position).where(table.c.source == source)
            ).all()
            have = {str(r[0]).lower() for r in rows}
            position = max((int(r[1]) for r in rows), default=-1)
            added = []
            for column in columns:
                if column.name.lower() in have:
                    continue
                have.add(column.name.lower())
                position += 1
                values = vars(column) | {"files": json.dumps(list(column.files))}
                db.execute(
                    self.store.upsert(table, values | {"source": source, "position": position})
                )
                added.append(column.name)
            if added:
                run_id = columns[0].run_id
                message = f"source {source}: evolved nullable string column(s) {', '.join(added)}"
                self._audit(db, "schema", f"source:{source}", message, run_id, {"added": added})
        return added

    def revert_evolved(
        self, source: str, names: Iterable[str] | None, reason: str = "", changed_by: str = ""
    ) -> list[str]:
        """Remove evolved columns (all when ``names`` is None); returns those removed, audited.
        ValueError naming the evolved columns when a name is not one of them."""
        table = schema.evolved_columns
        with self.store.transaction() as db:
            have = list(
                db.execute(
                    select(table.c.name).where(table.c.source == source).order_by(table.c.position)
                ).scalars()
            )
            wanted = have if names is None else list(dict.fromkeys(names))
            unknown = [n for n in wanted if n not in have]
            if unknown:
                raise ValueError(
                    f"source {source} has no evolved column(s) {', '.join(map(repr, unknown))}; "
                    f"its evolved columns are: {', '.join(map(repr, have)) or 'none'}"
                )
            if wanted:
                db.execute(delete(table).where(table.c.source == source, table.c.name.in_(wanted)))
                by = f" by {changed_by}" if changed_by else ""
                message = (
                    f"evolved column(s) {', '.join(wanted)} of source {source} reverted{by}: "
                    f"{reason or 'no reason given'}"
                )
                details = {"reverted": wanted, "reason": reason, "changed_by": changed_by}
                self._audit(db, "schema", f"source:{source}", message, "", details)
        return wanted

    # --- ingest manifests ---------------------------------------------------------------------

    def manifest(self, source: str, partition: str | None) -> Manifest:
        """Every object of the source (partition) ingested or set aside, with its entry."""
        table = schema.ingest_manifest
        query = select(table.c.object_key, table.c.entry).where(
            table.c.source == source, table.c.partition == (partition or "")
        )
        with self.store.transaction() as db:
            return {row[0]: json.loads(row[1]) for row in db.execute(query).all()}

    def save_manifest(
        self,
        source: str,
        partition: str | None,
        before: Mapping[str, Mapping[str, Any]],
        after: Mapping[str, Mapping[str, Any]],
        run_id: str = "",
    ) -> int:
        """Write the entries of ``after`` that differ from ``before`` (the manifest read at the
        start of the step) and drop those it no longer has, in one transaction; returns the
        entries written. A row per object: thousands of objects stay cheap to update."""
        table = schema.ingest_manifest
        changed = {k: e for k, e in after.items() if before.get(k) != e}
        gone = [k for k in before if k not in after]
        if not changed and not gone:
            return 0
        where = (table.c.source == source, table.c.partition == (partition or ""))
        with self.store.transaction() as db:
            if gone:
                db.execute(delete(table).where(*where, table.c.object_key.in_(gone)))
            rows = [manifest_row(source, partition, k, e) for k, e in changed.items()]
            self.store.upsert_many(db, table, rows)
            where_text = f" ({partition})" if partition else ""
            batches = sorted({str(e.get("batch_id", "")) for e in changed.values()} - {""})
            message = f"manifest of source {source}{where_text}: {len(changed)} object(s) recorded"
            details = {"partition": partition, "objects": len(changed), "batches": batches}
            self._audit(db, "ingest", f"source:{source}", message, run_id, details)
        return len(changed)

    def known_etags(self, source: str) -> dict[str, str]:
        """Every object key of the source's manifests (any partition) with its ETag."""
        table = schema.ingest_manifest
        query = select(table.c.object_key, table.c.etag).where(table.c.source == source)
        with self.store.transaction() as db:
            return {row[0]: row[1] for row in db.execute(query).all()}

    def manifests(self) -> list[ManifestSummary]:
        """Per source and partition: objects held and when the last was ingested."""
        table = schema.ingest_manifest
        query = (
            select(
                table.c.source,
                table.c.partition,
                func.count(),
                func.max(table.c.ingested_at),
            )
            .group_by(table.c.source, table.c.partition)
            .order_by(table.c.source, table.c.partition)
        )
        with self.store.transaction() as db:
            rows = db.execute(query).all()
        return [ManifestSummary(r[0], r[1] or None, int(r[2]), float(r[3] or 0)) for r in rows]

    # --- warehouse loads ----------------------------------------------------------------------

    def record_load(self, load: LoadRecord, held: bool = False) -> bool:
        """Record a load the warehouse has committed (its ledger is the authority: see the
        store's docstring), audited on the table; returns whether a row was written. ``held``:
        the warehouse already held the version (nothing was loaded now); it is recorded only
        when the store lacks it (a crash came between the warehouse's commit and this one)."""
        load = LoadRecord(**(vars(load) | {"loaded_at": load.loaded_at or utc_now()}))
        values = vars(load) | {"partition": load.partition or ""}
        table = schema.warehouse_loads
        where = f" ({load.partition})" if load.partition else ""
        with self.store.transaction() as db:
            if held:
                statement = self.store.insert_new(table, values).returning(table.c.dataset)
                if db.execute(statement).first() is None:
                    return False
            else:
                db.execute(self.store.upsert(table, values))
            self._audit(
                db,
                "load",
                f"dataset:{load.dataset}",
                f"loaded {load.rows} row(s) of {load.dataset}{where} version {load.lake_version} "
                f"into {load.warehouse_table} ({load.mode})"
                + (", recorded after the fact" if held else ""),
                load.run_id,
                {k: v for k, v in vars(load).items() if k not in ("run_id", "loaded_at")},
            )
        return True

    def latest_loads(self) -> list[LoadRecord]:
        """The latest load of each table (partition), by table and partition."""
        table = schema.warehouse_loads
        latest = (
            select(table.c.dataset, table.c.partition, func.max(table.c.loaded_at).label("at"))
            .group_by(table.c.dataset, table.c.partition)
            .subquery()
        )
        query = (
            select(table)
            .join(
                latest,
                (table.c.dataset == latest.c.dataset)
                & (table.c.partition == latest.c.partition)
                & (table.c.loaded_at == latest.c.at),
            )
            .order_by(table.c.dataset, table.c.partition)
        )
        with self.store.transaction() as db:
            rows = db.execute(query).mappings().all()
        return [LoadRecord(**(dict(r) | {"partition": r["partition"] or None})) for r in rows]

    def _audit(
        self,
        db: Connection,
        kind: str,
        entity: str,
        message: str,
        run_id: str,
        details: Mapping[str, Any],
    ) -> None:
        self.store.append(db, AuditEntry(utc_now(), kind, entity, message, run_id, dict(details)))
