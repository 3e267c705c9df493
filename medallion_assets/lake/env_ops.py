"""Dev environments across the lake's tables, through the catalog without a JVM (pyiceberg):
which exist (``environments``), dropping one (``drop``), and promoting one to ``main``
(``promote``) all tables or none.

A promotion moves each table's ``main`` to its environment branch's head and its day tags to
the environment's days: no data is read or written. Iceberg commits one table at a time, so a
promotion is journaled in the tables themselves: first every table records the promotion and
what its ``main`` and day tags were (``medallion.promotion``, a table property); then each
table's refs move in one commit with its record marked ``moved``; then the columns the
environment no longer writes are dropped and the records cleared. A promotion stopped before
every table moved (an error, a kill) is rolled back: each table's ``main`` and day tags as
recorded (``recover``, which every ``medallion promote``, ``env`` command and ``run --env``
calls first); one stopped after is finished. The promotions under way are indexed in the
tables' namespaces' properties (``medallion.promotion.<id>``), so looking for them reads no
table.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from medallion_assets.faults import crash_point
from medallion_assets.lake.env_refs import env_branch, env_day_prefix, env_of_ref
from medallion_assets.lake.env_writes import day_tags, descends
from medallion_assets.lake.orphans import referenced_files
from medallion_assets.lake.tables import DAY_TAG
from medallion_assets.lake.versions import load, namespaces

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

JOURNAL = "medallion.promotion"
INDEX = "medallion.promotion."  # a namespace's property: a promotion under way -> its tables


@dataclass(frozen=True)
class EnvTable:
    """What one environment holds of one table."""

    table: str
    head: int | None  # its branch's head
    days: Mapping[str, int]  # day tag on main (medallion_day_...) -> the env's snapshot
    built_at: float
    behind_main: bool = False  # main moved on since: its head is not an ancestor of ours


@dataclass(frozen=True)
class Move:
    """One table's part of a promotion: ``main`` to ``head``, day tags to the env's days."""

    table: str
    head: int
    days: Mapping[str, int] = field(default_factory=dict)
    drop_columns: tuple[str, ...] = ()


class EnvOps:
    """The environments of one lake catalog."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def tables(self) -> list[str]:
        found = []
        for namespace in namespaces(self.catalog):
            found += [".".join(t) for t in self.catalog.list_tables(namespace)]
        return sorted(found)

    def environments(self) -> dict[str, list[EnvTable]]:
        """Each environment's tables."""
        found: dict[str, list[EnvTable]] = {}
        for table in self.tables():
            loaded = load(self.catalog, table)
            if loaded is None:
                continue
            for env in sorted({e for r in loaded.metadata.refs if (e := env_of_ref(r))}):
                found.setdefault(env, []).append(env_table(loaded, table, env))
        return found

    def tables_of(self, env: str, tables: Sequence[str]) -> list[EnvTable]:
        """What environment ``env`` holds of ``tables`` (those it built)."""
        found = []
        for table in tables:
            loaded = load(self.catalog, table)
            if loaded is not None and any(env_of_ref(r) == env for r in loaded.metadata.refs):
                found.append(env_table(loaded, table, env))
        return found

    def drop(self, env: str, tables: Sequence[str]) -> int:
        """Remove environment ``env`` from ``tables``: its branch and day tags, the snapshots
        only they held and the files only those snapshots held; a table that never had a
        version on ``main`` (the environment made it) is dropped whole. Returns bytes freed."""
        freed = 0
        for table in tables:
            loaded = load(self.catalog, table)
            if loaded is None:
                continue
            freed += _drop_from(self.catalog, loaded, table, env)
        return freed

    # --- promotion ----------------------------------------------------------------------------

    def promote(self, env: str, moves: Sequence[Move], audit: Callable[[str], None]) -> str:
        """Make every move's table current on ``main`` as the environment has it, all or none
        (an error half-way rolls back those moved); returns the promotion's id."""
        promotion = f"{env}:{int(time.time())}:{uuid.uuid4().hex[:8]}"
        names = [m.table for m in moves]
        self._index(promotion, names)
        try:
            for move in moves:
                loaded = self._loaded(move.table)
                before = {"main": _head_id(loaded), **_tags_now(loaded, move.days)}
                record = {"id": promotion, "env": env, "tables": names, "state": "prepared",
                          "before": before, "drop": list(move.drop_columns)}  # fmt: skip
                _set_journal(loaded, record)
            for move in moves:
                crash_point("env.promoting", move.table)
                _move(self._loaded(move.table), move)
        except BaseException:
            self._roll_back(promotion, names)
            self._unindex(promotion, names)
            raise
        audit(f"promoted environment {env} to main: {', '.join(names)}")
        self._finish(promotion, names)
        self._unindex(promotion, names)
        return promotion

    def recover(self, say: Callable[[str], None]) -> None:
        """Finish or roll back every promotion a stop left half-way (see the module). The
        promotions under way are indexed in their tables' namespaces' properties, so finding
        none costs a query per namespace, not a load per table."""
        for promotion, names in self._indexed().items():
            records = {}
            for table in names:
                loaded = load(self.catalog, table)
                record = _journal(loaded) if loaded is not None else None
                if record is not None and record["id"] == promotion:
                    records[table] = record
            env = promotion.split(":", 1)[0]
            moved = [t for t, r in records.items() if r["state"] == "moved"]
            if records and len(moved) == len(records):
                # every table still journaled moved: the promotion was done, its clean-up not
                self._finish(promotion, names)
                say(f"finished the promotion of environment {env} a stop interrupted")
            elif records:
                self._roll_back(promotion, names)
                say(
                    f"rolled back the promotion of environment {env} a stop interrupted half-way: "
                    f"main of {', '.join(names)} as before it"
                )
            self._unindex(promotion, names)

    def _index(self, promotion: str, names: Sequence[str]) -> None:
        """Name the promotion's tables in their namespaces' properties (before any change)."""
        for namespace, tables in _by_namespace(names).items():
            self.catalog.update_namespace_properties(
                namespace, updates={INDEX + promotion: json.dumps(tables)}
            )

    def _unindex(self, promotion: str, names: Sequence[str]) -> None:
        for namespace in _by_namespace(names):
            self.catalog.update_namespace_properties(namespace, removals={INDEX + promotion})

    def _indexed(self) -> dict[str, list[str]]:
        """The promotions under way: id -> their tables."""
        found: dict[str, list[str]] = {}
        for namespace in namespaces(self.catalog):
            properties = self.catalog.load_namespace_properties(namespace)
            for key, value in properties.items():
                if key.startswith(INDEX):
                    found.setdefault(key.removeprefix(INDEX), []).extend(json.loads(value))
        return found

    def _loaded(self, table: str) -> Table:
        loaded = load(self.catalog, table)
        if loaded is None:
            raise LookupError(f"the lake has no table {table}")
        return loaded

    def _roll_back(self, promotion: str, names: Sequence[str]) -> None:
        # pyiceberg: loaded only when the lake is read without Spark
        from pyiceberg.table.update.snapshot import ManageSnapshots

        for table in names:
            loaded = load(self.catalog, table)
            record = _journal(loaded) if loaded is not None else None
            if loaded is None or record is None or record["id"] != promotion:
                continue
            transaction = loaded.transaction()
            transaction.remove_properties(JOURNAL)
            refs = ManageSnapshots(transaction)
            for ref, snapshot in record["before"].items():
                _point(loaded, refs, ref, snapshot)
            refs.commit()
            transaction.commit_transaction()

    def _finish(self, promotion: str, names: Sequence[str]) -> None:
        for table in names:
            loaded = load(self.catalog, table)
            record = _journal(loaded) if loaded is not None else None
            if loaded is None or record is None or record["id"] != promotion:
                continue
            columns = {f.name for f in loaded.schema().fields}
            drop = [c for c in record.get("drop", []) if c in columns]
            transaction = loaded.transaction()
            if drop:
                with transaction.update_schema() as schema:
                    for column in drop:
                        schema.delete_column(column)
            transaction.remove_properties(JOURNAL)
            transaction.commit_transaction()


def _by_namespace(names: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for table in names:
        found.setdefault(table.rsplit(".", 1)[0], []).append(table)
    return found


def env_table(loaded: Table, table: str, env: str) -> EnvTable:
    refs = loaded.metadata.refs
    branch = refs.get(env_branch(env))
    prefix = env_day_prefix(env)
    days = {
        DAY_TAG + n.removeprefix(prefix): r.snapshot_id
        for n, r in refs.items()
        if n.startswith(prefix)
    }
    ids = [branch.snapshot_id] if branch else []
    ids += list(days.values())
    stamps = [s.timestamp_ms / 1000 for i in ids if (s := loaded.snapshot_by_id(i)) is not None]
    main = _head_id(loaded)
    behind = main is not None and not all(descends(loaded, i, main) for i in ids)
    head = branch.snapshot_id if branch else None
    return EnvTable(table, head, days, max(stamps, default=0.0), behind)


def _head_id(loaded: Table) -> int | None:
    head = loaded.current_snapshot()
    return head.snapshot_id if head is not None else None


def _tags_now(loaded: Table, days: Mapping[str, int]) -> dict[str, int | None]:
    refs = loaded.metadata.refs
    return {tag: (refs[tag].snapshot_id if tag in refs else None) for tag in days}


def _journal(loaded: Table) -> dict[str, Any] | None:
    text = loaded.properties.get(JOURNAL)
    if not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) and "id" in found else None


def _set_journal(loaded: Table, record: Mapping[str, Any]) -> None:
    transaction = loaded.transaction()
    transaction.set_properties({JOURNAL: json.dumps(record, sort_keys=True)})
    transaction.commit_transaction()


def _move(loaded: Table, move: Move) -> None:
    """One commit: ``main`` and the day tags moved, the journal's record marked ``moved``."""
    # pyiceberg: loaded only when the lake is read without Spark
    from pyiceberg.table.update.snapshot import ManageSnapshots

    record = _journal(loaded)
    assert record is not None, f"{move.table}: not prepared for promotion"
    transaction = loaded.transaction()
    transaction.set_properties({JOURNAL: json.dumps({**record, "state": "moved"}, sort_keys=True)})
    refs = ManageSnapshots(transaction)
    _point(loaded, refs, "main", move.head)
    for tag, snapshot in move.days.items():
        _point(loaded, refs, tag, snapshot)
    refs.commit()
    transaction.commit_transaction()


def _point(loaded: Table, refs: Any, ref: str, snapshot: int | None) -> None:
    """Stage ref ``ref`` at ``snapshot`` (None: removed; ``main`` stays where it is)."""
    if ref == "main":
        if snapshot is not None and snapshot != _head_id(loaded):
            refs.set_current_snapshot(snapshot)
        return
    if ref in loaded.metadata.refs:
        refs.remove_tag(ref)
    if snapshot is not None:
        refs.create_tag(snapshot, ref)


def _drop_from(catalog: Catalog, loaded: Table, table: str, env: str) -> int:
    refs = loaded.metadata.refs
    mine = [n for n in refs if env_of_ref(n) == env]
    if not mine:
        return 0
    kept_refs = [r for n, r in refs.items() if n not in mine]
    kept = _reachable(loaded, [r.snapshot_id for r in kept_refs])
    only_mine = [s.snapshot_id for s in loaded.snapshots() if s.snapshot_id not in kept]
    # the files every snapshot holds: read only when some snapshot goes (its manifests)
    before = referenced_files(loaded) if only_mine else set()
    if not any(n.startswith(DAY_TAG) for n in refs) and _never_published(loaded, kept):
        catalog.purge_table(table)  # made by the environment: nothing of main's in it
        return _delete(loaded, before, set())
    with loaded.manage_snapshots() as changes:
        for name in mine:
            if name in day_tags(loaded, env):
                changes.remove_tag(name)
            else:
                changes.remove_branch(name)
    if not only_mine:
        return 0
    loaded = catalog.load_table(table)
    loaded.maintenance.expire_snapshots().by_ids(only_mine).commit()
    after = referenced_files(catalog.load_table(table))
    return _delete(loaded, before, after)


def _reachable(loaded: Table, heads: Sequence[int]) -> set[int]:
    # pyiceberg: loaded only when the lake is read without Spark
    from pyiceberg.table.snapshots import ancestors_of

    found: set[int] = set()
    for head in heads:
        snapshot = loaded.snapshot_by_id(head)
        if snapshot is not None:
            found |= {s.snapshot_id for s in ancestors_of(snapshot, loaded.metadata)}
    return found


def _never_published(loaded: Table, kept: set[int]) -> bool:
    """Whether no snapshot ``main`` (or another ref) keeps was written by medallion."""
    for snapshot_id in kept:
        snapshot = loaded.snapshot_by_id(snapshot_id)
        props = snapshot.summary.additional_properties if snapshot and snapshot.summary else {}
        if any(k.startswith("medallion.") for k in props):
            return False
    return True


def _delete(loaded: Table, before: set[str], after: set[str]) -> int:
    """Delete the data, manifest and manifest-list files ``before`` held and ``after`` does
    not (never a metadata file); returns their bytes."""
    freed = 0
    for path in sorted(before - after):
        if path.endswith(".metadata.json"):
            continue
        try:
            source = loaded.io.new_input(path)
            size = len(source) if source.exists() else 0
            loaded.io.delete(path)
            freed += size
        except (OSError, FileNotFoundError):
            continue
    return freed
