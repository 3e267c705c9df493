"""A table's branches and tags, changed through the catalog without a JVM (pyiceberg): a stage
branch per write, a tag per day's current version and per rejected write; each change one
commit, retried on a conflicting one."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from medallion_assets.lake.tables import STAGE_BRANCH, CommitConflict, Staged
from medallion_assets.lake.versions import snapshot_rows

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog


# A build stages, checks and publishes within minutes; a staging branch an hour old was left by
# a build that was killed (its run's process, its machine) before it could drop it.
STALE_STAGING_S = 3600.0
# Commits another writer beat, tried again on the table as it now is before giving up.
COMMIT_ATTEMPTS = 8


def staging_branches(loaded: Any, older_than_s: float | None = None) -> list[str]:
    """The staging branches of a loaded table made more than ``older_than_s`` ago (or all)."""
    now = time.time()
    ages = {
        name: stage_branch_age(name, now)
        for name in loaded.metadata.refs
        if name.startswith(STAGE_BRANCH)
    }
    return [
        name
        for name, age in ages.items()
        if older_than_s is None or age is None or age > older_than_s
    ]


def drop_staging_branches(
    loaded: Any, older_than_s: float | None = None, dry_run: bool = False
) -> int:
    """Drop the staging branches of a loaded table (those made more than ``older_than_s`` ago,
    or all); returns how many (``dry_run``: how many it would drop)."""
    stale = staging_branches(loaded, older_than_s)
    if stale and not dry_run:
        with loaded.manage_snapshots() as refs:
            for name in stale:
                refs.remove_branch(name)
    return len(stale)


def stage_branch_age(name: str, now: float) -> float | None:
    """Seconds since a staging branch was made, from its name; None for a name without its
    time (made before names carried it: a leftover).

    >>> stage_branch_age("medallion_stage_1767225600_0a1b2c3d4e5f", 1767229200.0)
    3600.0
    >>> stage_branch_age("medallion_stage_0a1b2c3d4e5f", 1767229200.0)
    """
    made = re.match(rf"{STAGE_BRANCH}(\d{{9,}})_", name)
    return now - int(made.group(1)) if made else None


class Refs:
    """Branches and tags of the lake's tables, committed through pyiceberg to the same catalog
    Spark writes through: the same code for a local session and a Spark Connect one (Iceberg's
    branch and tag SQL needs its SQL extensions, whose parser breaks Spark 4.1's SQL functions,
    ``CREATE TEMPORARY FUNCTION ... RETURN``). A commit another writer beat is tried again on
    the table as it now is."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def branch(self, table: str, base: str = "main") -> tuple[str, int | None]:
        """A fresh branch at ref ``base``'s head (``main``'s when there is no such ref); (its
        name, that head). The name carries when it was made (``stage_branch_age``): a branch
        points at an old snapshot until its write commits, so only its name tells a fresh one
        from one a killed build left."""
        name = f"{STAGE_BRANCH}{int(time.time())}_{uuid.uuid4().hex[:12]}"
        heads: list[int | None] = []

        def make(loaded: Any, refs: Any) -> None:
            ref = loaded.metadata.refs.get(base)
            head = loaded.snapshot_by_id(ref.snapshot_id) if ref else loaded.current_snapshot()
            heads.append(head.snapshot_id if head is not None else None)
            refs.create_branch(heads[-1], name)

        self._commit(table, make)
        return name, heads[-1]

    def head(self, table: str, ref: str = "main") -> int | None:
        """The snapshot ``ref`` points at (None: no such ref), read from the catalog's metadata
        (a Spark query of the ``refs`` metadata table costs ten times as much)."""
        snapshot = self.catalog.load_table(table).metadata.refs.get(ref)
        return None if snapshot is None else int(snapshot.snapshot_id)

    def staged(
        self,
        table: str,
        branch: str,
        parent: int | None,
        partition: str | None,
        partition_column: str | None = None,
    ) -> Staged:
        """The branch's head as a ``Staged`` write (after Spark wrote to it)."""
        loaded = self.catalog.load_table(table)
        snapshot = loaded.snapshot_by_id(loaded.metadata.refs[branch].snapshot_id)
        assert snapshot is not None and snapshot.summary is not None
        summary = dict(snapshot.summary.additional_properties)
        rows = snapshot_rows(summary, partition)
        changed = int(summary.get("changed-partition-count", 0))
        operation = snapshot.summary.operation.value
        return Staged(
            table, branch, snapshot.snapshot_id, parent, partition, operation, rows, changed,
            partition_column,
        )  # fmt: skip

    def point_branch(self, table: str, name: str, snapshot_id: int, expect: int | None) -> None:
        """Point branch ``name`` at ``snapshot_id`` (made, or moved, in one commit) when its
        head is still ``expect`` (None: when there is no such branch), else ``CommitConflict``:
        another build of the table published to it meanwhile."""

        def point(loaded: Any, refs: Any) -> None:
            ref = loaded.metadata.refs.get(name)
            if (ref.snapshot_id if ref is not None else None) != expect:
                raise CommitConflict(
                    f"{table}: another build published to {name} since this write was staged; "
                    "run the step again"
                )
            if ref is not None:
                refs.remove_branch(name)
            refs.create_branch(snapshot_id, name)

        self._commit(table, point)

    def fast_forward(
        self, table: str, branch: str, parent: int | None, tag: str | None = None
    ) -> int | None:
        """``main`` moved to ``branch``'s head, ``tag`` (a day's) pointed there and ``branch``
        dropped, in one catalog commit, when ``main`` is still at ``parent``; returns the new
        head, or None (nothing changed) when another writer moved ``main`` meanwhile."""
        heads: list[int | None] = []

        def move(loaded: Any, refs: Any) -> None:
            main = loaded.metadata.refs.get("main")
            if (main.snapshot_id if main is not None else None) != parent:
                heads.append(None)
                return
            head = int(loaded.metadata.refs[branch].snapshot_id)
            refs.create_branch(head, "main")  # asserts main is still where it was loaded
            if tag is not None:
                _point_tag(loaded, refs, tag, head)
            refs.remove_branch(branch)
            heads.append(head)

        self._commit(table, move)
        return heads[-1]

    def drop_branch(self, table: str, name: str) -> None:
        self._commit(table, lambda loaded, refs: refs.remove_branch(name), name)

    def drop_tag(self, table: str, name: str) -> None:
        self._commit(table, lambda loaded, refs: refs.remove_tag(name), name)

    def tag(self, table: str, name: str, snapshot_id: int) -> None:
        """Point tag ``name`` at ``snapshot_id`` (made, or moved)."""

        self._commit(table, lambda loaded, refs: _point_tag(loaded, refs, name, snapshot_id))

    def partition_by(self, table: str, column: str) -> None:
        """``table`` partitioned by ``column`` (its day), the field added when it is not."""
        # pyiceberg and pyarrow: loaded only when the lake is read without Spark
        from pyiceberg.transforms import IdentityTransform

        def add(loaded: Any) -> None:
            source = loaded.schema().find_field(column).field_id
            if any(f.source_id == source for f in loaded.spec().fields):
                return
            with loaded.update_spec() as update:
                update.add_field(column, IdentityTransform(), column)

        self._retried(table, add, f"could not partition it by {column}")

    def _commit(self, table: str, change: Any, only_if: str | None = None) -> None:
        """One change of ``table``'s branches and tags (none when ref ``only_if`` is gone)."""

        def of_refs(loaded: Any) -> None:
            if only_if is not None and only_if not in loaded.metadata.refs:
                return
            with loaded.manage_snapshots() as refs:
                change(loaded, refs)

        self._retried(table, of_refs, "other writers kept changing its branches and tags")

    def _retried(self, table: str, change: Callable[[Any], None], gave_up: str) -> None:
        """``change`` committed to ``table`` as loaded now; when another writer's commit came
        first, loaded and tried again, then ``CommitConflict`` saying ``gave_up``."""
        # pyiceberg and pyarrow: loaded only when the lake is read without Spark
        from pyiceberg.exceptions import CommitFailedException

        for attempt in range(COMMIT_ATTEMPTS):
            try:
                change(self.catalog.load_table(table))
                return
            except CommitFailedException:
                if attempt == COMMIT_ATTEMPTS - 1:
                    raise CommitConflict(f"{table}: {gave_up}; run the step again") from None
                time.sleep(0.05 * (attempt + 1))


def _point_tag(loaded: Any, refs: Any, name: str, snapshot_id: int) -> None:
    """Within one commit of ``refs``: tag ``name`` at ``snapshot_id`` (made, or moved)."""
    if name in loaded.metadata.refs:
        refs.remove_tag(name)
    refs.create_tag(snapshot_id, name)
