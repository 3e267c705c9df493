"""What a ``medallion run`` (or ``build``) did, said: the summary table, one row per table and
day, then a section for each thing a person may have to act on (blocked, not built, set aside,
skipped copies, warnings, failures, how incremental tables were built, what is down)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_assets.catalog import load_catalog

if TYPE_CHECKING:
    from medallion_assets.adapters.run_summary import RunSummary


def sections(project: Path, summary: RunSummary) -> list[str]:
    """The sections below the summary table that have something to say, in order."""
    found = (
        blocked(project, summary),
        not_built(summary),
        incremental(summary),
        set_aside(summary),
        copies(summary),
        warnings(summary),
        failed(summary),
    )
    return [section for section in found if section]


def in_force(project: Path) -> str:
    """The down nodes and reroutes the control store holds after the run (healing's or an
    operator's): a run that read around a source says so, whatever it built."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.cli.control_cmd import open_plane
    from medallion_assets.recovery.recover import DownNodes

    store = open_plane(project).store()
    lines = [
        f"  {n.node} is down (by {n.changed_by} since {n.changed_at}): {n.reason}; "
        f"`medallion control up {n.node}` when it is back"
        for n in DownNodes(store).all().values()
    ]
    lines += [
        f"  {table} reads along route {r.route} (by {r.changed_by}): {r.reason}"
        for table, r in sorted(store.routes().items())
    ]
    if not lines:
        return ""
    return "DOWN AND REROUTED: in force in the control store (`medallion control status`)\n" + (
        "\n".join(lines)
    )


def table(summary: RunSummary) -> str:
    """One row per table and partition, then the totals."""
    # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
    from medallion_assets.adapters.run_summary import counts

    rows = sorted(summary.results, key=lambda r: (r.table, r.partition or ""))
    lines = [
        f"{'table':<40} {'partition':<10} {'status':<9} {'written':>9} {'current':>9} "
        f"{'quarantined':>11} {'warehouse':>9} {'checks':>7}"
    ]
    for r in rows:
        checks = f"{r.checks_passed}/{len(r.checks)}" if r.checks else ""
        written = r.rows if r.status == "built" else None
        lines.append(
            f"{r.table:<40} {r.partition or '-':<10} {r.status:<9} {_number(written):>9} "
            f"{_number(r.current_rows):>9} {_number(r.quarantined):>11} "
            f"{_number(r.warehouse_rows):>9} {checks:>7}"
        )
    found = counts(summary.results)
    tally = ", ".join(f"{n} {status}" for status, n in found.items() if n)
    passed = sum(r.checks_passed for r in rows)
    failed_checks = sum(r.checks_failed for r in rows)
    head = ""
    if summary.nothing_changed:  # with a table blocked, its rejected output is a change refused
        head = "nothing published: " if summary.having("blocked") else "nothing changed: "
    lines.append(
        f"{head}{tally}; {summary.rows_written:,} row{'' if summary.rows_written == 1 else 's'} "
        f"written by this run; checks {passed} "
        f"passed / {failed_checks} failed; {summary.seconds:.1f} s, {len(summary.run_ids)} run(s)"
    )
    return "\n".join(lines)


def blocked(project: Path, summary: RunSummary) -> str:
    """Which tables checks held back, why, and what downstream kept its previous version."""
    held = summary.having("blocked")
    if not held:
        return ""

    catalog = load_catalog(project)
    lines = ["BLOCKED: failing blocking checks kept these tables from publishing"]
    for result in sorted(held, key=lambda r: r.label):
        head, *checks = result.message.splitlines()
        lines.append(f"  {head}")
        lines += [f"  {line}" for line in checks]
        for check in result.checks:
            if check.sample is not None and not check.passed:
                lines.append(f"      sample failing row: {json.dumps(check.sample, default=str)}")
        protected = sorted(catalog.lineage.dag.downstream(result.table))
        if protected:
            lines.append(f"    protected downstream (not built on it): {', '.join(protected)}")
    lines.append("  `medallion impact TABLE` shows what depends on them.")
    return "\n".join(lines)


def not_built(summary: RunSummary) -> str:
    """Tables no available path produced (a source down, no replica or alternate left)."""
    held = summary.having("not built")
    if not held:
        return ""
    lines = ["NOT BUILT: no available path produces these tables (a source they need is down)"]
    for r in sorted(held, key=lambda r: r.label):
        kept = "the version before stays current" if r.published else "it has NO version yet"
        lines.append(f"  {r.label}: {r.message}; {kept}")
    return "\n".join(lines)


def incremental(summary: RunSummary) -> str:
    """How each append or merge table was built: from what its driving input gained, or in
    full and why (a first build, a full refresh, its SQL or another input changed, ...)."""
    lines = [f"  {r.label}: {r.built}" for r in summary.having("built") if r.built]
    if not lines:
        return ""
    return "INCREMENTAL: how the append and merge tables were built\n" + "\n".join(sorted(lines))


def set_aside(summary: RunSummary) -> str:
    """Raw objects this run did not ingest (corrupt, empty, of another format or encoding), each
    with why: their producer has something to fix; their table was built without them."""
    lines = [f"  {r.label}: {key}: {why}" for r in summary.results for key, why in r.set_aside]
    if not lines:
        return ""
    return "SET ASIDE: raw objects not ingested (fix and re-deliver them)\n" + "\n".join(lines)


def copies(summary: RunSummary) -> str:
    """Raw objects skipped as copies of one already ingested (the same bytes under another
    key): not an error, but a producer delivering twice is worth knowing about."""
    lines = [
        f"  {r.label}: {key}: the same content as {same_as}, ingested before"
        for r in summary.results
        for key, same_as in r.copies
    ]
    if not lines:
        return ""
    head = "SKIPPED COPIES: raw objects holding the same bytes as one already ingested (not read)"
    return head + "\n" + "\n".join(lines)


def warnings(summary: RunSummary) -> str:
    found = summary.warnings
    if not found:
        return ""
    lines = ["WARNINGS: warn-level checks that failed (the tables were published)"]
    lines += [f"  {r.label}: {c.name}: {c.message}" for r, c in found]
    return "\n".join(lines)


def failed(summary: RunSummary) -> str:
    out = []
    if summary.having("failed"):
        out.append("FAILED: these tables did not publish (full detail: the run in dagster dev)")
        out += [wrapped(r.label, r.message, r.table) for r in summary.having("failed")]
    stopped = sorted({r.label for r in summary.having("not run")})
    if stopped:
        out.append(
            "NOT RUN: an upstream table did not publish (blocked, failed or switched off): "
            + ", ".join(stopped)
        )
    return "\n".join(out)


def wrapped(label: str, message: str, table: str, width: int = 100) -> str:
    """``  label: message`` wrapped between words, the message whole (its table's name, which
    a step's error starts with, said once).

    >>> print(wrapped("gold.t[2026-01-02]", "gold.t: a long reason " * 3, "gold.t", 40))
      gold.t[2026-01-02]: a long reason
        gold.t: a long reason gold.t: a long
        reason
    """

    text = f"{label}: {message.removeprefix(table + ': ')}"
    return textwrap.fill(text, width, initial_indent="  ", subsequent_indent="    ")


def _number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"
