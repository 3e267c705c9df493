"""Focus pre-emption decisions: a queued run of higher priority whose profile pre-empts takes
the systems lower-priority running runs hold, never from an equal or higher one, never twice."""

from __future__ import annotations

from medallion_assets.relaunch.preemption import QueuedRun, RunningRun, preemptions

SPARK = frozenset({"spark"})


def queued(run_id: str, priority: int, pools=SPARK, preempts: bool = True) -> QueuedRun:
    return QueuedRun(run_id, priority, "focus" if preempts else "balanced", pools, preempts)


def victims(queue, running) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(p.victim.run_id, p.by.run_id, p.pools) for p in preemptions(queue, running)]


def test_a_critical_run_pre_empts_a_low_priority_run_holding_its_system():
    running = [RunningRun("low", 0, frozenset({"spark", "s3_raw"}))]
    assert victims([queued("critical", 10)], running) == [("low", "critical", ("spark",))]


def test_equal_or_higher_priority_runs_are_never_pre_empted():
    running = [RunningRun("same", 10, SPARK), RunningRun("higher", 11, SPARK)]
    assert victims([queued("critical", 10)], running) == []


def test_only_a_profile_with_preempt_low_priority_pre_empts():
    running = [RunningRun("low", 0, SPARK)]
    assert victims([queued("critical", 10, preempts=False)], running) == []


def test_a_run_holding_none_of_the_needed_systems_keeps_running():
    running = [RunningRun("warehouse_load", 0, frozenset({"warehouse"}))]
    assert victims([queued("critical", 10)], running) == []


def test_a_run_pre_empted_by_a_run_is_not_pre_empted_again_by_it():
    requeued = RunningRun("low_again", 0, SPARK, preempted_by=frozenset({"critical"}))
    assert victims([queued("critical", 10)], [requeued]) == []
    # another critical run may still need what it holds
    assert victims([queued("other", 10)], [requeued]) == [("low_again", "other", ("spark",))]


def test_each_victim_is_terminated_once_for_the_highest_queued_run():
    running = [RunningRun("low", 0, SPARK), RunningRun("normal", 1, SPARK)]
    queue = [queued("high", 5), queued("critical", 10)]
    assert victims(queue, running) == [
        ("low", "critical", ("spark",)),
        ("normal", "critical", ("spark",)),
    ]
