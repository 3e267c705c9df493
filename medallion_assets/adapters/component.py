"""A medallion project as a Dagster Component: a ``defs.yaml`` names the project folder, and
``dg list defs``, ``dg check defs``, ``dg dev`` and the package's own code location
(``definitions.py``: ``load_from_defs_folder``) load its tables, checks, jobs, schedules and
sensors like any other component's. ``dg scaffold defs medallion_assets.MedallionProject NAME``
writes a defs.yaml and a small working project beside the package.

.. code-block:: yaml

    # <package>/defs/sales/defs.yaml
    type: medallion_assets.MedallionProject
    attributes:
      project: ../../../sales        # sql/ and metadata/, relative to this file
      select: layer:silver,layer:gold,bronze.orders   # as `medallion backfill --select`
      exclude: tag:experimental
      translation:                   # Dagster's asset attributes; templates see the table
        group_name: "sales_{{ layer }}"
        owners: ["team:{{ dataset.system }}"]
        tags: {domain: sales}
      op:                            # each table's step (op): tags, pool, backfill policy
        tags: {team: sales}
    post_processing:                 # Dagster's own, on every asset of the component
      assets:
        - target: "*"
          attributes: {metadata: {source: medallion}}

``project`` left out: ``$MEDALLION_PROJECT``; a relative path in it is relative to this file
(``{{ env.MEDALLION_PROJECT or '../../..' }}`` is what the package's demo says). A table left
out by ``select``/``exclude`` stays in the graph as a non-executable asset (its lineage shows;
another code location builds it); jobs, schedules and sensors hold only the selected tables.

One code location holds several projects when each has a ``prefix`` (a defs.yaml each): the
prefix goes in front of its asset keys, groups, steps, jobs, schedules, sensors, pools and
resource keys (``Names``), and each keeps its own state (lake, control store, warehouse)
under its ``home`` (default: ``<project>/.medallion``). Two projects of one location that
would share a lake or a control store are refused. The asset key is the table's name under the
prefix; ``prefix`` takes templates (``"{{ env.TEAM }}"``), ``translation`` may not change a key.

Python subclass point: override ``table_runner`` to wrap or replace how a table is executed
(``runtime/table_runner.py``), and name the subclass as the defs.yaml's ``type``:

.. code-block:: python

    class TimedProject(MedallionProject):
        def table_runner(self) -> TableRunner:
            return Timed()
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import dagster as dg
from dagster.components.resolved.core_models import OpSpec  # dagster-dbt's and sling's `op:`
from dagster.components.utils.translation import TranslationFn, TranslationFnResolver

from medallion_assets.adapters.code_location import build_definitions
from medallion_assets.adapters.component_scaffold import ProjectScaffolder
from medallion_assets.adapters.translator import Names, StepOptions
from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.selection import select_tables
from medallion_assets.credentials import mask_credentials
from medallion_assets.runtime.table_runner import TableRunner
from medallion_assets.settings import MedallionSettings, project_environment


def _template_vars(dataset: Dataset) -> dict[str, object]:
    """What a ``translation`` template sees of a table."""
    return {"table": dataset.name, "layer": dataset.layer, "dataset": dataset}


@dg.scaffold_with(ProjectScaffolder)
class MedallionProject(dg.Component, dg.Resolvable, dg.Model):
    """A folder of SQL files and metadata YAML as Dagster definitions: one asset per table,
    one asset check per rule, the pipelines' jobs and schedules, the control plane's sensors."""

    project: str | None = None
    """The project folder (holding sql/ and metadata/), relative to the defs.yaml; default:
    $MEDALLION_PROJECT."""

    prefix: str | None = None
    """Put in front of every name the project has in Dagster (``sales/silver/orders``,
    ``sales__daily``, ``sales_spark``): lower-case letters, digits and single underscores.
    Needed for each project when a code location holds several."""

    home: str | None = None
    """The project's state folder (its lake, control store and warehouse on the embedded
    defaults), relative to the defs.yaml; default: $MEDALLION_HOME, else <project>/.medallion."""

    select: str | None = None
    """The tables this component executes (``silver.*``, ``layer:gold``, ``tag:finance``,
    ``pipeline:core_daily``, comma-separated); default: all."""

    exclude: str | None = None
    """Tables left out of ``select``, in the same syntax."""

    translation: Annotated[
        TranslationFn[Dataset] | None,
        TranslationFnResolver[Dataset](_template_vars),
    ] = None
    """Asset attributes over the project's own (group_name, owners, tags, kinds, metadata,
    description, automation_condition...); templates see ``table``, ``layer`` and ``dataset``."""

    op: OpSpec | None = None
    """Each table's step: ``tags``, ``pool`` (over the table's system's), ``backfill_policy``,
    ``description``. Not ``name``: a table's op is named by the table."""

    def table_runner(self) -> TableRunner:
        """What executes each table's run; override to wrap or replace it."""
        return TableRunner()

    def root(self, base: Path) -> Path:
        """The project folder, for a component whose defs.yaml is in ``base``."""
        if self.project is not None:
            return (base / self.project).resolve()
        given = MedallionSettings.from_env(os.environ).project
        if given is None:
            raise ComponentError(
                f"{base / 'defs.yaml'}: no project: set `attributes: project:` to the folder "
                "holding sql/ and metadata/ (relative to the defs.yaml), or $MEDALLION_PROJECT"
            )
        return given.resolve()

    def definitions(self, base: Path) -> dg.Definitions:
        """The project's definitions; a project that does not load raises ``CatalogError``
        naming each problem's file, line and fix."""
        where = base / "defs.yaml"
        try:
            names = Names(self.prefix)
        except ValueError as error:
            raise ComponentError(f"{where}: {error}") from None
        if self.op is not None and self.op.name:
            raise ComponentError(
                f"{where}: op.name {self.op.name!r}: each table's op is named by its table; "
                "remove name (tags, pool, backfill_policy and description apply to every step)"
            )
        root = self.root(base)
        home = (base / self.home).resolve() if self.home is not None else None
        if names.prefix:
            claim_stores(names.prefix, root, home)
        return build_definitions(
            root,
            runner=self.table_runner(),
            names=names,
            home=home,
            selected=lambda catalog: self.selected(catalog, where),
            translation=self.translation,
            step=StepOptions.of(self.op),
        )

    def selected(self, catalog: Catalog, where: Path) -> frozenset[str] | None:
        """The tables ``select`` and ``exclude`` leave; None: all of them."""
        if self.select is None and self.exclude is None:
            return None
        try:
            chosen = set(select_tables(catalog, self.select) if self.select else catalog.datasets)
            if self.exclude:
                chosen -= set(select_tables(catalog, self.exclude))
        except ValueError as error:
            said = str(error).replace("--select", "select/exclude")
            raise ComponentError(f"{where}: {said}") from None
        return frozenset(chosen)

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
