"""What a backfill would rebuild before it is launched: its blast radius.

A backfill of some tables over days ``FROM...TO`` rebuilds them and everything downstream of
them (a reader of a rebuilt table is stale until it is rebuilt too): each daily-partitioned
table for each of its days in the range (from its ``partitions.start`` on), each other table
once. Its warehouse side is every rebuilt table with a target, with the rows its latest loads of
those partitions hold (what the warehouse reloads); its consumers are the exposures reading any
rebuilt table; its time is the simulation of its runs (one per day, then one for the tables
without days) under the profile in force. Pure.

    preview = preview_backfill(catalog, ["bronze.user_events"], date(2026, 1, 1),
                               date(2026, 1, 3), loaded_rows={}, durations={})
    preview.tables  # (("bronze.user_events", ("2026-01-01", ...)), ("silver.user_events", ...))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from medallion_assets.catalog import Catalog
from medallion_assets.simulate.simulate import simulate_runs


@dataclass(frozen=True)
class Reload:
    table: str
    warehouse_table: str
    partitions: tuple[str, ...]  # () for a table without days
    rows: int  # the rows its latest loads of those partitions hold


@dataclass(frozen=True)
class BackfillPreview:
    selected: tuple[str, ...]
    start: date
    end: date
    tables: tuple[tuple[str, tuple[str, ...]], ...]  # table -> its days (() for once), in order
    reloads: tuple[Reload, ...]
    exposures: tuple[str, ...]
    simulated_s: float

    @property
    def builds(self) -> int:
        """Table builds: a table per day, or once."""
        return sum(max(1, len(days)) for _, days in self.tables)

    @property
    def partitions(self) -> tuple[str, ...]:
        return tuple(sorted({d for _, days in self.tables for d in days}))

    def as_dict(self) -> dict[str, object]:
        return {
            "selected": list(self.selected),
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "tables": [{"table": t, "partitions": list(days)} for t, days in self.tables],
            "builds": self.builds,
            "warehouse_reloads": [
                {
                    "table": r.table,
                    "warehouse_table": r.warehouse_table,
                    "partitions": list(r.partitions),
                    "rows": r.rows,
                }
                for r in self.reloads
            ],
            "warehouse_rows": sum(r.rows for r in self.reloads),
            "exposures": list(self.exposures),
            "simulated_s": self.simulated_s,
        }


def parse_range(text: str) -> tuple[date, date]:
    """``FROM...TO`` (ISO days, both included; ``DAY`` alone is one day)."""
    first, dots, last = text.partition("...")
    try:
        start = date.fromisoformat(first.strip())
        end = date.fromisoformat(last.strip()) if dots else start
    except ValueError:
        raise ValueError(
            f"--partitions {text!r} is not FROM...TO with ISO days, e.g. 2026-01-01...2026-01-07"
        ) from None
    if end < start:
        raise ValueError(f"--partitions {text!r} ends before it starts")
    return start, end


def preview_backfill(
    catalog: Catalog,
    selected: Sequence[str],
    start: date,
    end: date,
    loaded_rows: Mapping[tuple[str, str], int],
    durations: Mapping[str, float],
    max_workers: int = 2,
    max_runs: int | None = None,
    run_start_s: float = 0.0,
) -> BackfillPreview:
    """The backfill of ``selected`` over ``start``..``end``. ``loaded_rows``: (table, day or
    "") -> rows of its latest warehouse load; ``durations``: table -> seconds of one build;
    ``max_runs`` and ``run_start_s`` as in ``simulate.simulate``."""
    for table in selected:
        if table not in catalog.datasets:
            raise ValueError(f"no table named {table!r} in this project")
    wanted = set(selected)
    for table in selected:
        wanted |= {n for n in catalog.lineage.downstream(table) if n in catalog.datasets}
    rebuilt: list[tuple[str, tuple[str, ...]]] = []
    for name, dataset in catalog.datasets.items():
        if name not in wanted:
            continue
        partitioning = dataset.settings.partitions
        if partitioning is None:
            rebuilt.append((name, ()))
            continue
        first = max(start, partitioning.start)
        days = tuple((first + timedelta(days=n)).isoformat() for n in range((end - first).days + 1))
        if days:
            rebuilt.append((name, days))
    reloads = []
    for name, days in rebuilt:
        target = catalog.datasets[name].target
        if target is None:
            continue
        rows = sum(loaded_rows.get((name, d), 0) for d in days or ("",))
        reloads.append(Reload(name, target.warehouse_table, days, rows))
    names = {t for t, _ in rebuilt}
    exposures = tuple(
        e.name for e in catalog.exposures.values() if names.intersection(e.depends_on)
    )
    daily = sorted({d for _, days in rebuilt for d in days})
    # One run per day, as Dagster's backfill daemon launches them; the tables without days
    # after them (they read what the days rebuild).
    runs = [(day, [t for t, days in rebuilt if day in days]) for day in daily]
    once = [t for t, days in rebuilt if not days]
    took = 0.0
    for batch in (runs, [("once", once)] if once else []):
        if batch:
            sim = simulate_runs(catalog, durations, batch, None, max_workers, max_runs, run_start_s)
            took += sim.makespan_s
    return BackfillPreview(
        tuple(selected),
        start,
        end,
        tuple(rebuilt),
        tuple(reloads),
        exposures,
        took,
    )
