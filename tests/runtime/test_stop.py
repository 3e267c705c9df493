"""A signal to a command under ``stop_on_signals``: outside a run's executor loop it stops the
command at once; inside it only records the request, for the loop to act on between events."""

from __future__ import annotations

import os
import signal

import pytest

from medallion_assets.runtime import stop


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGINT, 130, "stopped by Ctrl-C (SIGINT)"),
        (signal.SIGTERM, 143, "stopped by SIGTERM"),
        (signal.SIGHUP, 1, "stopped by SIGHUP"),
    ],
)
def test_a_signal_stops_the_command_with_its_exit_code(signum, code, said):
    before = signal.getsignal(signum)
    with pytest.raises(stop.RunStopped) as stopped, stop.stop_on_signals():
        os.kill(os.getpid(), signum)
    assert stopped.value.exit_code == code and str(stopped.value) == said
    assert signal.getsignal(signum) == before  # the previous handler is back


def test_within_a_run_loop_the_first_signal_is_recorded_and_acted_on_later():
    with stop.stop_on_signals():
        with stop.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)  # a later one changes nothing
            assert stop.requested() == stop.Stop.by_signal(signal.SIGTERM)
        with pytest.raises(stop.RunStopped) as stopped:
            stop.raise_if_requested()
        assert stopped.value.exit_code == 143
    with stop.stop_on_signals():
        assert stop.requested() is None  # the next command starts afresh


def test_dagsters_capture_of_an_interrupt_stops_only_its_run_outside_a_command():
    stop.note_interrupt()  # a run terminated from the UI, in Dagster's own process
    assert stop.requested() is None
    with stop.stop_on_signals():
        stop.note_interrupt()
        assert stop.requested() == stop.Stop("stopped by Ctrl-C (SIGINT)", 130, signal.SIGINT)


def test_the_spark_driver_gone_stops_a_command_but_not_a_run_of_dagsters_own():
    gone = stop.Stop("the Spark driver (JVM, pid 7) was killed (SIGKILL)")
    stop.request_stop(gone)  # a run in Dagster's process: its steps' failures say it
    assert stop.requested() is None
    with stop.stop_on_signals():
        stop.request_stop(gone)
        with pytest.raises(stop.RunStopped) as stopped:
            stop.raise_if_requested()
    assert stopped.value.exit_code == 1 and str(stopped.value) == gone.reason
