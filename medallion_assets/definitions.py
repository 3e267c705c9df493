"""The code location: every component under ``medallion_assets/defs/`` (``dg``'s defs folder),
the TheWorldShop demo's ``defs/demo/defs.yaml`` among them.

``workspace.yaml``, ``dagster dev -m medallion_assets.definitions``, ``medallion dev`` and
``dg`` load the same folder; the demo's defs.yaml loads ``$MEDALLION_PROJECT`` when it is set
(``medallion dev`` sets it), else the demo's own folder beside the package.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
