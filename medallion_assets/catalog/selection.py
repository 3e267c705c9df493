"""A selection of project tables, as ``medallion backfill --select`` takes it.

Terms are separated by commas; the selection is the union of what each term names:

- ``silver.orders_usd``: one table;
- ``silver.*``, ``*orders*``: the tables whose name matches the glob;
- ``layer:silver``, ``tag:finance``, ``pipeline:core_daily``: a layer's tables, the tables with
  a tag, a pipeline's tables.

A term that names nothing is an error naming the term and what it could have meant, so a typo
never turns a backfill into a smaller one. Pure.

    select_tables(catalog, "layer:bronze,gold.customer_ltv")  # in the catalog's order
"""

from __future__ import annotations

import difflib
from fnmatch import fnmatchcase

from medallion_assets.catalog.catalog import Catalog

KINDS = ("layer", "tag", "pipeline")


def select_tables(catalog: Catalog, selection: str) -> tuple[str, ...]:
    """The tables ``selection`` names, in the catalog's execution order."""
    terms = [t.strip() for t in selection.split(",") if t.strip()]
    if not terms:
        raise ValueError(f"--select {selection!r} names no table (e.g. silver.orders_usd)")
    chosen: set[str] = set()
    for term in terms:
        found = _term(catalog, term)
        if not found:
            raise ValueError(
                f"--select {term!r} matches no table in this project; {_hint(catalog, term)}"
            )
        chosen.update(found)
    return tuple(name for name in catalog.datasets if name in chosen)


def _term(catalog: Catalog, term: str) -> set[str]:
    kind, colon, value = term.partition(":")
    if colon and kind in KINDS:
        if kind == "pipeline":
            return set(catalog.pipeline_datasets(value)) if value in catalog.pipelines else set()
        if kind == "layer":
            return {n for n, d in catalog.datasets.items() if d.layer == value}
        return {n for n, d in catalog.datasets.items() if value in d.tags}
    if colon:
        raise ValueError(
            f"--select {term!r}: {kind!r} is not a kind of selection; use "
            f"{', '.join(k + ':NAME' for k in KINDS)}, a table or a glob"
        )
    if any(c in term for c in "*?["):
        return {n for n in catalog.datasets if fnmatchcase(n, term)}
    return {term} if term in catalog.datasets else set()


def _hint(catalog: Catalog, term: str) -> str:
    kind, colon, value = term.partition(":")
    if colon:
        known = {
            "layer": sorted({d.layer for d in catalog.datasets.values()}),
            "tag": sorted({t for d in catalog.datasets.values() for t in d.tags}),
            "pipeline": sorted(catalog.pipelines),
        }[kind]
        close = difflib.get_close_matches(value, known, n=3)
        return (
            f"did you mean {', '.join(f'{kind}:{c}' for c in close)}?"
            if close
            else (f"known {kind}s: {', '.join(known) or 'none'}")
        )
    close = difflib.get_close_matches(term, list(catalog.datasets), n=3)
    return f"did you mean {', '.join(close)}?" if close else "see `medallion plan` for the tables"
