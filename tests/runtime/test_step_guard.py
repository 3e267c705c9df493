"""The step guard's decisions around one table's build, without Dagster or Spark: the kill
switch and the run's profile leave a table out (said, audited, one OpenLineage ABORT and no
START), a table no available path produces is not built, the others start along their route
with their attempt audited; the control flags are read once per step."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.catalog import Catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from medallion_assets.profiles.priority import PROFILE_TAG
from medallion_assets.recovery.recover import DownNodes
from medallion_assets.runtime.step_guard import LeftOut, NotBuilt, StepFacts, StepGuard
from medallion_assets.runtime.table_run import RunLog, TableRun


class Lineage:
    """The OpenLineage events the guard sends, in order."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def begin(self) -> None:
        self.sent.append("START")

    def abort(self, why: str) -> None:
        self.sent.append(f"ABORT {why}")


@pytest.fixture
def plane(tmp_path: Path, demo_catalog: Catalog) -> ControlPlane:
    return ControlPlane.from_env({"MEDALLION_HOME": str(tmp_path / "home")}, demo_catalog.root)


def guard_of(
    catalog: Catalog,
    plane: ControlPlane,
    tmp_path: Path,
    table: str,
    tags: dict[str, str] | None = None,
    said: list[str] | None = None,
) -> tuple[StepGuard, Lineage]:
    sink = said if said is not None else []
    log = RunLog(info=sink.append, warning=sink.append)
    run = TableRun(
        catalog=catalog,
        dataset=catalog.datasets[table],
        lake=Lake.local(tmp_path / "lake"),
        run_id="run-1",
        log=log,
        control=plane.store(),
    )
    lineage = Lineage()
    return StepGuard(run, plane, StepFacts(tags or {}, attempt=2), lineage), lineage


def audit(plane: ControlPlane, table: str) -> list[tuple[str, str]]:
    return [(e.kind, e.message) for e in plane.store().audit(entities=[f"dataset:{table}"])]


def test_a_switched_off_table_is_left_out_said_audited_and_one_abort(demo_catalog, plane, tmp_path):
    plane.store().set_flag("dataset", "gold.customer_ltv", False, "bad numbers", "oncall")
    said: list[str] = []
    guard, lineage = guard_of(demo_catalog, plane, tmp_path, "gold.customer_ltv", said=said)

    out = guard.left_out()

    assert isinstance(out, LeftOut)
    assert out.details == {"flag": "dataset:gold.customer_ltv"}
    assert said == [out.message] and "bad numbers" in out.message
    assert out.message.endswith("the current version stays published")
    assert ("skip", out.message) in audit(plane, "gold.customer_ltv")
    assert [e.split(" ")[0] for e in lineage.sent] == ["ABORT"]  # no START


def test_a_table_below_the_runs_profile_is_left_out(demo_catalog, plane, tmp_path):
    guard, _ = guard_of(
        demo_catalog, plane, tmp_path, "gold.daily_user_events", {PROFILE_TAG: "focus"}
    )
    out = guard.left_out()
    assert out is not None and "profile focus" in out.why and "profile" in out.details
    guard, _ = guard_of(demo_catalog, plane, tmp_path, "gold.daily_user_events")
    assert guard.left_out() is None  # balanced, the active profile, skips nothing


def test_a_table_that_runs_starts_along_its_route_with_its_attempt_audited(
    demo_catalog, plane, tmp_path
):
    guard, lineage = guard_of(demo_catalog, plane, tmp_path, "silver.orders_usd")
    assert guard.left_out() is None
    route = guard.begin()
    assert not isinstance(route, NotBuilt) and route.name == "primary"
    assert lineage.sent == ["START"]
    assert ("attempt", "silver.orders_usd: attempt 2 started") in audit(plane, "silver.orders_usd")
    guard.finished(unchanged=True)
    assert audit(plane, "silver.orders_usd")[-1] == (
        "outcome",
        "silver.orders_usd: skipped: code and inputs unchanged; current version kept",
    )


def test_a_table_no_available_path_produces_is_not_built(demo_catalog, plane, tmp_path):
    DownNodes(plane.store()).mark("source:orders", "bucket gone", "healing")
    said: list[str] = []
    guard, lineage = guard_of(demo_catalog, plane, tmp_path, "bronze.orders", said=said)

    begun = guard.begin()

    assert isinstance(begun, NotBuilt) and "source:orders" in begun.why
    assert begun.published is False
    assert begun.message.endswith("it has no version yet")
    assert lineage.sent[0] == "START" and lineage.sent[1].startswith("ABORT not built")
    assert ("outcome", f"bronze.orders: {begun.message}") in audit(plane, "bronze.orders")
    assert said == [f"bronze.orders {begun.message}"]


def test_the_control_flags_are_read_once_per_step(demo_catalog, plane, tmp_path, monkeypatch):
    DownNodes(plane.store()).mark("source:fx_rates", "bucket gone", "healing")
    reads: list[int] = []
    flags = ControlPlane.flags

    def counted(self):  # type: ignore[no-untyped-def]
        reads.append(1)
        return flags(self)

    monkeypatch.setattr(ControlPlane, "flags", counted)
    guard, _ = guard_of(demo_catalog, plane, tmp_path, "silver.orders_usd")
    assert guard.left_out() is None
    guard.begin()  # something is down: recovery plans around it with the same flags
    assert len(reads) == 1
