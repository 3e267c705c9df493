"""Where a dev environment's builds publish: the table's branch ``env_<name>``, never ``main``.

A build in an environment stages its write on a branch made from the environment's head when
that head still descends from ``main``'s (the environment built on what ``main`` has now),
else from ``main``'s head (``main`` moved on since: the environment's older version of the
table is left behind, with the days it tagged). Publishing points the environment's branch at
the staged snapshot in one commit, when no other build moved it meanwhile, and tags a day's
version ``env_<name>__day_<day>``. ``main`` and its day tags are never touched; readers of
``main`` see nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from medallion_assets.errors import PermanentError
from medallion_assets.lake.env_refs import env_branch, env_day_prefix, env_day_tag, env_of_ref
from medallion_assets.lake.tables import Staged, exists, identifier
from medallion_assets.lake.versions import ancestors

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

    from medallion_assets.lake.refs import Refs


@dataclass(frozen=True)
class Target:
    """The ref a write is staged from (``base``) and the branch its publish moves."""

    base: str
    branch: str
    head: int | None  # the branch's head now (None: the table has no such branch yet)

    @classmethod
    def of(cls, loaded: Table | None, env: str | None) -> Target:
        if env is None:
            return cls("main", "main", None)
        branch = env_branch(env)
        ref = loaded.metadata.refs.get(branch) if loaded is not None else None
        if ref is None or loaded is None:
            return cls("main", branch, None)
        main = loaded.current_snapshot()
        current = main is None or descends(loaded, ref.snapshot_id, main.snapshot_id)
        return cls(branch if current else "main", branch, ref.snapshot_id)

    def on(self, staged: Staged) -> Staged:
        return replace(staged, target=self.branch, target_head=self.head)


def descends(loaded: Table, head: int, ancestor: int) -> bool:
    """Whether snapshot ``ancestor`` is ``head`` or one of its ancestors."""
    line = ancestors(loaded, loaded.snapshot_by_id(head))
    return any(s.snapshot_id == ancestor for s in line)


def publish(staged: Staged, refs: Refs) -> None:
    """Make the staged write the environment's version (``staged.target``): its branch moved
    to it (``CommitConflict`` when another build moved it since it was staged), a day's
    version tagged. A write staged from ``main`` (the environment's branch was behind it)
    leaves the environment's other days of the table behind: their tags go."""
    env = env_of_ref(staged.target)
    assert env is not None, f"{staged.table}: {staged.target} is not an environment's branch"
    restarted = staged.target_head is not None and staged.parent_id != staged.target_head
    refs.point_branch(staged.table, staged.target, staged.snapshot_id, staged.target_head)
    if restarted:
        for tag in day_tags(refs.catalog.load_table(staged.table), env):
            refs.drop_tag(staged.table, tag)
    if staged.partition is not None:
        refs.tag(staged.table, env_day_tag(env, staged.partition), staged.snapshot_id)
    refs.drop_branch(staged.table, staged.branch)


def day_tags(loaded: Any, env: str) -> list[str]:
    """The day tags environment ``env`` holds on a loaded table."""
    prefix = env_day_prefix(env)
    return [name for name in loaded.metadata.refs if name.startswith(prefix)]


class TypeChangeInEnv(PermanentError):
    """A change that retypes a column, built in an environment: Iceberg keeps one schema per
    table, which main's readers share."""

    error_code = "TYPE_CHANGE_IN_ENV"
    fix = "make the type change on main (`medallion run`), or give the new column a new name"


def refuse_type_changes(spark: SparkSession, table: str, frame: DataFrame, env: str) -> None:
    """``TypeChangeInEnv`` naming each column ``frame`` gives another type than ``table``."""
    if not exists(spark, table):
        return
    have = {
        f.name.lower(): f.dataType.simpleString() for f in spark.table(identifier(table)).schema
    }
    changed = [
        f"{f.name} ({have[f.name.lower()]} to {f.dataType.simpleString()})"
        for f in frame.schema.fields
        if f.name.lower() in have and have[f.name.lower()] != f.dataType.simpleString()
    ]
    if changed:
        raise TypeChangeInEnv(
            f"{table}: the change retypes {', '.join(changed)}, which environment {env} cannot "
            "stage: an Iceberg table has one schema, shared by main's readers; make the type "
            "change on main, or give the new column a new name"
        )
