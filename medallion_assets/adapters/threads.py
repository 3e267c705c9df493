"""Run a run's steps on threads of one process, sharing its Spark session, up to N at a time.

Why threads, not step processes: every step of a run reads and writes through Spark, and a
Spark driver is expensive to start (~5 s here) and to hold twice. Dagster's in-process
executor runs one step at a time; its multiprocess executor would start a driver per step (or
need a Spark Connect server in the middle). Here the steps whose upstream is done start on
worker threads over the process's one SparkContext, each with its own session (temp views and
SQL settings of one table never meet another's, see ``runtime.spark_session.step_session``),
and Spark's FAIR scheduler shares the executors between their jobs. Measured on the demo's
silver and gold (bench G): 2 workers take 0.70x the sequential time on 2 cores.

What stays Dagster's: ``ActiveExecution`` decides which steps are ready (a step whose checks
alone read a running step's table starts beside it: ``check_inputs``), in what order
(``sort_key``: the planner's priority, critical tables and their upstream first), claims pool
slots (per-system limits across runs), handles retries, skips and the step events. The main
thread owns all of that; a worker thread only runs one step's event sequence and hands its
events back through a queue, so the run's state machine is never touched from two threads.

A run being terminated (kill switch, Terminate in the UI) is heard by the main thread: no new
step starts, running Spark jobs are cancelled, and each step that ends after that hears
``step_interrupted`` and ends as interrupted rather than retrying.
"""

from __future__ import annotations

import importlib
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Protocol

import dagster as dg
from dagster import DagsterEvent, Executor

from medallion_assets.adapters.check_inputs import CheckInputs, registered
from medallion_assets.adapters.dagster_internals import (
    ActiveExecution,
    EngineEventData,
    ExecuteRunWithPlanIterable,
    ExecutionPlan,
    ExecutionStep,
    InMemoryJob,
    InstanceConcurrencyContext,
    PlanExecutionContext,
    PlanExecutionContextManager,
    PlanOrchestrationContext,
    RetryMode,
    core_execute_in_process,
    create_compute_log_file_key,
    dagster_event_sequence_for_step,
    merge_run_tags,
    serializable_error_info_from_exc_info,
)
from medallion_assets.kill_switch.stop import JobCanceller
from medallion_assets.runtime import stop
from medallion_assets.runtime.spark_jobs import SparkJobs

log = logging.getLogger(__name__)


class Ordering(Protocol):
    """Which ready step starts next (``step_order.StepOrder``), from the running step keys."""

    def key(self, step_key: str, running: Collection[str]) -> float: ...  # lower first

    def may_start(self, step_key: str, running: Collection[str]) -> bool: ...


_POLL_SECONDS = 0.2

_interrupted_runs: set[str] = set()
_interrupted_lock = threading.Lock()


def step_interrupted(run_id: str) -> bool:
    """Whether the run is being terminated (a step ending now must not be retried)."""
    with _interrupted_lock:
        return run_id in _interrupted_runs


def _mark_interrupted(run_id: str, interrupted: bool) -> None:
    with _interrupted_lock:
        (_interrupted_runs.add if interrupted else _interrupted_runs.discard)(run_id)


@dataclass(frozen=True)
class _Done:
    """A worker thread's last word on its step: ``error`` if the step sequence itself broke."""

    error: BaseException | None = None


@dataclass
class _Running:
    """The steps on worker threads, and the queue their events come back on."""

    events: queue.Queue[tuple[str, DagsterEvent | _Done]] = field(default_factory=queue.Queue)
    threads: dict[str, threading.Thread] = field(default_factory=dict)
    heard: dict[str, list[DagsterEvent]] = field(default_factory=dict)
    held: list[ExecutionStep] = field(default_factory=list)  # vended, waiting for room
    inputs: CheckInputs | None = None  # steps that may start beside what their checks read

    def start(
        self, step_key: str, sequence: Iterator[DagsterEvent], slot: threading.Semaphore | None
    ) -> None:
        """Run ``sequence`` on a thread; ``slot`` (taken for it) is given back when it ends."""

        def work() -> None:
            try:
                for event in sequence:
                    self.events.put((step_key, event))
            except BaseException as error:  # handed to the main thread, raised there
                self.events.put((step_key, _Done(error)))
            else:
                self.events.put((step_key, _Done()))
            finally:
                if slot is not None:
                    slot.release()

        thread = threading.Thread(target=work, name=f"medallion-step-{step_key}", daemon=True)
        self.threads[step_key] = thread
        self.heard[step_key] = []
        thread.start()


class ThreadedExecutor(Executor):
    """Dagster's in-process execution, with up to ``max_workers`` steps at a time on threads."""

    def __init__(
        self,
        max_workers: int,
        order: Ordering | None = None,
        order_for: Callable[[Mapping[str, str]], Ordering | None] | None = None,
        slots: threading.Semaphore | None = None,
        capture_logs: bool = True,
        jobs: JobCanceller | None = None,
    ):
        """``order``, or ``order_for`` the run's tags when it starts (None: Dagster's order).
        ``slots``: shared by runs executing at the same time in this process (``medallion run``
        runs its days beside the rest), so together they run at most its count of steps.
        ``capture_logs`` off: the process's stdout/stderr are not redirected to the run's compute
        log (``medallion run``, whose console shows them: Dagster's capture swaps the process's
        file descriptors, which two runs side by side would leave pointing at a finished run's
        file, and echoes them through ``tail`` child processes, which a Ctrl-C to the console's
        process group kills with a traceback of their own). ``jobs``: what cancels a stopped
        run's engine jobs (the kill switch's port; default: the process's Spark driver)."""
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.order = order
        self.order_for = order_for
        self.slots = slots
        self.capture_logs = capture_logs
        self.jobs = jobs if jobs is not None else SparkJobs()

    @property
    def retries(self) -> RetryMode:
        return RetryMode.ENABLED

    def execute(
        self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        # Before any step thread starts: a step's first lake access imports sqlalchemy.orm
        # (pyiceberg's SQL catalog), while this thread claims pool slots through SQLAlchemy's
        # inspection, which reaches into sqlalchemy.orm once its import has begun; a module
        # half-imported by another thread failed a run ("partially initialized module
        # 'sqlalchemy.orm.exc' has no attribute 'UnmappedClassError'").
        importlib.import_module("sqlalchemy.orm")
        keys = execution_plan.step_keys_to_execute
        yield DagsterEvent.engine_event(
            plan_context,
            f"Executing steps in process (pid: {os.getpid()}) on up to {self.max_workers} "
            "worker thread(s)",
            event_specific_data=EngineEventData.in_process(os.getpid(), keys),
        )
        yield from ExecuteRunWithPlanIterable(
            execution_plan=plan_context.execution_plan,
            iterator=self._steps,
            execution_context_manager=PlanExecutionContextManager(
                job=plan_context.job,
                retry_mode=plan_context.retry_mode,
                execution_plan=plan_context.execution_plan,
                run_config=plan_context.run_config,
                dagster_run=plan_context.dagster_run,
                instance=plan_context.instance,
                raise_on_error=plan_context.raise_on_error,
                output_capture=plan_context.output_capture,
                step_dependency_config=self.step_dependency_config,
            ),
        )

    def _steps(
        self, job_context: PlanExecutionContext, execution_plan: ExecutionPlan
    ) -> Iterator[DagsterEvent]:
        order, running = self.order, _Running()
        if self.order_for is not None:
            order = self.order_for(job_context.dagster_run.tags)

        def by_priority(step: ExecutionStep) -> float:  # asked afresh at every pick
            if order is not None:
                return order.key(step.key, tuple(running.threads))
            return -float(step.tags.get("dagster/priority", 0))  # Dagster's own order

        with ExitStack() as stack:
            concurrency = stack.enter_context(
                InstanceConcurrencyContext(job_context.instance, job_context.dagster_run)
            )
            active = stack.enter_context(
                ActiveExecution(
                    execution_plan,
                    retry_mode=job_context.retry_mode,
                    sort_key_fn=by_priority,
                    max_concurrent=self.max_workers,
                    instance_concurrency_context=concurrency,
                    step_dependency_config=job_context.step_dependency_config,
                )
            )
            if self.capture_logs:
                yield from _capture_logs(job_context, execution_plan, stack)
            else:
                yield DagsterEvent.engine_event(
                    job_context,
                    "stdout/stderr are not captured for this run: they are the console of the "
                    "`medallion run` that runs it, which shows them",
                    EngineEventData(),
                )
            stack.callback(_mark_interrupted, job_context.run_id, False)
            if self.max_workers > 1:  # one worker: a step started early would hold it idle
                inputs = CheckInputs.of(job_context.job.get_definition(), execution_plan)
                running.inputs = stack.enter_context(registered(job_context.run_id, inputs))
            stack.enter_context(stop.deferred())  # a signal is acted on between events
            yield from self._loop(job_context, active, running)

    def _start_ready(
        self, job_context: PlanExecutionContext, active: ActiveExecution, running: _Running
    ) -> Iterator[DagsterEvent]:
        """Start ready steps while workers are free, best first. A step the ordering says may
        not start yet (a system at its limit) is held, not started, until one that runs ends;
        only the best step is ever held, and only when no ready step may start."""
        while len(running.threads) + len(running.held) < self.max_workers or running.held:
            if running.held:
                if self._must_wait(running.held[0], running):
                    return
                step = running.held.pop(0)
            else:
                if running.inputs is not None:
                    running.inputs.release(active, tuple(running.threads))
                steps = active.get_steps_to_execute(limit=1)
                yield from active.concurrency_event_iterator(job_context)
                if not steps:
                    return
                (step,) = steps
                if self._must_wait(step, running):
                    running.held.append(step)
                    return
            if not self._take_slot(running):
                running.held.insert(0, step)  # every shared slot is taken by another run
                return
            context = job_context.for_step(step, active.get_known_state())
            running.start(step.key, dagster_event_sequence_for_step(context), self.slots)

    def _take_slot(self, running: _Running) -> bool:
        """A shared slot for one more step; with none of its own running, the run waits a
        moment for one (its loop would otherwise spin), else it goes back to its events."""
        if self.slots is None:
            return True
        if running.threads:
            return self.slots.acquire(blocking=False)
        return self.slots.acquire(timeout=_POLL_SECONDS)

    def _must_wait(self, step: ExecutionStep, running: _Running) -> bool:
        """Whether ``step`` must wait for a running step to end (never when none runs)."""
        if self.order is None or not running.threads:
            return False
        return not self.order.may_start(step.key, tuple(running.threads))

    def _loop(
        self, job_context: PlanExecutionContext, active: ActiveExecution, running: _Running
    ) -> Iterator[DagsterEvent]:
        stopping = False
        while running.threads or running.held or (not stopping and not active.is_complete):
            interrupted = active.check_for_interrupts()
            if interrupted:
                stop.note_interrupt()
            if not stopping and (interrupted or stop.requested() is not None):
                stopping = True
                _canceling(job_context)
                active.mark_interrupted()
                _mark_interrupted(job_context.run_id, True)
                self.jobs.cancel_run_jobs(job_context.run_id)
                yield DagsterEvent.engine_event(
                    job_context,
                    "the run is being terminated: no new step starts; the running ones "
                    f"({', '.join(sorted(running.threads)) or 'none'}) are cancelled",
                    EngineEventData.interrupted(list(running.threads)),
                )
                for step in running.held:  # never started: they end as not run
                    active.mark_abandoned(step.key)
                running.held.clear()
            if stopping:
                # again: a step may have started another job since
                self.jobs.cancel_run_jobs(job_context.run_id)
            else:
                yield from self._start_ready(job_context, active, running)
                if not running.threads:
                    if not active.is_complete:
                        active.sleep_til_ready()
                    continue
            try:
                step_key, item = running.events.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            if isinstance(item, DagsterEvent):
                yield item
                running.heard[step_key].append(item)
                continue
            running.threads.pop(step_key).join()
            if item.error is not None:
                raise item.error
            # The run's state machine hears a step's events once its thread is done: a step up
            # for retry is not started again while its previous attempt is still winding down.
            heard = running.heard.pop(step_key)
            for event in heard:
                active.handle_event(event)
            active.verify_complete(job_context, step_key)
            if running.inputs is not None:
                running.inputs.ended(step_key, heard)
            yield from active.plan_events_iterator(job_context)


def _canceling(job_context: PlanExecutionContext) -> None:
    """Mark the run CANCELING (unless it already is, or is done), so Dagster ends it CANCELED
    rather than FAILED ("interrupted unexpectedly") once its running steps have stopped."""
    run = job_context.instance.get_run_by_id(job_context.run_id)
    if run is not None and run.status == dg.DagsterRunStatus.STARTED:
        job_context.instance.report_run_canceling(run, message="the run is being stopped")


def _capture_logs(
    job_context: PlanExecutionContext, execution_plan: ExecutionPlan, stack: ExitStack
) -> Iterator[DagsterEvent]:
    """The process's stdout/stderr to the run's compute log, as the in-process executor does."""
    manager = job_context.instance.compute_log_manager
    keys = [step.key for step in execution_plan.get_steps_to_execute_in_topo_order()]
    log_key = manager.build_log_key_for_run(job_context.run_id, create_compute_log_file_key())  # type: ignore[no-untyped-call]
    try:
        captured = stack.enter_context(manager.capture_logs(log_key))
    except Exception:
        yield DagsterEvent.engine_event(
            job_context,
            "could not set up compute log capture; the steps run without it",
            EngineEventData(error=serializable_error_info_from_exc_info(sys.exc_info())),
        )
        return
    yield DagsterEvent.capture_logs(job_context, keys, log_key, captured)


def execute_on_threads(
    job: dg.JobDefinition,
    selection: Sequence[dg.AssetKey],
    partition_key: str | None,
    instance: dg.DagsterInstance,
    executor: ThreadedExecutor,
    tags: Mapping[str, str],
    run_config: Mapping[str, object],
) -> dg.ExecuteInProcessResult:
    """``job.execute_in_process`` for ``selection``, on ``executor`` rather than the one-step-
    at-a-time executor ``execute_in_process`` always swaps in (``raise_on_error`` off)."""
    on_threads = dg.ExecutorDefinition(
        name="medallion_threads", executor_creation_fn=lambda _context: executor
    )
    subset = job.as_ephemeral_job(
        resource_defs={}, input_values={}, asset_selection=selection
    ).with_executor_def(on_threads)
    config = dict(run_config)
    if partition_key and subset.partitioned_config:
        for_partition = subset.partitioned_config.get_run_config_for_partition_key(partition_key)
        config = {**for_partition, **config}
    return core_execute_in_process(
        job=InMemoryJob(job_def=subset),
        run_config=config,
        instance=instance,
        output_capturing_enabled=True,
        raise_on_error=False,
        run_tags=merge_run_tags(
            job_def=job,
            partition_key=partition_key,
            tags=tags,
            asset_selection=selection,
            instance=instance,
            run_config=config,
        ),
        asset_selection=frozenset(selection),
    )
