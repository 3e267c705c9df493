"""One table step's decisions around its build, in one place and without Dagster.

Before the build: the control flags in force are read once for the step (control.yaml and the
control store); the kill switch, then the profile the run executes under, may leave the table
out (``left_out``: said, audited, its current version stays published, and one OpenLineage
ABORT, no START); then OpenLineage START, the routes around what is down (``begin``: when no
path produces the table it is not built, said and audited) and the route in force, and the
attempt is audited with its route. After it: another run holding the table's build lock
(``held_elsewhere``) or the outcome (``finished``) is audited.

The Dagster step (``adapters/assets.py``) hands the guard what Dagster knows of the step
(``StepFacts``) and its OpenLineage events, and calls it; what Dagster alone does (the step's
events, its retries and healing, the build lock's wait) stays there.

    guard = StepGuard(run, plane, StepFacts(tags, attempt=1))
    if guard.left_out() is None:
        begun = guard.begin()  # a Route, or NotBuilt with why
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from medallion_assets.control.store import ControlStore
from medallion_assets.control_plane import ControlPlane
from medallion_assets.kill_switch.switch import EffectiveFlag
from medallion_assets.recovery.recover import down_now, recover
from medallion_assets.recovery.reroute import PRIMARY, Route
from medallion_assets.runtime.run_profile import below_profile
from medallion_assets.runtime.table_run import TableRun


class LineageEvents(Protocol):
    """A step's OpenLineage run (``adapters/openlineage_events.StepLineage``)."""

    def begin(self) -> None: ...

    def abort(self, why: str) -> None: ...


@dataclass(frozen=True)
class StepFacts:
    """What the orchestrator knows of the step beyond its ``TableRun``: the run's tags and the
    attempt (1: the first)."""

    tags: Mapping[str, str] = field(default_factory=dict)
    attempt: int = 1

    @property
    def pipeline(self) -> str | None:
        """The run's pipeline (None: a run of no one pipeline, e.g. ``medallion run`` or the
        asset graph)."""
        return self.tags.get("pipeline")


class Audit:
    """Audit-log entries of one table's step: attempt, error, healing, outcome."""

    def __init__(self, store: ControlStore, run: TableRun, attempt: int):
        self.store = store
        self.attempt = attempt
        self.run_id = run.run_id
        self.entity = f"dataset:{run.dataset.name}"
        self.where = run.label

    def record(self, kind: str, message: str, **details: Any) -> None:
        self.store.record(
            kind,
            self.entity,
            f"{self.where}: {message}",
            run_id=self.run_id,
            details={"attempt": self.attempt, **details},
        )


@dataclass(frozen=True)
class LeftOut:
    """The kill switch or the run's profile leaves the table out of this run."""

    why: str
    details: Mapping[str, str]

    @property
    def message(self) -> str:
        return f"skipped: {self.why}; the current version stays published"


@dataclass(frozen=True)
class NotBuilt:
    """No available path produces the table: it is reported as not built (so the tables
    rerouted around it still run); ``published``: whether a version stays in force."""

    why: str
    published: bool

    @property
    def message(self) -> str:
        kept = "the current version stays published" if self.published else "it has no version yet"
        return f"not built: {self.why}; {kept}"


class StepGuard:
    """The decisions of one table's step (see the module)."""

    def __init__(
        self,
        run: TableRun,
        plane: ControlPlane,
        facts: StepFacts,
        lineage: LineageEvents | None = None,
    ):
        self.run = run
        self.plane = plane
        self.facts = facts
        self.lineage = lineage

    @functools.cached_property
    def flags(self) -> dict[tuple[str, str], EffectiveFlag]:
        """The control flags in force, read once for the step: the kill switch and the route
        around what is down decide on the same flags."""
        return self.plane.flags()

    @functools.cached_property
    def audit(self) -> Audit:
        return Audit(self.plane.store(), self.run, self.facts.attempt)

    def left_out(self) -> LeftOut | None:
        """The kill switch at the table boundary (flags read now, so a flag flipped while the
        run executes stops this table), then the profile the run executes under (a table below
        its ``skip_below``); when either leaves the table out it is said, audited, and its
        OpenLineage run is one ABORT."""
        out = self._left_out()
        if out is None:
            return None
        self.run.log.warn(out.message)
        self.plane.store().record(
            "skip",
            f"dataset:{self.run.dataset.name}",
            out.message,
            run_id=self.run.run_id,
            details=dict(out.details),
        )
        if self.lineage is not None:
            self.lineage.abort("switched off or below the run's profile; nothing was built")
        return out

    def _left_out(self) -> LeftOut | None:
        catalog, table, pipeline = self.run.catalog, self.run.dataset.name, self.facts.pipeline
        # A run of no one pipeline (`medallion run`, the asset graph) builds every pipeline's
        # tables: a pipeline switched off stops those no enabled pipeline also builds.
        off = self.plane.disabled(
            catalog, [table], [pipeline] if pipeline else [], self.flags, by_membership=not pipeline
        )
        if table in off:
            return LeftOut(off[table].describe(), {"flag": off[table].flag.entity})
        below = below_profile(catalog, table, pipeline, self.plane.store(), self.facts.tags)
        return None if below is None else LeftOut(below, {"profile": below})

    def begin(self) -> Route | NotBuilt:
        """The build starts: OpenLineage START; with nodes down, the routes recovery takes
        around them (``recovery.recover``), and ``NotBuilt`` when none produces the table;
        else the route the table is read along now (a reroute is sticky), its attempt
        audited."""
        if self.lineage is not None:
            self.lineage.begin()
        unavailable = self._route_around_down()
        if unavailable:
            run = self.run
            published = run.lake.current(run.dataset.name, run.partition) is not None
            not_built = NotBuilt(unavailable, published)
            self.audit.record("outcome", not_built.message)
            if self.lineage is not None:
                self.lineage.abort(not_built.message)
            run.log.warn(f"{run.dataset.name} {not_built.message}")
            return not_built
        route, warning = self.plane.route(self.run.catalog, self.run.dataset)
        if warning:
            self.run.log.warn(warning)
        along = "" if route.name == PRIMARY else f" along route {route.describe()}"
        self.audit.record(
            "attempt", f"attempt {self.audit.attempt} started{along}", route=route.name
        )
        return route

    def _route_around_down(self) -> str:
        """Why no available path produces the table with what is down now, or "". Nothing
        down: nothing read but the down nodes."""
        run, store = self.run, self.plane.store()
        if not down_now(run.catalog, store, self.flags):
            return ""
        plan = recover(
            run.catalog,
            store,
            flags=self.flags,
            reason=f"{run.dataset.name} starting in run {run.run_id[:8]}",
            changed_by="run",
            run_id=run.run_id,
        )
        if run.dataset.name not in plan.unreachable:
            return ""
        return f"no available path produces it with {', '.join(plan.down)} down"

    def held_elsewhere(self) -> None:
        """Another run holds the table's build lock: this step builds nothing."""
        if self.lineage is not None:
            self.lineage.abort("another run is building this table; skipped")

    def finished(self, unchanged: bool) -> None:
        """The build's outcome, audited (``unchanged``: the current version was reused)."""
        if unchanged:
            self.audit.record("outcome", "skipped: code and inputs unchanged; current version kept")
        else:
            self.audit.record("outcome", f"materialized on attempt {self.audit.attempt}")
