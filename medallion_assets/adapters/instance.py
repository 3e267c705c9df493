"""The Dagster instance a project's runs are recorded in: ``$MEDALLION_HOME/dagster`` (by
default ``<project>/.medallion/dagster``; or ``$DAGSTER_HOME``), its settings written there
(the priority run queue, the profiles' run limits), shared by ``medallion run`` and
``medallion dev``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import yaml

from medallion_assets.catalog.operations import ProfilesFile
from medallion_assets.profiles.priority import HOLD_TAG, PROFILE_TAG
from medallion_assets.settings import MedallionSettings

# The settings a new instance folder gets; an existing dagster.yaml is the operator's and is
# left as it is. Run monitoring (it runs in the daemon, i.e. under `dagster dev`): a run whose
# worker never came up or whose cancel hangs is marked failed instead of staying STARTING or
# CANCELING forever; a lost run is never resumed in place (max_resume_run_attempts: 0), because
# the relaunch sensor heals it first and re-launches only its unfinished tables. `medallion run`
# has no daemon: it marks its own lost runs failed when it starts (adapters/lost_runs.py).
# nux: the UI's first-open pop-up (Dagster's community and newsletter), off as telemetry is.
INSTANCE_SETTINGS = """\
telemetry:
  enabled: false
nux:
  enabled: false
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 30
"""


# The first line of a dagster.yaml this project wrote: such a file follows profiles.yaml (it is
# rewritten when the profiles' limits change); any other is the operator's.
WRITTEN_BY = (
    "# written by medallion from metadata/profiles.yaml (rewritten when its limits change); "
    "delete this line to keep your edits\n"
)


# How often the daemon starts queued runs: a tick reads the queued and in-progress runs, a few
# SQLite queries.
DEQUEUE_SECONDS = 1


def instance_settings(
    profiles: ProfilesFile | None,
    project_root: Path | None = None,
    run_slots: int | None = None,
    home: Path | None = None,
) -> str:
    """The project instance's dagster.yaml: ``INSTANCE_SETTINGS`` and Dagster's queued run
    coordinator, which starts queued runs highest ``dagster/priority`` first (the tag every
    request of the project carries), at most the largest ``max_concurrent_runs`` of the
    profiles at once (and at most ``run_slots``, the machine's room for runs of a local Spark:
    ``MedallionSettings.run_slots``), and at most each profile's own ``max_concurrent_runs`` of
    the runs tagged with it. With ``project_root``, the coordinator also tags the runs launched
    without a priority (``adapters.run_queue``). With ``home`` (the instance's folder), its
    event log is ``event_log.SqliteEventLog``: Dagster's SQLite files, written ~7x faster."""
    config: dict[str, object] = {}
    if project_root is not None:
        config["project_root"] = str(Path(project_root).resolve())
        # Dagster's default is 5 s: a critical run would wait up to that for a free slot.
        config["dequeue_interval_seconds"] = DEQUEUE_SECONDS
    limits = (
        {n: p.settings.max_concurrent_runs for n, p in sorted(profiles.profiles.items())}
        if profiles is not None
        else {}
    )
    caps = [max(limits.values())] if limits else []
    if run_slots is not None:
        caps.append(run_slots)
    if caps:
        config["max_concurrent_runs"] = min(caps)
    if limits:
        config["tag_concurrency_limits"] = [
            {"key": PROFILE_TAG, "value": name, "limit": limit} for name, limit in limits.items()
        ] + [{"key": HOLD_TAG, "value": "yes", "limit": 0}]  # held back by a focus run
    if project_root is not None:
        coordinator: dict[str, object] = {
            "module": "medallion_assets.adapters.run_queue",
            "class": "PriorityRunCoordinator",
        }
    else:
        coordinator = {"module": "dagster", "class": "QueuedRunCoordinator"}
    if config:
        coordinator["config"] = config
    written: dict[str, object] = {"run_coordinator": coordinator}
    if home is not None:
        written["event_log_storage"] = {
            "module": "medallion_assets.adapters.event_log",
            "class": "SqliteEventLog",
            # Where Dagster's default SQLite event log keeps its files: runs recorded before
            # stay readable.
            "config": {"base_dir": str(Path(home).resolve() / "history" / "runs")},
        }
    return WRITTEN_BY + INSTANCE_SETTINGS + yaml.safe_dump(written, sort_keys=False)


def dagster_home(project_root: Path, env: Mapping[str, str] | None = None) -> Path:
    """``$DAGSTER_HOME``, else ``dagster`` in the project's state folder (``$MEDALLION_HOME``,
    else ``<project>/.medallion``): runs on one lake's state stay apart from another's, so an
    asset page never shows a version of the other lake."""
    env = os.environ if env is None else env
    if env.get("DAGSTER_HOME"):
        return Path(env["DAGSTER_HOME"]).resolve()
    return MedallionSettings.from_env(env, Path(project_root)).state_home.resolve() / "dagster"


def project_instance(
    project_root: Path,
    env: Mapping[str, str] | None = None,
    profiles: ProfilesFile | None = None,
) -> dg.DagsterInstance:
    """The persistent instance ``medallion run`` records into (see ``dagster_home``), its
    dagster.yaml written with ``instance_settings`` (the profiles' run limits, and the machine's
    room for runs of a local Spark from the settings in ``env``) when it does not exist yet, or
    brought up to date when this project wrote it."""
    env = os.environ if env is None else env
    home = dagster_home(project_root, env)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    slots = MedallionSettings.from_env(env, project_root).run_slots()
    wanted = instance_settings(profiles, project_root, slots, home)
    if not config.exists() or (
        config.read_text().startswith(WRITTEN_BY) and config.read_text() != wanted
    ):
        config.write_text(wanted)
    return dg.DagsterInstance.from_config(str(home))
