"""The run-failure sensor tells a step that failed on its own from one whose run process was
interrupted (SIGTERM to the run worker), on Dagster's serialized errors as the event log keeps
them: the step converts the interruption into a Failure, so the cause chain decides."""

from __future__ import annotations

import sys

import dagster as dg
from dagster._utils.error import serializable_error_info_from_exc_info

from medallion_assets.adapters.relaunch import was_interrupted


def serialized(make) -> object:
    try:
        make()
    except BaseException:
        return serializable_error_info_from_exc_info(sys.exc_info())
    raise AssertionError("nothing raised")


def test_an_interruption_converted_into_a_failure_is_still_an_interruption():
    def interrupted_step():
        try:
            raise dg.DagsterExecutionInterruptedError()
        except dg.DagsterExecutionInterruptedError as interruption:
            raise dg.Failure("silver.orders: interrupted", allow_retries=False) from interruption

    def failed_step():
        try:
            raise ValueError("UNRESOLVED_COLUMN country")
        except ValueError as error:
            raise dg.Failure("silver.orders: SQL_MISSING_COLUMN", allow_retries=False) from error

    assert was_interrupted(serialized(interrupted_step))
    assert not was_interrupted(serialized(failed_step))
    assert not was_interrupted(None)
