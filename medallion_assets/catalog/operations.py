"""Typed, frozen models of the operations-side metadata files: retry policies and healing rules
(``policies.yaml``), control flags (``control.yaml``), profiles (``profiles.yaml``) and pipelines
(``pipelines.yaml``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from medallion_assets.catalog.base import Criticality, Layer, Model, check_identifier
from medallion_assets.catalog.cron import check_cron
from medallion_assets.catalog.names import check_owners, check_pipeline_id

# --- policies.yaml ----------------------------------------------------------------------------


class RetryPolicy(Model):
    max_retries: int = Field(ge=0, le=100)
    delay_seconds: float = Field(default=0, ge=0)
    backoff: Literal["fixed", "exponential"] = "fixed"
    jitter: Literal["none", "full", "plus_minus"] = "none"
    max_delay_seconds: float | None = Field(default=None, gt=0)

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
    message: str | None = None
    sqlstate: str | None = None

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
        if not (self.exception or self.message or self.sqlstate):
            raise ValueError("give at least one of exception, message, sqlstate")
        return self


class HealingRule(Model):
    name: str
    match: ErrorSignature
    error_code: str
    actions: tuple[str, ...] = ()
    then: Literal["retry", "fail", "reroute"] = "retry"
    description: str = ""

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
    healing_rules: tuple[HealingRule, ...] = ()
    default_retry_policy: str | None = None


# --- control.yaml -----------------------------------------------------------------------------


class ControlFlag(Model):
    scope: Literal["pipeline", "layer", "dataset", "source", "target"]
    name: str
    enabled: bool
    reason: str = ""
    changed_by: str = ""
    changed_at: str = ""


class ControlFile(Model):
    flags: tuple[ControlFlag, ...] = ()


# --- profiles.yaml ----------------------------------------------------------------------------


_DEFAULT_PRIORITY: dict[Criticality, int] = {"critical": 3, "high": 2, "normal": 1, "low": 0}


class ProfileSettings(Model):
    max_concurrent_runs: int = Field(ge=1)
    criticality_priority: dict[Criticality, int] = Field(
        default_factory=lambda: dict(_DEFAULT_PRIORITY)
    )
    reserved_capacity_for_critical: int = Field(default=0, ge=0)
    preempt_low_priority: bool = False
    spread_over_systems: bool = True
    include_upstream_of_critical: bool = False
    skip_below: Criticality | None = None


class Profile(Model):
    description: str = ""
    settings: ProfileSettings


class ProfilesFile(Model):
    active: str
    profiles: dict[str, Profile]
    pipeline_profiles: dict[str, str] = Field(default_factory=dict)

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
    layers: tuple[Layer, ...] = ()
    tags: tuple[str, ...] = ()
    sinks: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _not_empty(self) -> PipelineSelection:
        if not (self.layers or self.tags or self.sinks):
            raise ValueError("select at least one of layers, tags or sinks")
        return self


class Pipeline(Model):
    id: str
    description: str = ""
    enabled: bool = True
    schedule: str | None = None
    owners: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    retry_policy: str | None = None
    select: PipelineSelection

    _id = field_validator("id")(classmethod(lambda cls, v: check_pipeline_id(check_identifier(v))))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return check_cron(value) if value is not None else None


class PipelinesFile(Model):
    pipelines: tuple[Pipeline, ...]
