"""Typed, frozen models of the operations-side metadata files: retry policies and healing rules
(``policies.yaml``), control flags (``control.yaml``), profiles (``profiles.yaml``) and pipelines
(``pipelines.yaml``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from medallion_assets.catalog.base import Criticality, Layer, Model, check_identifier, example
from medallion_assets.catalog.cron import check_cron
from medallion_assets.catalog.names import check_owners, check_pipeline_id

# --- policies.yaml ----------------------------------------------------------------------------


class RetryPolicy(Model):
    max_retries: int = Field(ge=0, le=100)
    """Retries after the first attempt (0: none); also bounds the relaunches of a run that died."""
    delay_seconds: float = Field(default=0, ge=0)
    """Seconds to wait before the first retry."""
    backoff: Literal["fixed", "exponential"] = "fixed"
    """fixed: every retry waits delay_seconds; exponential: the delay doubles with each retry."""
    jitter: Literal["none", "full", "plus_minus"] = "none"
    (
        "Randomness added to each delay: none; full: anywhere from 0 to the delay; plus_minus: the "
        "delay plus or minus up to half of it."
    )
    max_delay_seconds: float | None = Field(default=None, gt=0)
    """Cap on a retry's delay in seconds, applied before the jitter; none: no cap."""

    @model_validator(mode="after")
    def _delays(self) -> RetryPolicy:
        if self.max_delay_seconds is not None and self.max_delay_seconds < self.delay_seconds:
            raise ValueError(
                f"max_delay_seconds {self.max_delay_seconds} is below delay_seconds "
                f"{self.delay_seconds}"
            )
        return self


BUILTIN_HEALING_ACTIONS: tuple[str, ...] = (
    "clear_staging",
    "reduce_parallelism",
    "refresh_connection",
    "evolve_schema",
    "reroute_source",
    "wait",
)
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+(:[A-Za-z_][\w]*)?$")


class ErrorSignature(Model):
    """Which failures a healing rule handles. Every field given must match (exception: the
    class name or dotted path of the exception or one of its bases; message: a regex searched in
    the message; sqlstate: the five-character code). Rules are tried in file order; the first
    match wins."""

    exception: str | None = None
    """Class name or dotted path of an exception in the error's chain, or of one of its bases."""
    message: str | None = None
    """Regular expression searched in the messages of the error and its causes."""
    sqlstate: str | None = None
    """Five-character SQLSTATE of a database error in the chain, e.g. 40001."""
    system: Literal["lake", "source", "catalog", "warehouse", "spark"] | None = None
    (
        "The system the failure happened in: lake (the lake's storage), source (a raw bucket), "
        "catalog (the lake's catalog), warehouse, or spark (e.g. out of memory). A rule that "
        "reroutes matches raw-source failures only, whatever this says."
    )

    @field_validator("message")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"message regex {value!r} does not compile: {error}") from None
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> ErrorSignature:
        if not (self.exception or self.message or self.sqlstate or self.system):
            raise ValueError("give at least one of exception, message, sqlstate, system")
        return self


class HealingRule(Model):
    name: str
    """Its name, unique in the file; failure messages name the rule that classified the error."""
    match: ErrorSignature
    """Which failures the rule handles; every field given must match."""
    error_code: str
    """The code the failure is recorded under, e.g. S3_THROTTLED."""
    actions: tuple[str, ...] = ()
    (
        "Actions run before the next attempt: clear_staging, reduce_parallelism, "
        "refresh_connection, evolve_schema, reroute_source, wait, or 'package.module:function'."
    )
    then: Literal["retry", "fail", "reroute"] = "retry"
    """retry: per the retry policy; fail: at once, no retry; reroute: retry on the next route."""
    description: str = ""
    """Why the rule does what it does, in words."""

    @field_validator("actions")
    @classmethod
    def _actions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for action in value:
            if action not in BUILTIN_HEALING_ACTIONS and not _DOTTED.match(action):
                raise ValueError(
                    f"unknown healing action {action!r}: use one of "
                    f"{', '.join(BUILTIN_HEALING_ACTIONS)} "
                    "or a dotted path 'package.module:function'"
                )
        return value


class PoliciesFile(Model):
    retry_policies: dict[str, RetryPolicy]
    """Retry policies by name, for datasets, pipelines and default_retry_policy to name."""
    healing_rules: tuple[HealingRule, ...] = ()
    """Failure classifications, tried in file order: the first that matches decides."""
    default_retry_policy: str | None = None
    """Retry policy of steps whose dataset and pipeline name none; none: those are not retried."""


# --- control.yaml -----------------------------------------------------------------------------


class ControlFlag(Model):
    model_config = example(
        scope="dataset", name="silver.orders", enabled=False, reason="vendor outage"
    )

    scope: Literal["pipeline", "layer", "dataset", "source", "target"]
    """What the flag switches: a pipeline, a layer, a dataset, a source or a target."""
    name: str
    """The entity: a pipeline id, a layer, a table, a source's name, or the table of a target."""
    enabled: bool
    """false switches the entity off: its tables are skipped and keep their published version."""
    reason: str = ""
    """Why the flag is set as it is; shown by `medallion control status`."""
    changed_by: str = ""
    """Who set it, e.g. an e-mail address."""
    changed_at: str = ""
    """When it was set, as text, e.g. 2026-02-03T09:15:00Z."""


class ControlFile(Model):
    flags: tuple[ControlFlag, ...] = ()
    """Kill-switch flags; `medallion control disable|enable` overrides them in the control store."""


# --- profiles.yaml ----------------------------------------------------------------------------


_DEFAULT_PRIORITY: dict[Criticality, int] = {"critical": 3, "high": 2, "normal": 1, "low": 0}


class ProfileSettings(Model):
    model_config = example(max_concurrent_runs=2)

    max_concurrent_runs: int = Field(ge=1)
    """Most runs under this profile that the run queue starts at once."""
    criticality_priority: dict[Criticality, int] = Field(
        default_factory=lambda: dict(_DEFAULT_PRIORITY)
    )
    """Weight per criticality, higher first: orders a run's steps and sets its dagster/priority."""
    reserved_capacity_for_critical: int = Field(default=0, ge=0)
    """Slots of each system only critical tables may take (never a system's last slot)."""
    preempt_low_priority: bool = False
    """true: its runs pre-empt and hold lower-priority runs that need one of their systems."""
    spread_over_systems: bool = True
    """true: start the ready step whose systems are least busy; false: strictly by priority."""
    include_upstream_of_critical: bool = False
    """true: what critical tables read may also take reserved slots, and skip_below spares it."""
    skip_below: Criticality | None = None
    """Tables less critical than this are left out of runs (readers use their published version)."""


class Profile(Model):
    model_config = example(settings={"max_concurrent_runs": 2})

    description: str = ""
    """What the profile is for, in words."""
    settings: ProfileSettings
    """How runs under this profile are queued, ordered and limited."""


class ProfilesFile(Model):
    active: str
    """The profile in force unless pipeline_profiles or `medallion control profile` overrides it."""
    profiles: dict[str, Profile]
    """The profiles by name."""
    pipeline_profiles: dict[str, str] = Field(default_factory=dict)
    """Pipeline id -> the profile its runs use instead of active."""

    @model_validator(mode="after")
    def _active_exists(self) -> ProfilesFile:
        if self.active not in self.profiles:
            raise ValueError(
                f"active profile {self.active!r} is not defined; defined profiles: "
                f"{', '.join(sorted(self.profiles))}"
            )
        return self


# --- pipelines.yaml ---------------------------------------------------------------------------


class PipelineSelection(Model):
    model_config = example(layers=["bronze", "silver"])

    layers: tuple[Layer, ...] = ()
    """Every table of these layers."""
    tags: tuple[str, ...] = ()
    """Every table carrying any of these tags (datasets.yaml)."""
    sinks: tuple[str, ...] = ()
    """These tables and every table upstream of them."""

    @model_validator(mode="after")
    def _not_empty(self) -> PipelineSelection:
        if not (self.layers or self.tags or self.sinks):
            raise ValueError("select at least one of layers, tags or sinks")
        return self


class Pipeline(Model):
    model_config = example(
        id="daily_sales", schedule="0 6 * * *", select={"layers": ["bronze", "silver", "gold"]}
    )

    id: str
    """Its id: names its Dagster job (`<id>`) and schedule (`<id>_schedule`), and
    `pipeline:<id>` in the kill switch."""
    description: str = ""
    """What the pipeline does; its jobs' description in Dagster and in exported flows."""
    enabled: bool = True
    """false: its schedule stays stopped; `medallion export` and `simulate` leave it out."""
    schedule: str | None = None
    """Cron schedule (five fields, UTC) its runs start on: each tick runs its whole tables, and
    its daily ones for the day that just ended (once per day); none: it runs only when
    launched."""
    schedule_running: bool = False
    """true: its schedule runs from the moment the code location loads; false: it waits, stopped,
    for an operator to start it in the UI (a first `dagster dev` launches nothing by itself)."""
    owners: tuple[str, ...] = ()
    """Who owns the pipeline (`team:<name>` or an e-mail); the owner of its exported DAG."""
    tags: tuple[str, ...] = ()
    """Labels, written by `catalog export`; they pick no tables (select.tags does)."""
    retry_policy: str | None = None
    """Retry policy (policies.yaml) of its tables that name none; default: default_retry_policy."""
    select: PipelineSelection
    """The tables the pipeline runs: everything its layers, tags and sinks pick."""

    _id = field_validator("id")(classmethod(lambda cls, v: check_pipeline_id(check_identifier(v))))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return check_cron(value) if value is not None else None


class PipelinesFile(Model):
    pipelines: tuple[Pipeline, ...]
    """Named selections of tables, each run as Dagster jobs, optionally on a schedule."""
