"""The plan of a dev environment: what the project folder changes against what is published on
``main``, table by table, and what the environment must build.

A table is *changed directly* when the code it would be built with (its SQL and metadata:
``Dataset.code_version``) is not the code of its version on ``main`` (or ``main`` has none).
A direct change is *breaking* when something reads what it changes: a column removed, or
computed differently (the column's fingerprint, ``lineage.shape``), or every row (the SQL's
CTEs, FROM, joins, WHERE, GROUP BY: its rows' fingerprint), read by a table downstream (the
columns its SQL reads of it anywhere, ``lineage.read_columns``), by its warehouse target or
by an exposure, or by another table's rule (a referential integrity rule's keys). A column only
added is read by nobody yet, unless a reader takes ``*``. A
change of metadata alone (rules, owners, a target's settings) leaves its rows as they were.

The tables a breaking change reaches are *changed because an input changed*, and so is every
table reading one of those; they are rebuilt. A reader of a non-breaking change only is
unchanged: its version on ``main`` stays right. Plain data in, plain data out: the caller
reads ``main`` (``environments.published``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from medallion_assets.lineage.shape import Shape

DIRECT, NEW = "changed directly", "new"
INDIRECT, UNCHANGED = "changed: an input changed", "unchanged"


@dataclass(frozen=True)
class Published:
    """What ``main`` has of a table: the code versions of its versions in force (one per day
    of a daily table) and the fingerprints of the SQL the newest was built from (None: not
    recorded)."""

    code_versions: frozenset[str]
    shape: Shape | None


@dataclass(frozen=True)
class Change:
    """One table of the plan."""

    table: str
    status: str  # DIRECT, NEW, INDIRECT or UNCHANGED
    breaking: bool = False
    why: tuple[str, ...] = ()  # what changed, and who reads it
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()  # columns computed differently
    rows: bool = False  # the rows may differ (not only some columns)
    reaches: tuple[str, ...] = ()  # the tables reading it that must be rebuilt

    @property
    def builds(self) -> bool:
        return self.status != UNCHANGED

    def as_dict(self) -> dict[str, object]:
        return {
            "table": self.table,
            "status": self.status,
            "breaking": self.breaking,
            "why": list(self.why),
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "rows": self.rows,
            "builds": self.builds,
        }


@dataclass(frozen=True)
class Project:
    """What the plan needs of the project folder, in execution order."""

    code_versions: Mapping[str, str]  # table -> code version
    shape: Callable[[str], Shape]  # table -> its SQL's fingerprints (parsed when asked)
    readers: Mapping[str, tuple[str, ...]]  # table -> the tables reading it directly
    exposures: Mapping[str, tuple[str, ...]]  # table -> exposures depending on it
    targets: Mapping[str, str]  # table -> its warehouse table
    # table -> the rules of other tables that read it (their label, the columns they read)
    rules: Mapping[str, tuple[tuple[str, frozenset[str]], ...]]
    reads: Callable[[str, str], frozenset[str] | None]  # (reader, table) -> columns it reads


@dataclass(frozen=True)
class EnvPlan:
    changes: tuple[Change, ...]  # execution order

    @property
    def to_build(self) -> list[str]:
        return [c.table for c in self.changes if c.builds]

    def of(self, table: str) -> Change | None:
        return next((c for c in self.changes if c.table == table), None)


def plan(project: Project, main: Mapping[str, Published]) -> EnvPlan:
    """Each table of ``project`` against what ``main`` has of it."""
    found: dict[str, Change] = {}
    reached: dict[str, list[str]] = {}  # table -> why it must be rebuilt (its inputs)
    for table, code in project.code_versions.items():
        published = main.get(table)
        if published is None or not published.code_versions:
            change = Change(table, NEW, why=("not on main",))
        elif code in published.code_versions:
            change = Change(table, UNCHANGED)
        else:
            change = _direct(project, table, published)
        if change.status == UNCHANGED and reached.get(table):
            change = Change(table, INDIRECT, True, tuple(reached[table]), rows=True)
        found[table] = change
        _reach(project, change, reached)
    return EnvPlan(tuple(found.values()))


def _direct(project: Project, table: str, published: Published) -> Change:
    new, old = project.shape(table), published.shape
    if old is None or new is None:
        why = "its SQL's fingerprints on main are not recorded (built before they were)"
        readers = project.readers.get(table, ())
        return Change(
            table, DIRECT, _read_at_all(project, table), (why,), rows=True, reaches=readers
        )
    known = bool(old.columns) and bool(new.columns)
    added = tuple(sorted(set(new.columns) - set(old.columns))) if known else ()
    removed = tuple(sorted(set(old.columns) - set(new.columns))) if known else ()
    changed = tuple(
        sorted(c for c in new.columns if c in old.columns and new.columns[c] != old.columns[c])
    )
    rows = new.rows != old.rows or not known
    if not (rows or added or removed or changed):
        return Change(table, DIRECT, why=("metadata only: its SQL computes the same rows",))
    what = _what(rows, added, removed, changed)
    broken = _readers_reached(project, table, rows, added, removed, changed)
    said = (what, *broken.values()) if broken else (what, "nothing reads what changed")
    readers = tuple(r for r in broken if r in project.code_versions)
    return Change(table, DIRECT, bool(broken), said, added, removed, changed, rows, readers)


Columns = tuple[str, ...]


def _what(rows: bool, added: Columns, removed: Columns, changed: Columns) -> str:
    parts = []
    if rows:
        parts.append("its rows (CTEs, FROM, joins, WHERE, GROUP BY or DISTINCT)")
    named = (("removed", removed), ("computed differently", changed), ("added", added))
    for words, columns in named:
        if columns:
            parts.append(f"{words}: {', '.join(columns)}")
    return "; ".join(parts)


def _readers_reached(
    project: Project,
    table: str,
    rows: bool,
    added: tuple[str, ...],
    removed: tuple[str, ...],
    changed: tuple[str, ...],
) -> dict[str, str]:
    """Who reads what changed (a table, ``warehouse:`` or ``exposure:``), with a line each."""
    lost = set(removed) | set(changed)
    lines = {}
    for reader in project.readers.get(table, ()):
        reads = project.reads(reader, table)
        if rows:
            lines[reader] = f"{reader} reads its rows"
        elif reads is None and (lost or added):
            lines[reader] = f"{reader} reads every column (*)"
        elif reads is not None and (hit := sorted(lost & reads)):
            lines[reader] = f"{reader} reads {', '.join(hit)}"
    for rule, columns in project.rules.get(table, ()):
        if rows or (hit := sorted(lost & columns)):
            lines[f"rule:{rule}"] = f"{rule} reads {'its rows' if rows else ', '.join(hit)}"
    if rows or lost:
        if table in project.targets:
            warehouse = project.targets[table]
            lines[f"warehouse:{warehouse}"] = f"warehouse table {warehouse} holds every column"
        for e in project.exposures.get(table, ()):
            lines[f"exposure:{e}"] = f"exposure {e} reads it"
    return lines


def _read_at_all(project: Project, table: str) -> bool:
    return bool(
        project.readers.get(table) or project.exposures.get(table) or table in project.targets
    )


def _reach(project: Project, change: Change, reached: dict[str, list[str]]) -> None:
    """Mark the tables ``change`` makes rebuild: the readers it breaks (a direct change), every
    reader (a table rebuilt because its input changed, or new)."""
    if change.status == UNCHANGED:
        return
    for reader in project.readers.get(change.table, ()):
        if change.status == DIRECT and reader not in change.reaches:
            continue
        reached.setdefault(reader, []).append(f"reads {change.table} ({change.status})")
