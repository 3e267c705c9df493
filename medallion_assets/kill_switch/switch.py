"""Kill-switch evaluation: which tables are switched off, and by which flag.

A flag names an entity: a pipeline, a layer, a dataset, a source or a target. The effective
flag of an entity is the control store's override when there is one, else ``control.yaml``'s
(``effective_flags``). A table is disabled when its dataset, its layer, the raw source it
ingests (bronze), or its warehouse target is disabled, or when it runs as part of a disabled
pipeline (``disabled_tables(..., pipelines=...)``), or, in a run of no one pipeline, when
every pipeline that builds it is disabled (``by_membership``). Pure: plain data in, plain
data out.

    flags = effective_flags(yaml_flags, store_overrides)
    off = disabled_tables(catalog, flags)
    off["gold.revenue"].flag.reason  # why it is off
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from medallion_assets.catalog import Catalog


class FlagLike(Protocol):
    """A control flag from control.yaml (``ControlFlag``) or from the control store."""

    @property
    def scope(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def reason(self) -> str: ...
    @property
    def changed_by(self) -> str: ...
    @property
    def changed_at(self) -> str: ...


@dataclass(frozen=True)
class EffectiveFlag:
    scope: str
    name: str
    enabled: bool
    reason: str
    changed_by: str
    changed_at: str
    origin: str  # "control.yaml" or "control store"

    @property
    def entity(self) -> str:
        return f"{self.scope}:{self.name}"


@dataclass(frozen=True)
class DisabledTable:
    table: str
    flag: EffectiveFlag  # the flag that switches it off (the first one, in scope order)

    def describe(self) -> str:
        who = f" by {self.flag.changed_by}" if self.flag.changed_by else ""
        when = f" at {self.flag.changed_at}" if self.flag.changed_at else ""
        why = f": {self.flag.reason}" if self.flag.reason else ""
        return (
            f"{self.table} is disabled by {self.flag.entity} ({self.flag.origin}{who}{when}){why}"
        )


def effective_flags(
    yaml_flags: Iterable[FlagLike], overrides: Iterable[FlagLike]
) -> dict[tuple[str, str], EffectiveFlag]:
    """(scope, name) -> the flag in force: the control store's override, else control.yaml's."""
    found: dict[tuple[str, str], EffectiveFlag] = {}
    for origin, flags in (("control.yaml", yaml_flags), ("control store", overrides)):
        for f in flags:
            found[(f.scope, f.name)] = EffectiveFlag(
                f.scope, f.name, f.enabled, f.reason, f.changed_by, f.changed_at, origin
            )
    return found


def table_entities(
    catalog: Catalog, table: str, rerouted: Collection[str] = ()
) -> list[tuple[str, str]]:
    """The (scope, name) entities whose flag governs ``table`` outside any pipeline. A table in
    ``rerouted`` (read along a replica or an alternate) does not read its raw source."""
    dataset = catalog.datasets[table]
    entities = [("dataset", table), ("layer", dataset.layer)]
    if table not in rerouted:
        entities += [("source", name) for name, _ in catalog.raw_sources(dataset)]
    if dataset.target is not None:
        entities.append(("target", table))
    return entities


def disabled_tables(
    catalog: Catalog,
    flags: Mapping[tuple[str, str], EffectiveFlag],
    tables: Iterable[str] | None = None,
    pipelines: Iterable[str] = (),
    rerouted: Collection[str] = (),
    *,
    by_membership: bool = False,
) -> dict[str, DisabledTable]:
    """The tables (default: all) that must not run, each with the flag that stops it.
    ``pipelines``: the pipelines the run belongs to; a disabled one stops its own tables.
    ``by_membership``: the run is no one pipeline's (``medallion run``, a launch from the asset
    graph) but builds every pipeline's tables; a table all of whose pipelines are disabled is
    off (one that another, enabled pipeline also builds is not).
    ``rerouted``: the tables read along another route than their primary (no raw source)."""
    off_pipelines = [
        (flags[("pipeline", p)], set(catalog.pipeline_datasets(p)))
        for p in pipelines
        if not flags.get(("pipeline", p), _ON).enabled
    ]
    memberships = (
        [
            (flags.get(("pipeline", p), _ON), set(catalog.pipeline_datasets(p)))
            for p in catalog.pipelines
        ]
        if by_membership
        else []
    )
    disabled = {}
    for table in catalog.datasets if tables is None else tables:
        stopping = [flags.get(e, _ON) for e in table_entities(catalog, table, rerouted)]
        stopping += [flag for flag, members in off_pipelines if table in members]
        mine = [flag for flag, tables_of in memberships if table in tables_of]
        if mine and not any(flag.enabled for flag in mine):
            stopping.append(mine[0])
        first = next((f for f in stopping if not f.enabled), None)
        if first is not None:
            disabled[table] = DisabledTable(table, first)
    return disabled


_ON = EffectiveFlag("", "", True, "", "", "", "")


def known_entities(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """Scope -> the names a flag of that scope may take in this project."""
    return {
        "pipeline": tuple(catalog.pipelines),
        "layer": ("bronze", "silver", "gold"),
        "dataset": tuple(catalog.datasets),
        "source": tuple(catalog.sources),
        "target": tuple(n for n, d in catalog.datasets.items() if d.target is not None),
    }


def parse_entity(catalog: Catalog, text: str) -> tuple[str, str]:
    """``SCOPE:NAME`` (a bare table name means ``dataset:NAME``) -> (scope, name); raises
    ``ValueError`` saying what is known when the entity is not."""
    scope, _, name = text.partition(":") if ":" in text else ("dataset", "", text)
    known = known_entities(catalog)
    if scope not in known:
        raise ValueError(
            f"unknown scope {scope!r} in {text!r}: write SCOPE:NAME with SCOPE one of "
            f"{', '.join(known)} (e.g. dataset:gold.revenue, source:orders, layer:gold)"
        )
    if name not in known[scope]:
        raise unknown_name(scope, name, known[scope])
    return scope, name


def unknown_name(kind: str, name: str, known: Sequence[str]) -> ValueError:
    """The error for a ``kind`` named ``name`` the project does not have: the closest names,
    else every one it has."""

    close = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(known)}"
    return ValueError(f"no {kind} named {name!r} in this project; {hint}")
