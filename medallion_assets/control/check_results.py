"""Check results of lake outputs in the control store: the newest published version's of each
table (day), and the newest output its blocking checks rejected.

A skipped build reports the stored results of the version it reuses; a build from the same
code and inputs as a rejected output is refused without running (it would fail the same checks).
A published version supersedes a rejection recorded before it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import delete, select

from medallion_assets.control import schema

if TYPE_CHECKING:
    from sqlalchemy import RowMapping

    from medallion_assets.control.engine import StoreWrites

Outcome = Literal["published", "rejected"]


@dataclass(frozen=True)
class StoredChecks:
    """The results recorded for one output of a table (day)."""

    dataset: str
    partition: str | None
    outcome: Outcome
    version: str  # the lake version, or where a rejected output is kept
    code_version: str
    inputs: dict[str, str]
    checks: tuple[dict[str, Any], ...]
    recorded_at: float
    run_id: str = ""


class CheckLedger:
    """The check results in one control store."""

    def __init__(self, store: StoreWrites):
        self.store = store

    def record(
        self,
        outcome: Outcome,
        dataset: str,
        partition: str | None,
        version: str,
        code_version: str,
        inputs: Mapping[str, str],
        checks: list[dict[str, Any]],
        run_id: str = "",
    ) -> None:
        """Keep the results of a table's (day's) newest output of this outcome; a publish
        clears the table's (day's) rejection."""
        table = schema.check_results
        values = {
            "dataset": dataset,
            "partition": partition or "",
            "outcome": outcome,
            "version": version,
            "code_version": code_version,
            "inputs": json.dumps(dict(inputs), sort_keys=True),
            "checks": json.dumps(checks, default=str),
            "recorded_at": time.time(),
            "run_id": run_id,
        }
        with self.store.transaction() as db:
            db.execute(self.store.upsert(table, values))
            if outcome == "published":
                db.execute(
                    delete(table).where(
                        (table.c.dataset == dataset)
                        & (table.c.partition == (partition or ""))
                        & (table.c.outcome == "rejected")
                    )
                )

    def of(self, dataset: str, partition: str | None, outcome: Outcome) -> StoredChecks | None:
        table = schema.check_results
        query = select(table).where(
            (table.c.dataset == dataset)
            & (table.c.partition == (partition or ""))
            & (table.c.outcome == outcome)
        )
        with self.store.transaction() as db:
            row = db.execute(query).mappings().first()
        return _stored(row) if row is not None else None

    def rejections(self, dataset: str) -> list[StoredChecks]:
        """The kept rejections of a table and of each of its days."""
        table = schema.check_results
        query = (
            select(table)
            .where((table.c.dataset == dataset) & (table.c.outcome == "rejected"))
            .order_by(table.c.partition)
        )
        with self.store.transaction() as db:
            rows = db.execute(query).mappings().all()
        return [_stored(r) for r in rows]


def _stored(row: RowMapping) -> StoredChecks:
    return StoredChecks(
        row["dataset"],
        row["partition"] or None,
        row["outcome"],
        row["version"],
        row["code_version"],
        json.loads(row["inputs"]),
        tuple(json.loads(row["checks"])),
        float(row["recorded_at"]),
        row["run_id"],
    )
