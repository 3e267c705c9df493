"""The Dagster internals the package uses are where it takes them from, with the parameters it
passes: a Dagster upgrade that moves or changes one fails here, by name. And no module but
``adapters/dagster_internals.py`` imports from Dagster's private modules."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.api import create_execution_plan  # a plan to hand ActiveExecution

from medallion_assets.adapters import dagster_internals
from medallion_assets.adapters.dagster_internals import (
    ActiveExecution,
    RetryMode,
    drop_dependencies,
    pending_dependencies,
)

PACKAGE = Path(dagster_internals.__file__).resolve().parents[1]

# name -> the keyword parameters the package passes (a class: of its constructor)
PARAMETERS: dict[str, set[str]] = {
    "ExecuteRunWithPlanIterable": {"execution_plan", "iterator", "execution_context_manager"},
    "PlanExecutionContextManager": {
        "job",
        "retry_mode",
        "execution_plan",
        "run_config",
        "dagster_run",
        "instance",
        "raise_on_error",
        "output_capture",
    },
    "ActiveExecution": {
        "retry_mode",
        "sort_key_fn",
        "max_concurrent",
        "instance_concurrency_context",
        "step_dependency_config",
    },
    "InstanceConcurrencyContext": {"instance", "dagster_run"},
    "dagster_event_sequence_for_step": {"step_context"},
    "core_execute_in_process": {
        "job",
        "run_config",
        "instance",
        "output_capturing_enabled",
        "raise_on_error",
        "run_tags",
        "asset_selection",
    },
    "merge_run_tags": {
        "job_def",
        "partition_key",
        "tags",
        "asset_selection",
        "instance",
        "run_config",
    },
    "InMemoryJob": {"job_def"},
    "PartitionBackfill.from_asset_partitions": {
        "backfill_id",
        "asset_graph",
        "partition_names",
        "asset_selection",
        "backfill_timestamp",
        "tags",
        "dynamic_partitions_store",
        "all_partitions",
    },
    "EngineEventData.in_process": set(),
    "EngineEventData.interrupted": set(),
    "ConfigurableClassData": {"module_name", "class_name", "config_yaml"},
}


def _resolve(name: str) -> object:
    found: object = dagster_internals
    for part in name.split("."):
        found = getattr(found, part)
    return found


@pytest.mark.parametrize("name", sorted(dagster_internals.__all__))
def test_each_internal_name_still_exists(name):
    assert getattr(dagster_internals, name) is not None


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_each_internal_takes_the_parameters_passed_to_it(name):
    target = _resolve(name)
    parameters = set(inspect.signature(target).parameters)  # type: ignore[arg-type]
    assert PARAMETERS[name] <= parameters, f"{name}: {PARAMETERS[name] - parameters}"


def test_the_partition_tag_is_the_documented_one():
    assert dagster_internals.PARTITION_NAME_TAG == "dagster/partition"


def test_no_other_module_imports_dagsters_private_modules():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "dagster_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagster._"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}")
            if isinstance(node, ast.Import):
                found += [
                    f"{path.relative_to(PACKAGE)}:{node.lineno} {a.name}"
                    for a in node.names
                    if a.name.startswith("dagster._")
                ]
    assert found == []


def test_a_pending_steps_dependencies_are_where_check_inputs_reads_and_drops_them():
    """``ActiveExecution`` keeps each pending step's upstream steps in ``_pending``: the
    executor reads them, and drops those a step need not wait for (``check_inputs.py``)."""

    @dg.asset
    def up() -> None: ...

    @dg.asset(deps=[up])
    def down() -> None: ...

    job = dg.Definitions(assets=[up, down]).resolve_implicit_global_asset_job_def()
    with ActiveExecution(create_execution_plan(job), retry_mode=RetryMode.DISABLED) as active:
        assert pending_dependencies(active, "down") == {"up"}
        drop_dependencies(active, "down", frozenset({"up"}))
        assert {step.key for step in active.get_steps_to_execute()} == {"up", "down"}
        assert pending_dependencies(active, "down") is None  # started: no longer pending
        for key in ("up", "down"):
            active.mark_success(key)
