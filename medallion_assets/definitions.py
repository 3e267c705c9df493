"""The code location: ``defs`` is the ``MedallionProject`` component of the project.

``workspace.yaml``, ``dagster dev -m medallion_assets.definitions`` and ``medallion dev``
load this module; ``dg`` loads the same component from ``defs/demo/defs.yaml``. The project
is ``$MEDALLION_PROJECT``, else the TheWorldShop demo beside the package.
"""

from __future__ import annotations

import dagster as dg

from medallion_assets.adapters.component import PACKAGE_PROJECT, MedallionProject

__all__ = ["PACKAGE_PROJECT", "defs"]


@dg.definitions
def defs() -> dg.Definitions:
    # The settings are read here only for the project; each run reads its own at set-up.
    return MedallionProject().definitions(PACKAGE_PROJECT)
