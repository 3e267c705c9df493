"""The plain records the control store's parts share: an audit entry and the store's
timestamps (sortable ISO 8601 UTC text)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AuditEntry:
    at: str  # ISO 8601, UTC
    kind: str  # run, attempt, error, healing, flag, outcome, ...
    entity: str  # "dataset:silver.orders", "run", "source:orders", ...
    message: str
    run_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


def iso_utc(seconds: float) -> str:
    """Epoch seconds as sortable ISO 8601 UTC text (the store compares these as strings)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{int(seconds % 1 * 1e6):06d}Z"


def utc_now() -> str:
    return iso_utc(time.time())
