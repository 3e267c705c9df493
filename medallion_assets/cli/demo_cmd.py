"""``medallion demo-data``: TheWorldShop's raw files, written where bronze extracts them."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.catalog import Catalog
from medallion_assets.cli.common import fail, load, project_option, settings_for
from medallion_assets.demo import DemoSettings, GeneratedFile, generate, write_files

if TYPE_CHECKING:
    from medallion_assets.io.object_store import ObjectStore

FALLBACK_START = date(2026, 1, 1)
_DEFAULTS = DemoSettings()


@click.command("demo-data")
@click.option(
    "--rows",
    type=click.IntRange(min=1),
    default=_DEFAULTS.rows,
    show_default=True,
    help="About how many orders over all days; customers, products and events scale with it.",
)
@click.option(
    "--seed",
    type=int,
    default=_DEFAULTS.seed,
    show_default=True,
    help="The same seed and options give byte-identical files.",
)
@click.option(
    "--days",
    type=click.IntRange(1, 366),
    default=_DEFAULTS.days,
    show_default=True,
    help="Days of data: one partition (dt=...) or export batch (batch=0001...) per day.",
)
@click.option(
    "--start-date",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    help="First day  [default: the earliest daily partition start in datasets.yaml, "
    "else 2026-01-01]",
)
@click.option(
    "--target",
    default=None,
    metavar="DIR|s3://",
    help="A folder standing in for S3 (files at DIR/<bucket>/<key>), or s3:// for the S3 API at "
    "$MEDALLION_S3_ENDPOINT (AWS when unset) with the standard AWS credentials; buckets are "
    "created if missing. Default: where the runtime reads raw data ($MEDALLION_S3_ENDPOINT, "
    "else $MEDALLION_S3_LOCAL_ROOT, else <project>/.medallion/s3).",
)
@click.option(
    "--with-vendor-errors",
    is_flag=True,
    help="The vendor's address feed writes 'UK' for some GB addresses, as real feeds do: the ISO "
    "country check blocks silver.addresses_validated (by default the feed is clean and every "
    "table builds).",
)
@project_option
def demo_data(
    rows: int,
    seed: int,
    days: int,
    start_date: datetime | None,
    target: str | None,
    with_vendor_errors: bool,
    project: Path,
) -> None:
    """Generate TheWorldShop's raw S3 data for every source in sources.yaml, deterministically.

    Orders reference real customers and products, FX rates cover every currency and day, and
    about 0.75% of jsonl/csv records are deliberately malformed (bronze quarantines them, and
    the run says how many). With --with-vendor-errors the vendor's address feed also writes
    'UK' for some GB addresses, which the ISO country check on silver.addresses_validated
    catches: that table is blocked.
    """
    catalog = load(project)
    start = start_date.date() if start_date else partitions_start(catalog)
    settings = DemoSettings(
        rows=rows,
        seed=seed,
        days=days,
        start=start,
        vendor_uk_rate=0.15 if with_vendor_errors else 0,
    )
    store, where = object_store(target, project)
    files = generate(catalog, settings)
    try:
        write_files(files, store)
    except Exception as error:  # S3 and filesystem errors alike: say where, never credentials
        fail(f"could not write the demo data to {where}: {error}")
    click.echo(
        f"TheWorldShop demo data: {rows} orders over {days} day(s) from {start}, seed {seed}, "
        f"into {where}"
    )
    click.echo(summary_table(catalog, files, where))


def partitions_start(catalog: Catalog) -> date:
    """The earliest daily partition start in datasets.yaml, so day one is a valid partition."""
    starts = [
        d.settings.partitions.start for d in catalog.datasets.values() if d.settings.partitions
    ]
    return min(starts, default=FALLBACK_START)


def object_store(target: str | None, project: Path) -> tuple[ObjectStore, str]:
    """(store, where it writes) for ``--target``."""
    # the warehouse drivers and pyarrow: loaded only when a table loads
    from medallion_assets.io.object_store import LocalFolderObjectStore
    from medallion_assets.io.s3_store import Boto3ObjectStore, object_store_of

    settings = settings_for(project)
    store: Boto3ObjectStore | LocalFolderObjectStore
    if target is None:
        store = object_store_of(settings)
    elif target.startswith("s3://"):
        if target.rstrip("/") != "s3:":
            fail("--target s3:// takes no bucket or path: every source's bucket is in sources.yaml")
        store = Boto3ObjectStore(settings.s3_endpoint, region=settings.aws_region)
    else:
        store = LocalFolderObjectStore(Path(target))
    if isinstance(store, LocalFolderObjectStore):
        return store, str(store.root)
    # The repr shows the endpoint's scheme, host and port only, never credentials.
    return store, "s3://" if store.endpoint_url is None else f"s3:// ({store!r})"


def summary_table(catalog: Catalog, files: list[GeneratedFile], where: str) -> str:
    """One line per source: files, valid rows, malformed rows, bytes and location."""
    local = not where.startswith("s3://")
    header = ("source", "files", "rows", "malformed", "bytes", "location")
    lines, totals = [], [0, 0, 0, 0]
    for name, source in catalog.sources.items():
        group = [f for f in files if f.source == name]
        counts = [len(group), sum(f.rows for f in group), sum(f.malformed for f in group)]
        counts.append(sum(len(f.data) for f in group))
        totals = [t + c for t, c in zip(totals, counts, strict=True)]
        root = f"{where}/" if local else "s3://"
        lines.append((name, *_counts(counts), f"{root}{source.bucket}/{source.prefix}"))
    lines.append(("total", *_counts(totals), ""))
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i in (0, 5) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in [header, *lines]
    )


def _counts(counts: list[int]) -> tuple[str, ...]:
    files, rows, malformed, size = counts
    share = f" ({malformed / (rows + malformed):.2%})" if malformed else ""
    return f"{files:,}", f"{rows:,}", f"{malformed:,}{share}", _size(size)


def _size(size: float) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
