"""Whether an environment can be promoted, and the moves that promote it: every table the plan
builds must be built in the environment from the code now in the project folder and from the
versions of its inputs the environment reads now, on what ``main`` has now (``main``'s head an
ancestor of the environment's); then each table's ``main`` moves to the environment's version
without recomputing (``lake.promotion``).
"""

from __future__ import annotations

from dataclasses import dataclass

from medallion_assets.catalog import Catalog
from medallion_assets.environments.plan import EnvPlan
from medallion_assets.environments.published import built_in
from medallion_assets.errors import PermanentError
from medallion_assets.lake import Lake
from medallion_assets.lake.env_ops import EnvTable
from medallion_assets.lake.promotion import Move
from medallion_assets.lake.versions import Version, built_from
from medallion_assets.runtime.reuse import MissingInput, input_versions


class NotPromotable(PermanentError):
    """The environment does not hold what the project folder would build on ``main``."""

    error_code = "NOT_PROMOTABLE"
    fix = "run `medallion run --env NAME` again, then promote"


@dataclass(frozen=True)
class Promotion:
    moves: tuple[Move, ...]


def promotion(
    lake: Lake, catalog: Catalog, env: str, plan: EnvPlan, held: list[EnvTable]
) -> Promotion:
    """The moves promoting ``env`` (``held``: what it holds of the tables the plan builds), or
    ``NotPromotable`` naming each table that stops it and why."""
    if not held and plan.to_build:
        raise NotPromotable(
            f"environment {env} holds none of the tables the project folder changes "
            f"({', '.join(plan.to_build)}; `medallion env list`): build them with "
            f"`medallion run --env {env}`"
        )
    problems = []
    for table in plan.to_build:
        code = catalog.datasets[table].code_version
        versions = built_in(lake, env, table)
        if not versions:
            problems.append(f"{table}: not built in the environment")
        elif any(v.code_version != code for v in versions):
            problems.append(f"{table}: built from other code than the project folder's now")
        elif not _inputs_current(lake.in_env(env), catalog, table, versions):
            problems.append(f"{table}: built from inputs the environment has rebuilt since")
    by_table = {t.table: t for t in held}
    moves = []
    for table in plan.to_build:
        found = by_table.get(table)
        if found is None or found.head is None:
            continue  # said above
        if found.behind_main:
            problems.append(f"{table}: main has moved on since the environment built it")
            continue
        current = lake.in_env(env).current_versions(table)
        drops = tuple(sorted({c for v in current for c in v.drops}))
        moves.append(Move(table, found.head, dict(found.days), drops))
    if problems:
        raise NotPromotable(
            f"environment {env} cannot be promoted: " + "; ".join(problems)
            + f"; run `medallion run --env {env}`, then promote again"
        )  # fmt: skip
    return Promotion(tuple(moves))


def _inputs_current(lake: Lake, catalog: Catalog, table: str, versions: list[Version]) -> bool:
    """Whether each version was built from the versions of its inputs the environment reads
    now (a run that stopped half-way leaves a reader built on an input rebuilt after it). A
    bronze table's inputs are raw objects: not judged here."""
    dataset = catalog.datasets[table]
    if dataset.layer == "bronze":
        return True
    own = table if dataset.statement_kind == "merge" else None
    for version in versions:
        try:
            now = input_versions(lake, catalog, dataset, version.partition)
        except MissingInput:
            return False
        if not built_from(version, version.code_version, now, own):
            return False
    return True


__all__ = ["NotPromotable", "Promotion", "promotion"]
