"""Each system's ``max_concurrent_jobs`` (``systems.yaml``) as the Dagster instance's pool
limit, so no hand-run ``dagster instance concurrency set`` is needed.

Every asset's ``pool`` is its system (``assets.py``), and Dagster lets a step start only while
its pool has a free slot, across every run of the instance. ``medallion run`` applies the limits
to the project's instance before it runs; under ``dagster dev`` (or any deployment with the
daemon) the ``system_pools`` sensor applies them on its first tick and again when the code
location reloads an edited ``systems.yaml``. A pool whose system declares no limit is left as
the instance has it (``dagster instance concurrency set`` still works for those).
"""

from collections.abc import Callable, Mapping  # no "from __future__ import annotations"

import dagster as dg

from medallion_assets.adapters.translator import DEFAULT_NAMES, Names
from medallion_assets.catalog import Catalog
from medallion_assets.simulate.scheduling import system_limits as system_limits  # re-exported

POOLS_SENSOR = "system_pools"


def apply_pool_limits(
    instance: dg.DagsterInstance, limits: Mapping[str, int], log: Callable[[str], None]
) -> dict[str, int]:
    """Set each pool's limit on ``instance`` where it differs; returns what changed. An
    instance whose storage has no pools (an ephemeral one) is left alone."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return {}
    current = {p.name: p.limit for p in storage.get_pool_limits() if not p.from_default}
    changed = {}
    for pool, limit in sorted(limits.items()):
        if current.get(pool) != limit:
            storage.set_concurrency_slots(pool, limit)
            changed[pool] = limit
    if changed:
        log(
            "pool limits from systems.yaml: "
            + ", ".join(f"{pool} {limit}" for pool, limit in changed.items())
        )
    return changed


def build_pools_sensor(catalog: Catalog, names: Names = DEFAULT_NAMES) -> dg.SensorDefinition:
    # A pool per system, named as the project's steps name theirs (``names.name(system)``).
    limits = {names.name(system): n for system, n in system_limits(catalog).items()}

    @dg.sensor(
        name=names.name(POOLS_SENSOR),
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Keeps the instance's pool limits equal to systems.yaml's "
        "max_concurrent_jobs (one pool per system).",
    )
    def _pools(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        changed = apply_pool_limits(context.instance, limits, context.log.info)
        said = ", ".join(f"{p} {n}" for p, n in sorted(limits.items())) or "none declared"
        return dg.SkipReason(("set " if changed else "in force: ") + said)

    return _pools
