"""A dev environment promoted to ``main``, all tables or none, through the catalog without a
JVM (pyiceberg): each table's ``main`` and day tags move to the environment's versions (and
its branch and day tags go, unless kept), one commit per table; no data is read or written.

Iceberg commits one table at a time, so a promotion first records, in the properties of its
tables' namespaces (``medallion.promotion.<id>``: one small catalog write per namespace), each
table's refs before and after it. A promotion stopped before every table moved (an error, a
kill) is rolled back from that record: each table's refs as they were; one stopped after is
finished (the columns the environment no longer writes dropped, the record cleared).
``recover`` does this, and finding no record costs a query per namespace.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from medallion_assets.faults import crash_point
from medallion_assets.lake.env_refs import env_of_ref, is_env_branch
from medallion_assets.lake.versions import load, namespaces

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

INDEX = "medallion.promotion."  # a namespace's property: a promotion under way -> its tables

Refs = dict[str, int | None]  # ref name -> the snapshot it points at (None: no such ref)


@dataclass(frozen=True)
class Move:
    """One table's part of a promotion: ``main`` to ``head``, day tags to the env's days."""

    table: str
    head: int
    days: Mapping[str, int] = field(default_factory=dict)  # main's day tag -> snapshot
    drop_columns: tuple[str, ...] = ()


def promote(
    catalog: Catalog,
    env: str,
    moves: Sequence[Move],
    audit: Callable[[str], None],
    keep: bool = False,
) -> str:
    """Make every move's table current on ``main`` as the environment has it (``keep``: its
    branch and day tags stay), all or none; returns the promotion's id."""
    promotion = f"{env}:{int(time.time())}:{uuid.uuid4().hex[:8]}"
    loaded = {m.table: _loaded(catalog, m.table) for m in moves}
    record = {m.table: _entry(loaded[m.table], env, m, keep) for m in moves}
    _index(catalog, promotion, record)
    try:
        for move in moves:
            crash_point("env.promoting", move.table)
            # as loaded for the record: a commit another writer beat since fails, rolling back
            _point_all(catalog, move.table, record[move.table]["after"], loaded[move.table])
    except BaseException:
        for table, entry in record.items():
            _point_all(catalog, table, entry["before"])
        _unindex(catalog, promotion, record)
        raise
    audit(f"promoted environment {env} to main: {', '.join(record)}")
    _finish(catalog, record)
    _unindex(catalog, promotion, record)
    return promotion


def recover(catalog: Catalog, say: Callable[[str], None]) -> None:
    """Finish or roll back every promotion a stop left half-way (see the module)."""
    for promotion, record in _indexed(catalog).items():
        env = promotion.split(":", 1)[0]
        moved = all(_refs_now(catalog, t, e["after"]) == e["after"] for t, e in record.items())
        if moved:
            _finish(catalog, record)
            say(f"finished the promotion of environment {env} a stop interrupted")
        else:
            for table, entry in record.items():
                _point_all(catalog, table, entry["before"])
            say(
                f"rolled back the promotion of environment {env} a stop interrupted half-way: "
                f"main of {', '.join(record)} as before it"
            )
        _unindex(catalog, promotion, record)


def _entry(loaded: Table, env: str, move: Move, keep: bool) -> dict[str, Any]:
    """A table's refs before and after the promotion, and the columns it drops."""
    refs = loaded.metadata.refs
    head = loaded.current_snapshot()
    before: Refs = {"main": head.snapshot_id if head is not None else None}
    after: Refs = {"main": move.head}
    for tag, snapshot in move.days.items():
        before[tag] = refs[tag].snapshot_id if tag in refs else None
        after[tag] = snapshot
    if not keep:  # main holds them now: the environment's refs would only pin old snapshots
        mine = [n for n in refs if env_of_ref(n) == env]
        for name in mine:
            before[name], after[name] = refs[name].snapshot_id, None
    return {"before": before, "after": after, "drop": list(move.drop_columns)}


def _loaded(catalog: Catalog, table: str) -> Table:
    loaded = load(catalog, table)
    if loaded is None:
        raise LookupError(f"the lake has no table {table}")
    return loaded


def _refs_now(catalog: Catalog, table: str, names: Mapping[str, Any]) -> Refs:
    return _refs_in(load(catalog, table), names)


def _refs_in(loaded: Table | None, names: Mapping[str, Any]) -> Refs:
    """Where each of ``names`` points in the table (None: no such ref)."""
    refs = loaded.metadata.refs if loaded is not None else {}
    return {n: (refs[n].snapshot_id if n in refs else None) for n in names}


def _point_all(
    catalog: Catalog, table: str, wanted: Mapping[str, int | None], loaded: Table | None = None
) -> None:
    """One commit: each ref of ``wanted`` at its snapshot (None: removed; ``main`` kept), on
    the table as ``loaded`` (else as loaded now)."""
    loaded = loaded or load(catalog, table)
    if loaded is None:
        return
    refs = loaded.metadata.refs
    now = _refs_in(loaded, wanted)
    if now == dict(wanted):
        return
    with loaded.manage_snapshots() as changes:
        for name, snapshot in wanted.items():
            if now[name] == snapshot:
                continue
            if name == "main":
                if snapshot is not None:
                    changes.set_current_snapshot(snapshot)
                continue
            branch = is_env_branch(name)  # else a day's tag, main's or the environment's
            if name in refs:
                (changes.remove_branch if branch else changes.remove_tag)(name)
            if snapshot is not None:
                (changes.create_branch if branch else changes.create_tag)(snapshot, name)


def _finish(catalog: Catalog, record: Mapping[str, Mapping[str, Any]]) -> None:
    """Drop the columns the promoted versions no longer have (written NULL until now)."""
    for table, entry in record.items():
        loaded = load(catalog, table) if entry["drop"] else None
        if loaded is None:
            continue
        columns = {f.name for f in loaded.schema().fields}
        drop = [c for c in entry["drop"] if c in columns]
        if drop:
            with loaded.update_schema() as schema:
                for column in drop:
                    schema.delete_column(column)


def _by_namespace(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for table, entry in record.items():
        found.setdefault(table.rsplit(".", 1)[0], {})[table] = entry
    return found


def _index(catalog: Catalog, promotion: str, record: Mapping[str, Any]) -> None:
    for namespace, part in _by_namespace(record).items():
        catalog.update_namespace_properties(
            namespace, updates={INDEX + promotion: json.dumps(part, sort_keys=True)}
        )


def _unindex(catalog: Catalog, promotion: str, record: Mapping[str, Any]) -> None:
    for namespace in _by_namespace(record):
        catalog.update_namespace_properties(namespace, removals={INDEX + promotion})


def _indexed(catalog: Catalog) -> dict[str, dict[str, Any]]:
    """The promotions under way: id -> {table: its refs before and after}."""
    found: dict[str, dict[str, Any]] = {}
    for namespace in namespaces(catalog):
        for key, value in catalog.load_namespace_properties(namespace).items():
            if key.startswith(INDEX):
                found.setdefault(key.removeprefix(INDEX), {}).update(json.loads(value))
    return found
