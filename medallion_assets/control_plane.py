"""The control plane as a run sees it: the effective flags, read at the moment of a decision.

``ControlPlane`` pairs the project (whose ``metadata/control.yaml`` it re-reads every time) with
the control store (whose overrides win). Nothing is cached across calls, so a flag flipped with
``medallion control``, in the Dagster UI or by editing control.yaml takes effect at the next
decision, without a reload or a redeploy.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.metadata_files import read_control_file
from medallion_assets.control.legacy_state import import_legacy_state
from medallion_assets.control.store import ControlStore
from medallion_assets.kill_switch.switch import (
    DisabledTable,
    EffectiveFlag,
    disabled_tables,
    effective_flags,
)
from medallion_assets.recovery.reroute import PRIMARY, Route, find_route, routes
from medallion_assets.settings import MedallionSettings

if TYPE_CHECKING:
    from medallion_assets.control.state import RuntimeState


@dataclass(frozen=True)
class ControlPlane:
    project_root: Path
    url: str
    # The settings' passwords, masked out of every audit entry whatever error text holds them.
    secrets: frozenset[str] = frozenset()
    # The lake, whose `_state` folder of an earlier version is imported into the store once.
    lake_root: Path | None = None

    @classmethod
    def of(cls, settings: MedallionSettings) -> ControlPlane:
        """The plane of the settings' project and control store."""
        return cls(
            settings.project_root,
            settings.effective_control_url,
            settings.secrets,
            settings.lake_root,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str], project_root: Path) -> ControlPlane:
        """The plane ``env`` configures for ``project_root`` (for tests and notebooks; a run
        and the CLI hold their settings already and use ``of``)."""
        return cls.of(MedallionSettings.from_env(env, Path(project_root)))

    def store(self) -> ControlStore:
        """The store, opened (schema checked and migrated) once per plane: a plane serves one
        decision or one step, so every check of it does not take the write lock again."""
        return self._opened

    @functools.cached_property
    def _opened(self) -> ControlStore:
        store = ControlStore.open(self.url, self.secrets)
        if self.lake_root is not None:
            import_legacy_state(store, self.lake_root)
        return store

    def state(self) -> RuntimeState:
        """The runtime state (throttle cuts, evolved columns, manifests, loads) in the store."""
        return self.store().state

    def flags(self) -> dict[tuple[str, str], EffectiveFlag]:
        yaml_flags = read_control_file(self.project_root).flags
        return effective_flags(yaml_flags, self.store().flags())

    def disabled(
        self,
        catalog: Catalog,
        tables: Iterable[str] | None = None,
        pipelines: Iterable[str] = (),
        flags: Mapping[tuple[str, str], EffectiveFlag] | None = None,
        *,
        by_membership: bool = False,
    ) -> dict[str, DisabledTable]:
        """The switched-off tables, from ``flags`` when the caller has just read them (a table
        rerouted off its raw source is not switched off by that source's flag);
        ``by_membership``: see ``disabled_tables``."""
        flags = self.flags() if flags is None else flags
        rerouted = [t for t, o in self.store().routes().items() if o.route != PRIMARY]
        return disabled_tables(
            catalog, flags, tables, pipelines, rerouted, by_membership=by_membership
        )

    def route(self, catalog: Catalog, dataset: Dataset) -> tuple[Route, str]:
        """The route ``dataset`` is read along now, and a warning when the store names a route
        the metadata no longer has (the primary is used then)."""
        override = self.store().routes().get(dataset.name)
        primary = routes(catalog, dataset)[0]
        if override is None or override.route == PRIMARY:
            return primary, ""
        chosen = find_route(catalog, dataset, override.route)
        if chosen is None:
            return primary, (
                f"{dataset.name} is rerouted to {override.route!r}, which its metadata no longer "
                f"declares: reading the primary (run `medallion control route {dataset.name} "
                "primary --reason ...` to clear it)"
            )
        return chosen, ""
