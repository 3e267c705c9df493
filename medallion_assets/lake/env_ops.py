"""Dev environments across the lake's tables, through the catalog without a JVM (pyiceberg):
which exist (``environments``, ``tables_of``), dropping one (``drop``: its refs, the snapshots
only they held and those snapshots' files), and promoting one to ``main``
(``lake.promotion``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from medallion_assets.lake import promotion
from medallion_assets.lake.env_refs import env_branch, env_day_prefix, env_of_ref, is_env_branch
from medallion_assets.lake.env_writes import descends
from medallion_assets.lake.orphans import referenced_files
from medallion_assets.lake.promotion import Move
from medallion_assets.lake.tables import DAY_TAG
from medallion_assets.lake.versions import ancestors, load, namespaces, written_fields

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table


@dataclass(frozen=True)
class EnvTable:
    """What one environment holds of one table."""

    table: str
    head: int | None  # its branch's head
    days: Mapping[str, int]  # day tag on main (medallion_day_...) -> the env's snapshot
    built_at: float
    behind_main: bool = False  # main moved on since: its head is not an ancestor of ours


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

    # --- promotion (lake.promotion) --------------------------------------------------------

    def promote(
        self, env: str, moves: Sequence[Move], audit: Callable[[str], None], keep: bool = False
    ) -> str:
        return promotion.promote(self.catalog, env, moves, audit, keep)

    def recover(self, say: Callable[[str], None]) -> None:
        promotion.recover(self.catalog, say)


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
    current = loaded.current_snapshot()
    main = current.snapshot_id if current is not None else None
    behind = main is not None and not all(descends(loaded, i, main) for i in ids)
    head = branch.snapshot_id if branch else None
    return EnvTable(table, head, days, max(stamps, default=0.0), behind)


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
            (changes.remove_branch if is_env_branch(name) else changes.remove_tag)(name)
    _drop_added_columns(catalog.load_table(table), [r.snapshot_id for r in kept_refs])
    if not only_mine:
        return 0
    loaded = catalog.load_table(table)
    loaded.maintenance.expire_snapshots().by_ids(only_mine).commit()
    after = referenced_files(catalog.load_table(table))
    return _delete(loaded, before, after)


def _drop_added_columns(loaded: Table, heads: Sequence[int]) -> None:
    """Drop the columns only the dropped environment's writes had (added to the table's one
    schema, NULL for every other ref): those no ref left was written with."""
    kept = written_fields(loaded, heads)
    added = [f.name for f in loaded.schema().fields if f.field_id not in kept]
    if kept and added:
        with loaded.update_schema() as update:
            for name in added:
                update.delete_column(name)


def _reachable(loaded: Table, heads: Sequence[int]) -> set[int]:
    """The snapshots ``heads`` reach: themselves and their ancestors."""
    found: set[int] = set()
    for head in heads:
        found |= {s.snapshot_id for s in ancestors(loaded, loaded.snapshot_by_id(head))}
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
