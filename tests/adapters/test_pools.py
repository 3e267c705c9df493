"""systems.yaml's max_concurrent_jobs become the Dagster instance's pool limits without a
hand-run `dagster instance concurrency set`, on a real (SQLite) instance; a killed run's claimed
slots are freed by the next `medallion run`, so they never block later runs."""

from __future__ import annotations

import socket
import subprocess
import sys

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.lost_runs import HOST_TAG, PID_TAG, mark_lost_runs_failed
from medallion_assets.adapters.pools import (
    POOLS_SENSOR,
    apply_pool_limits,
    build_pools_sensor,
    system_limits,
)
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import load_catalog
from tests.conftest import copy_demo_project


@pytest.fixture
def instance(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        yield instance


def limits_of(instance: dg.DagsterInstance) -> dict[str, int]:
    return {
        p.name: p.limit for p in instance.event_log_storage.get_pool_limits() if not p.from_default
    }


def test_each_system_limit_becomes_its_pool_limit_and_an_edit_is_applied(instance, tmp_path):
    root = copy_demo_project(tmp_path / "theworldshop")
    limits = system_limits(load_catalog(root))
    assert limits["redshift"] == 3 and limits["s3_vendor"] == 2  # as metadata/systems.yaml says
    said: list[str] = []
    assert apply_pool_limits(instance, limits, said.append) == limits
    assert limits_of(instance) == limits
    assert said and "redshift 3" in said[0]
    assert apply_pool_limits(instance, limits, said.append) == {}  # nothing to change: quiet
    assert len(said) == 1

    systems = root / "metadata" / "systems.yaml"
    systems.write_text(
        systems.read_text().replace("max_concurrent_jobs: 3", "max_concurrent_jobs: 1")
    )
    edited = system_limits(load_catalog(root))
    assert apply_pool_limits(instance, edited, said.append) == {"redshift": 1}
    assert limits_of(instance)["redshift"] == 1


def test_the_sensor_applies_the_limits_on_the_instance_it_ticks_on(instance, tmp_path):
    catalog = load_catalog(copy_demo_project(tmp_path / "theworldshop"))
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    sensor = defs.get_sensor_def(POOLS_SENSOR)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    result = build_pools_sensor(catalog)(dg.build_sensor_context(instance=instance))
    assert isinstance(result, dg.SkipReason) and "set " in (result.skip_message or "")
    assert limits_of(instance) == system_limits(catalog)


def test_a_killed_runs_pool_slots_are_freed_by_the_next_run(instance):
    @dg.op
    def noop() -> None:
        pass

    @dg.job
    def job() -> None:
        noop()

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    run = instance.create_run_for_job(
        job,
        status=dg.DagsterRunStatus.STARTED,
        tags={PID_TAG: str(child.pid), HOST_TAG: socket.gethostname()},
    )
    storage = instance.event_log_storage
    storage.set_concurrency_slots("spark", 1)
    assert storage.claim_concurrency_slot("spark", run.run_id, "noop").is_claimed
    assert storage.get_concurrency_info("spark").active_slot_count == 1

    assert mark_lost_runs_failed(instance, lambda _m: None) == [run.run_id]
    assert storage.get_concurrency_info("spark").active_slot_count == 0
