"""``medallion control throttle``: the rates a system runs at, and an operator's change of them
at run time (audited; running steps see it within about a second, without a redeploy)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.cli.common import fail, load, operator, project_option
from medallion_assets.cli.control_cmd import format_option, open_plane
from medallion_assets.throttles.rate_budgets import RateBudgets, ThrottleOverride, rate_text

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.control.store import ControlStore

# the Throttle field -> the option that sets it
RATE_OPTIONS = {
    "rows_per_second": "--rows-per-s",
    "bytes_per_second": "--bytes-per-s",
    "requests_per_second": "--requests-per-s",
}


@dataclass(frozen=True)
class SystemRates:
    """What a system runs at now: each rate in force (None: unlimited), systems.yaml's, the
    operator's override and the self-healing cut."""

    system: str
    in_force: dict[str, float | None]
    systems_yaml: dict[str, float | None]
    override: ThrottleOverride | None
    cut_factor: float

    def describe(self) -> str:
        rates = ", ".join(rate_text(field, value) for field, value in self.in_force.items())
        lines = [f"{self.system:<20} {rates}"]
        if self.override is not None:
            o = self.override
            lines.append(
                f"  throttled to {o.describe()} by {o.changed_by} since {o.changed_at}: {o.reason}"
            )
        if self.cut_factor != 1.0:
            lines.append(f"  cut to {self.cut_factor:g}x by self-healing (reduce_parallelism)")
        return "\n".join(lines)


@click.command()
@click.argument("system", required=False)
@click.option("--rows-per-s", "rows_per_s", type=float, default=None, help="Rows per second.")
@click.option("--bytes-per-s", "bytes_per_s", type=float, default=None, help="Bytes per second.")
@click.option(
    "--requests-per-s", "requests_per_s", type=float, default=None, help="Requests per second."
)
@click.option("--reset", is_flag=True, help="Give SYSTEM its systems.yaml rates back.")
@click.option("--reason", default=None, help="Why (kept in the audit log); needed to change.")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@format_option
@project_option
def throttle(
    system: str | None,
    rows_per_s: float | None,
    bytes_per_s: float | None,
    requests_per_s: float | None,
    reset: bool,
    reason: str | None,
    changed_by: str | None,
    fmt: str,
    project: Path,
) -> None:
    """Show the rates each system (or SYSTEM) runs at and why; with --rows-per-s,
    --bytes-per-s or --requests-per-s, set SYSTEM's rates from now on, shared by every step and
    run using it (rates not named keep theirs); --reset gives it its systems.yaml rates back.
    Running steps take the change within about a second."""
    catalog = load(project)
    values = dict(zip(RATE_OPTIONS, (rows_per_s, bytes_per_s, requests_per_s), strict=True))
    given = {field: value for field, value in values.items() if value is not None}
    if system is not None and system not in catalog.systems:
        fail(
            f"no system named {system!r} in metadata/systems.yaml: its systems are "
            f"{', '.join(sorted(catalog.systems))}"
        )
    if reason is not None and not (given or reset):
        fail(
            "--reason goes with a change: add --rows-per-s, --bytes-per-s, --requests-per-s "
            "or --reset"
        )
    store = open_plane(project).store()
    if given or reset:
        if system is None:
            fail(
                "name the SYSTEM to throttle: medallion control throttle SYSTEM --rows-per-s N ..."
            )
        _change(store, system, given, reset, reason, operator(changed_by))
    wanted = [system] if system is not None else sorted(catalog.systems)
    shown = [_rates(store, catalog, name) for name in wanted]
    if fmt == "json":
        click.echo(json.dumps([asdict(r) for r in shown], indent=2))
        return
    for rates in shown:
        click.echo(rates.describe())


def _change(
    store: ControlStore,
    system: str,
    given: dict[str, float],
    reset: bool,
    reason: str | None,
    who: str,
) -> None:
    if reset and given:
        fail("--reset gives back systems.yaml's rates: give it without --rows-per-s and the like")
    for field, value in given.items():
        if not (value > 0 and math.isfinite(value)):
            fail(
                f"{RATE_OPTIONS[field]} must be a positive number (got {value:g}): to give "
                f"{system} its systems.yaml rates back, use --reset --reason ..."
            )
    if not reason:
        fail("say why with --reason (it is kept in the audit log)")
    if reset:
        cleared = RateBudgets(store).reset_override(system, reason, who)
        if cleared is None:
            click.echo(f"{system}: no throttle to clear, it runs at its systems.yaml rates")
        else:
            click.echo(f"{system}: back to its systems.yaml rates (was {cleared.describe()})")
        return
    override = RateBudgets(store).set_override(system, given, reason, who)
    click.echo(f"{system} throttled to {override.describe()} by {who} at {override.changed_at}")


def _rates(store: ControlStore, catalog: Catalog, system: str) -> SystemRates:
    declared = catalog.systems[system].throttle
    now = time.time()
    limits = RateBudgets(store).limits(system, declared, now)
    return SystemRates(
        system,
        {f: getattr(limits, f) for f in RATE_OPTIONS},
        {f: getattr(declared, f) for f in RATE_OPTIONS},
        RateBudgets(store).overrides().get(system),
        store.state.throttle_factor(system, now),
    )
