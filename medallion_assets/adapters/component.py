"""A medallion project as a Dagster Component: a ``defs.yaml`` names the project folder, and
``dg list defs``, ``dg check defs`` and ``dg dev`` load its tables, checks, jobs, schedules
and sensors like any other component's.

.. code-block:: yaml

    # <package>/defs/sales/defs.yaml
    type: medallion_assets.adapters.component.MedallionProject
    attributes:
      project: ../../../sales        # sql/ and metadata/, relative to this file

``project`` left out: ``$MEDALLION_PROJECT``, else the demo beside the package. One code
location holds one project: two projects' tables, jobs and sensors would share names (their
Dagster keys say only layer and table).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.code_location import build_definitions
from medallion_assets.settings import MedallionSettings

PACKAGE_PROJECT = Path(__file__).resolve().parents[2]  # the demo, beside the package


class MedallionProject(dg.Component, dg.Resolvable, dg.Model):
    """A folder of SQL files and metadata YAML as Dagster definitions: one asset per table,
    one asset check per rule, the pipelines' jobs and schedules, the control plane's sensors."""

    project: str | None = None
    """The project folder (holding sql/ and metadata/), relative to the defs.yaml; default:
    $MEDALLION_PROJECT, else the demo beside the package."""

    def root(self, base: Path) -> Path:
        """The project folder, for a component whose defs.yaml is in ``base``."""
        if self.project is not None:
            return (base / self.project).resolve()
        settings = MedallionSettings.from_env(os.environ, PACKAGE_PROJECT)
        return (settings.project or PACKAGE_PROJECT).resolve()

    def definitions(self, base: Path) -> dg.Definitions:
        """The project's definitions; a project that does not load raises ``CatalogError``
        naming each problem's file, line and fix."""
        return build_definitions(self.root(base))

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return self.definitions(context.path)
