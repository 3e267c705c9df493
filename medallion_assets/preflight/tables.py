"""``medallion doctor --deep``: every table's version in force read back, as a run's
skip-unchanged proof does for a few files (``lake.proof``) but for every data file: a table
another engine altered (a column dropped, renamed or retyped) or whose files were deleted is
one line naming it and the fix. Pyiceberg only, no JVM; one request per data file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from medallion_assets.credentials import mask_credentials
from medallion_assets.errors import headline
from medallion_assets.preflight.findings import Finding

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.lake import Lake


def table_findings(lake: Lake, catalog: Catalog) -> list[Finding]:
    """One failed finding per version in force that is not what medallion published, then
    one line counting those that are."""
    problems: list[Finding] = []
    whole = versions = 0
    for name, dataset in catalog.datasets.items():
        days = lake.partitions(name) if dataset.settings.partitions is not None else [None]
        for day in days:
            try:
                if lake.current(name, day) is None:
                    continue  # not built yet: the next run builds it
                why = lake.doubt(name, day, every_file=True)
            except Exception as error:  # a lost metadata file, a catalog row gone bad: say it
                said = mask_credentials(headline(error))
                problems.append(Finding("tables", "failed", f"{name}: {said}"))
                versions += 1
                continue
            versions += 1
            if not why:
                whole += 1
                continue
            label, option = (f"{name}[{day}]", f" --partition {day}") if day else (name, "")
            problems.append(
                Finding(
                    "tables",
                    "failed",
                    f"{label}: {why}: rebuild it (medallion build {name}"
                    f"{option} --rebuild) or roll it back (medallion table history {name})",
                )
            )
    if not versions:
        return [Finding("tables", "skipped", "no table has a version in the lake yet")]
    said = f"{whole} of {versions} version(s) in force whole: schema as written, every data file"
    return [*problems, Finding("tables", "ok" if not problems else "warning", said)]
