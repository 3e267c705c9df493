"""What preflight found: one line per part of the run's world, and what stops a run.

>>> ok = Finding("catalog", "ok", "the lake's catalog sqlite:///c.db answers")
>>> bad = Finding("lake", "failed", "the lake's bucket s3://lake does not exist: create it")
>>> require([ok])
>>> require([ok, bad])  # doctest: +ELLIPSIS
Traceback (most recent call last):
medallion_assets.preflight.findings.PreflightFailed: preflight: the lake's bucket s3://lake ...
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from medallion_assets.errors import ResourceError

Status = Literal["ok", "warning", "failed", "skipped"]


class PreflightFailed(ResourceError):
    """A part the run needs does not answer or is misconfigured; the message has one line per
    problem, each with its fix. Nothing was started, nothing changed."""

    def __init__(self, problems: list[Finding]):
        self.problems = problems
        super().__init__("\n".join(f"preflight: {p.line}" for p in problems))


@dataclass(frozen=True)
class Finding:
    """One part checked: ``part`` (jars, credentials, lake, catalog, raw, warehouse), how it
    went, and one line for a person (what was found, or what is wrong and the fix)."""

    part: str
    status: Status
    line: str

    @property
    def failed(self) -> bool:
        return self.status == "failed"


def require(findings: Iterable[Finding]) -> None:
    """Raise ``PreflightFailed`` naming every failed finding; warnings do not stop a run."""
    problems = [f for f in findings if f.failed]
    if problems:
        raise PreflightFailed(problems)
