"""``medallion control throttle`` on TheWorldShop, against the embedded SQLite store and a real
PostgreSQL server: an operator's rate reaches a running consumer within about a second, is
audited and shown by ``control status``, ``--reset`` gives systems.yaml's rates back, and every
bad input is refused with the fix."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.throttles.rate_budgets import RateBudgets, shared_throttle
from tests.cli.conftest import medallion
from tests.throttles.row_consumer import RowConsumer


@pytest.mark.slow
def test_a_throttle_reaches_a_running_step_is_audited_shown_and_reset(project: Path):
    declared = load_catalog(project).systems["redshift"].throttle  # 50,000 rows/s
    assert declared.rows_per_second == 50_000
    store = ControlPlane.from_env(os.environ, project).store()
    throttle = shared_throttle(store, "redshift", declared)
    with RowConsumer(throttle, batch=100) as step:  # a step loading the warehouse
        started = step.wait_started()
        time.sleep(2.0)
        issued = time.monotonic()
        done = medallion(
            project,
            *("control", "throttle", "redshift", "--rows-per-s", "10000"),
            *("--reason", "dashboards slow", "--by", "oncall"),
        )
        changed = time.monotonic()
        time.sleep(2.5)
    assert done.exit_code == 0, done.output
    assert "redshift throttled to rows/s 10000 by oncall" in done.output
    assert "redshift             rows/s 10000, bytes/s 52428800, requests/s -" in done.output
    before, after = step.rate(started + 0.2, issued), step.rate(changed + 1.4, changed + 2.4)
    print(f"rows/s before the throttle {before:.0f}, a second after it {after:.0f}")
    # The budget is a ceiling: on a busy machine the step may fall short of it, never above.
    # Before, over two seconds: well above the throttle to come (a lease's write to a store on
    # a busy disk stalled a step for a whole second in CI, so not over one second).
    assert 15_000 < before <= 50_000 * 1.1
    assert 6_000 < after <= 10_000 * 1.1

    status = medallion(project, "control", "status").output
    assert "THROTTLE redshift -> rows/s 10000  by oncall since 20" in status
    assert status.split("THROTTLE redshift", 1)[1].splitlines()[0].endswith(": dashboards slow")
    data = json.loads(medallion(project, "control", "status", "--format", "json").output)
    (override,) = data["throttle_overrides"]
    assert (override["system"], override["rows_per_second"], override["changed_by"]) == (
        "redshift",
        10000,
        "oncall",
    )

    medallion(project, "control", "throttle", "redshift", "--bytes-per-s", "1e6", "--reason", "x")
    shown = json.loads(
        medallion(project, "control", "throttle", "redshift", "--format", "json").output
    )
    assert shown[0]["in_force"] == {
        "rows_per_second": 10000,  # set before, not named now: kept
        "bytes_per_second": 1e6,
        "requests_per_second": None,
    }
    reset = medallion(project, "control", "throttle", "redshift", "--reset", "--reason", "quiet")
    assert reset.exit_code == 0, reset.output
    assert "redshift: back to its systems.yaml rates (was rows/s 10000, bytes/s 1000000)" in (
        reset.output
    )
    assert "THROTTLE" not in medallion(project, "control", "status").output
    assert RateBudgets(store).limits("redshift", declared, time.time()) == declared
    audit = medallion(project, "audit", "--limit", "3").output
    assert "throttle system:redshift: redshift throttled to rows/s 10000 by oncall: dashboards" in (
        audit
    )
    assert "redshift back to its systems.yaml rates (was rows/s 10000, bytes/s 1000000)" in audit


BAD_THROTTLES = [
    (
        ("warehouse", "--rows-per-s", "5", "--reason", "r"),
        "no system named 'warehouse' in metadata/systems.yaml: its systems are redshift, "
        "s3_raw, s3_raw_replica, s3_vendor, spark",
    ),
    (
        ("redshift", "--rows-per-s", "0", "--reason", "r"),
        "--rows-per-s must be a positive number (got 0): to give redshift its systems.yaml "
        "rates back, use --reset --reason ...",
    ),
    (("s3_raw", "--bytes-per-s", "-5", "--reason", "r"), "--bytes-per-s must be a positive"),
    (("s3_raw", "--requests-per-s", "inf", "--reason", "r"), "--requests-per-s must be"),
    (("redshift", "--rows-per-s", "500"), "say why with --reason"),
    (("redshift", "--reset"), "say why with --reason"),
    (("redshift", "--reset", "--rows-per-s", "5", "--reason", "r"), "give it without"),
    (("--rows-per-s", "5", "--reason", "r"), "name the SYSTEM to throttle"),
    (("redshift", "--reason", "r"), "--reason goes with a change: add --rows-per-s"),
]


def test_bad_throttles_are_refused_with_the_fix(project: Path):
    for args, message in BAD_THROTTLES:
        result = medallion(project, "control", "throttle", *args)
        assert (result.exit_code, message in result.output) == (2, True), (args, result.output)
    assert "THROTTLE" not in medallion(project, "control", "status").output
    assert "throttle" not in medallion(project, "audit").output


def test_the_listing_shows_every_systems_rates_in_force(project: Path):
    state = ControlPlane.from_env(os.environ, project).state()
    state.cut_throttle("s3_vendor", time.time(), "S3_THROTTLED in bronze.addresses")
    listing = medallion(project, "control", "throttle")
    assert listing.exit_code == 0, listing.output
    lines = listing.output.splitlines()
    assert lines[0] == "redshift             rows/s 50000, bytes/s 52428800, requests/s -"
    assert "s3_vendor            rows/s -, bytes/s 10485760, requests/s 10" in lines
    assert "  cut to 0.5x by self-healing (reduce_parallelism)" in lines
    assert lines[-1] == "spark                rows/s -, bytes/s -, requests/s -"
