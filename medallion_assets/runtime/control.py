"""The control plane as a run sees it: the effective flags, read at the moment of a decision.

``ControlPlane`` pairs the project (whose ``metadata/control.yaml`` it re-reads every time) with
the control store (whose overrides win). Nothing is cached across calls, so a flag flipped with
``medallion control``, in the Dagster UI or by editing control.yaml takes effect at the next
decision, without a reload or a redeploy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.metadata_files import read_control_file
from medallion_assets.planner.kill_switch import (
    DisabledTable,
    EffectiveFlag,
    disabled_tables,
    effective_flags,
)
from medallion_assets.runtime.control_store import ControlStore, default_url


@dataclass(frozen=True)
class ControlPlane:
    project_root: Path
    url: str

    @classmethod
    def from_env(cls, env: Mapping[str, str], project_root: Path) -> ControlPlane:
        return cls(Path(project_root), default_url(env, Path(project_root)))

    def store(self) -> ControlStore:
        return ControlStore.open(self.url)

    def flags(self) -> dict[tuple[str, str], EffectiveFlag]:
        yaml_flags = read_control_file(self.project_root).flags
        return effective_flags(yaml_flags, self.store().flags())

    def disabled(
        self, catalog: Catalog, tables: Iterable[str] | None = None, pipelines: Iterable[str] = ()
    ) -> dict[str, DisabledTable]:
        return disabled_tables(catalog, self.flags(), tables, pipelines)
