"""Profiles an operator put pipelines in, over ``profiles.yaml``: ``medallion control profile
PIPELINE|all PROFILE --reason ...`` writes one here, audited in the same transaction, and the
next schedule tick, sensor or ``medallion run`` reads it (``profiles.profiles`` decides which
profile is in force). ``default`` as the profile clears the override.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from medallion_assets.control import schema
from medallion_assets.control.store import AuditEntry, utc_now
from medallion_assets.profiles.profiles import ALL, DEFAULT

if TYPE_CHECKING:
    from medallion_assets.control.store import ControlStore


@dataclass(frozen=True)
class ProfileOverride:
    pipeline: str  # a pipeline id, or "all"
    profile: str
    reason: str
    changed_by: str
    changed_at: str  # ISO 8601, UTC


class ProfileOverrides:
    """The ``profile_overrides`` table of one control store."""

    def __init__(self, store: ControlStore):
        self.store = store

    def all(self) -> dict[str, ProfileOverride]:
        """Every override, by pipeline (``all`` for the one over every pipeline)."""
        table = schema.profile_overrides
        query = select(*schema.columns_for(table, ProfileOverride)).order_by(table.c.pipeline)
        with self.store.transaction() as db:
            rows = db.execute(query).all()
        return {r[0]: ProfileOverride(*r) for r in rows}

    def names(self) -> dict[str, str]:
        """pipeline -> profile, as ``profiles.profiles.effective_profile`` takes them."""
        return {pipeline: o.profile for pipeline, o in self.all().items()}

    def set(self, pipeline: str, profile: str, reason: str, changed_by: str) -> ProfileOverride:
        """Put ``pipeline`` (or ``all``) in ``profile`` from now on; ``default`` clears the
        override. The change and its audit entry commit together."""
        override = ProfileOverride(pipeline, profile, reason, changed_by, utc_now())
        table = schema.profile_overrides
        whom = "every pipeline" if pipeline == ALL else f"pipeline {pipeline}"
        if profile == DEFAULT:
            message = f"{whom} back to its profiles.yaml profile by {changed_by}: {reason}"
        else:
            message = f"{whom} put in profile {profile} by {changed_by}: {reason}"
        with self.store.transaction() as db:
            if profile == DEFAULT:
                db.execute(delete(table).where(table.c.pipeline == pipeline))
            else:
                db.execute(self.store.upsert(table, vars(override)))
            self.store.append(
                db,
                AuditEntry(
                    override.changed_at,
                    "profile",
                    f"pipeline:{pipeline}",
                    message,
                    "",
                    {"profile": profile, "reason": reason, "changed_by": changed_by},
                ),
            )
        return override
