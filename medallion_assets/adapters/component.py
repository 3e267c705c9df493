"""A medallion project as a Dagster Component: a ``defs.yaml`` names the project folder, and
``dg list defs``, ``dg check defs`` and ``dg dev`` load its tables, checks, jobs, schedules
and sensors like any other component's.

.. code-block:: yaml

    # <package>/defs/sales/defs.yaml
    type: medallion_assets.adapters.component.MedallionProject
    attributes:
      project: ../../../sales        # sql/ and metadata/, relative to this file

``project`` left out: ``$MEDALLION_PROJECT``, else the demo beside the package.

One code location holds several projects when each has a ``prefix`` (a defs.yaml each): the
prefix goes in front of its asset keys, groups, steps, jobs, schedules, sensors, pools and
resource keys (``Names``), and each keeps its own state (lake, control store, warehouse)
under its ``home`` (default: ``<project>/.medallion``). Two projects of one location that
would share a lake or a control store are refused.

.. code-block:: yaml

    # <package>/defs/ops/defs.yaml
    type: medallion_assets.adapters.component.MedallionProject
    attributes:
      project: ../../../ops
      prefix: ops
      home: ../../../state/ops    # optional, relative to this file
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.code_location import build_definitions
from medallion_assets.adapters.translator import Names
from medallion_assets.credentials import mask_credentials
from medallion_assets.settings import MedallionSettings, project_environment

PACKAGE_PROJECT = Path(__file__).resolve().parents[2]  # the demo, beside the package


class MedallionProject(dg.Component, dg.Resolvable, dg.Model):
    """A folder of SQL files and metadata YAML as Dagster definitions: one asset per table,
    one asset check per rule, the pipelines' jobs and schedules, the control plane's sensors."""

    project: str | None = None
    """The project folder (holding sql/ and metadata/), relative to the defs.yaml; default:
    $MEDALLION_PROJECT, else the demo beside the package."""

    prefix: str | None = None
    """Put in front of every name the project has in Dagster (``sales/silver/orders``,
    ``sales__daily``, ``sales_spark``): lower-case letters, digits and single underscores.
    Needed for each project when a code location holds several."""

    home: str | None = None
    """The project's state folder (its lake, control store and warehouse on the embedded
    defaults), relative to the defs.yaml; default: $MEDALLION_HOME, else <project>/.medallion."""

    def root(self, base: Path) -> Path:
        """The project folder, for a component whose defs.yaml is in ``base``."""
        if self.project is not None:
            return (base / self.project).resolve()
        settings = MedallionSettings.from_env(os.environ, PACKAGE_PROJECT)
        return (settings.project or PACKAGE_PROJECT).resolve()

    def definitions(self, base: Path) -> dg.Definitions:
        """The project's definitions; a project that does not load raises ``CatalogError``
        naming each problem's file, line and fix."""
        try:
            names = Names(self.prefix)
        except ValueError as error:
            raise ComponentError(f"{base / 'defs.yaml'}: {error}") from None
        root = self.root(base)
        home = (base / self.home).resolve() if self.home is not None else None
        if names.prefix:
            claim_stores(names.prefix, root, home)
        return build_definitions(root, names=names, home=home)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return self.definitions(context.path)


class ComponentError(ValueError):
    """A ``defs.yaml`` of a MedallionProject that cannot be loaded, said in one line."""


# The stores the prefixed projects of this process use: "lake <where>" -> (prefix, root).
_CLAIMED: dict[str, tuple[str, Path]] = {}


def claim_stores(prefix: str, root: Path, home: Path | None) -> None:
    """Refuse a second project whose lake or control store is one another project of the code
    location already uses: their tables and flags share names (``silver.orders``)."""
    settings = MedallionSettings.from_env(project_environment(home), root)
    local = settings.lake_root
    stores = [
        f"lake {local.resolve() if local is not None else settings.lake}",
        f"control store {mask_credentials(settings.effective_control_url)}",
    ]
    for store in stores:
        claimed = _CLAIMED.get(store)
        if claimed is not None and claimed[0] != prefix:
            other, other_root = claimed
            raise ComponentError(
                f"projects {other!r} ({other_root}) and {prefix!r} ({root}) would share the "
                f"{store}: give each its own `home:` in its defs.yaml (or unset "
                "MEDALLION_HOME, MEDALLION_LAKE and MEDALLION_CONTROL_URL)"
            )
    for store in stores:
        _CLAIMED[store] = (prefix, root)
