"""Rate budgets shared by every step and run using a system, and operators' throttles of them.

``RateBudgets(store)`` keeps one budget per system and dimension (rows, bytes,
requests) in the ``rate_budgets`` table, as the time up to which the rate is reserved: a lease
of N at R per second moves it N/R seconds on (from now, when the budget has been idle) and
the taker waits until it has passed, less a tenth of a second of burst. A reservation is
priced at the rate in force when it is made, so a rate changed later prices only later ones.
One atomic ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` per lease: SQLite runs it under
the write lock its ``BEGIN IMMEDIATE`` took, PostgreSQL under the row's lock, so concurrent
takers on any host each see the other's reservation. On PostgreSQL the time is the server's:
hosts whose clocks disagree still share one timeline.

The rate in force on a system is systems.yaml's, with any rate an operator set
(``medallion control throttle SYSTEM --rows-per-s N --reason ...``, audited) in its place, cut by
any self-healing reduction in force; ``limits`` reads it, ``shared_throttle`` builds the
``SystemThrottle`` a step uses, re-reading it every second::

    store = ControlStore.open(url)
    throttle = shared_throttle(store, "redshift", Throttle(rows_per_second=50_000))
    throttle.rows(10_000)  # waits as the system's one budget says, whoever else is using it
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Float, cast, delete, func, literal, select, update
from sqlalchemy.dialects import postgresql, sqlite

from medallion_assets.catalog.models import Throttle
from medallion_assets.control import schema
from medallion_assets.control.store import AuditEntry, utc_now
from medallion_assets.throttles.shared_budget import DIMENSIONS, LiveLimits, SharedBucket
from medallion_assets.throttles.throttle import SystemThrottle, reduced_limits

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection

    from medallion_assets.control.store import ControlStore
    from medallion_assets.throttles.throttle import Bucket

RATE_FIELDS = tuple(f"{d}_per_second" for d in DIMENSIONS)


def rate_text(field: str, value: float | None) -> str:
    """``rows/s 500``, ``bytes/s 52428800``; ``-`` for no limit."""
    shown = "-" if value is None else f"{value:.0f}" if value == int(value) else f"{value:g}"
    return f"{field.split('_')[0]}/s {shown}"


@dataclass(frozen=True)
class ThrottleOverride:
    """The rates an operator set on ``system`` (None: systems.yaml's rate stands)."""

    system: str
    rows_per_second: float | None
    bytes_per_second: float | None
    requests_per_second: float | None
    reason: str
    changed_by: str
    changed_at: str  # ISO 8601, UTC

    def rates(self) -> dict[str, float]:
        """The rates set, by field name (``rows_per_second``...)."""
        values = {f: getattr(self, f) for f in RATE_FIELDS}
        return {f: float(v) for f, v in values.items() if v is not None}

    def describe(self) -> str:
        """``rows/s 500, bytes/s 1048576``."""
        return ", ".join(rate_text(f, v) for f, v in self.rates().items())

    def applied_to(self, limits: Throttle) -> Throttle:
        """``limits`` with the rates set here in place of theirs."""
        return limits.model_copy(update=self.rates())


class RateBudgets:
    """The ``rate_budgets`` and ``throttle_overrides`` tables of one control store."""

    def __init__(self, store: ControlStore):
        self.store = store

    # --- the shared buckets (throttles.shared_budget.RateLedger) -------------------------

    def lease(self, system: str, dimension: str, amount: float, rate: float) -> float:
        """Reserve ``amount`` at ``rate`` after everything reserved before (or from now, when
        the budget is idle); returns the seconds from now until the reservation is paid. One
        statement: concurrent takers queue on the row."""
        table = schema.rate_budgets
        with self.store.transaction() as db:
            # Read the clock only now, under the write lock (SQLite's BEGIN IMMEDIATE): a
            # time read before a wait for the lock would have the taker sleep that wait twice.
            now = self._now()
            cost = literal(amount / rate, Float)
            insert = self._insert().values(
                system=system, dimension=dimension, reserved_until=now + cost
            )
            statement = insert.on_conflict_do_update(
                index_elements=[table.c.system, table.c.dimension],
                set_={"reserved_until": self._greatest(table.c.reserved_until, now) + cost},
            ).returning(table.c.reserved_until - now)
            return float(db.execute(statement).scalar_one())

    def give_back(self, system: str, dimension: str, amount: float, rate: float) -> None:
        """Return ``amount`` leased at ``rate`` and not spent: later reservations move up."""
        table = schema.rate_budgets
        statement = (
            update(table)
            .where(table.c.system == system, table.c.dimension == dimension)
            .values(reserved_until=table.c.reserved_until - literal(amount / rate, Float))
        )
        with self.store.transaction() as db:
            db.execute(statement)

    def _now(self) -> ColumnElement[float]:
        if self.store.dialect == "postgresql":
            return cast(func.extract("epoch", func.clock_timestamp()), Float)
        return literal(time.time(), Float)  # SQLite: one machine, one clock

    def _insert(self) -> postgresql.Insert | sqlite.Insert:
        table = schema.rate_budgets
        return (
            postgresql.insert(table) if self.store.dialect == "postgresql" else sqlite.insert(table)
        )

    def _greatest(self, a: ColumnElement[float], b: ColumnElement[float]) -> ColumnElement[float]:
        return func.greatest(a, b) if self.store.dialect == "postgresql" else func.max(a, b)

    # --- operators' throttles -----------------------------------------------------------------

    def overrides(self) -> dict[str, ThrottleOverride]:
        """Every system an operator throttled, by system."""
        table = schema.throttle_overrides
        query = select(*schema.columns_for(table, ThrottleOverride)).order_by(table.c.system)
        with self.store.transaction() as db:
            rows = db.execute(query).all()
        return {r[0]: ThrottleOverride(*r) for r in rows}

    def set_override(
        self, system: str, rates: Mapping[str, float], reason: str, changed_by: str
    ) -> ThrottleOverride:
        """Set ``rates`` (by field: ``rows_per_second``...; each > 0) on ``system`` from now on;
        rates set earlier and not named stay. The change and its audit entry commit together."""
        bad = {f: v for f, v in rates.items() if f not in RATE_FIELDS or not v > 0}
        if bad or not rates:
            raise ValueError(f"rates must be positive {', '.join(RATE_FIELDS)}; got {dict(rates)}")
        table = schema.throttle_overrides
        with self.store.transaction() as db:
            row = db.execute(
                select(*[table.c[f] for f in RATE_FIELDS]).where(table.c.system == system)
            ).first()
            before = dict(zip(RATE_FIELDS, row, strict=True)) if row is not None else {}
            rows, nbytes, requests = (rates.get(f, before.get(f)) for f in RATE_FIELDS)
            override = ThrottleOverride(
                system, rows, nbytes, requests, reason, changed_by, utc_now()
            )
            db.execute(self.store.upsert(table, vars(override)))
            message = f"{system} throttled to {override.describe()} by {changed_by}: {reason}"
            self._audit(db, override, message, override.rates())
        return override

    def reset_override(self, system: str, reason: str, changed_by: str) -> ThrottleOverride | None:
        """Give ``system`` its systems.yaml rates back; returns the override cleared (None:
        there was none, and nothing is recorded)."""
        table = schema.throttle_overrides
        with self.store.transaction() as db:
            row = db.execute(
                select(*schema.columns_for(table, ThrottleOverride)).where(table.c.system == system)
            ).first()
            if row is None:
                return None
            cleared = ThrottleOverride(*row)
            db.execute(delete(table).where(table.c.system == system))
            message = (
                f"{system} back to its systems.yaml rates (was {cleared.describe()}) by "
                f"{changed_by}: {reason}"
            )
            now = ThrottleOverride(system, None, None, None, reason, changed_by, utc_now())
            self._audit(db, now, message, {"reset": True})
        return cleared

    def _audit(
        self,
        db: Connection,
        override: ThrottleOverride,
        message: str,
        details: Mapping[str, object],
    ) -> None:
        entry = AuditEntry(
            override.changed_at,
            "throttle",
            f"system:{override.system}",
            message,
            "",
            dict(details) | {"reason": override.reason, "changed_by": override.changed_by},
        )
        self.store.append(db, entry)

    # --- the rates in force -------------------------------------------------------------------

    def limits(self, system: str, declared: Throttle, now: float) -> Throttle:
        """``declared`` (systems.yaml) with the operator's rates in their place and any
        self-healing cut in force at ``now`` applied."""
        table = schema.throttle_overrides
        query = select(*schema.columns_for(table, ThrottleOverride)).where(table.c.system == system)
        with self.store.transaction() as db:
            row = db.execute(query).first()
        limits = ThrottleOverride(*row).applied_to(declared) if row is not None else declared
        return reduced_limits(limits, self.store.state.throttle_factor(system, now))


def shared_throttle(store: ControlStore, system: str, declared: Throttle) -> SystemThrottle:
    """The throttle a step uses on ``system``: its rows, bytes and requests come out of the
    budgets every step and run share, at the rates in force (re-read every second)."""
    budgets = RateBudgets(store)
    live = LiveLimits(lambda: budgets.limits(system, declared, time.time()))
    buckets: dict[str, Bucket] = {d: SharedBucket(budgets, system, d, live) for d in DIMENSIONS}
    return SystemThrottle(system, live.current(), buckets=buckets)
