"""The code location: ``defs`` is built from the project's ``sql/`` and ``metadata/``.

``workspace.yaml`` loads this module. The project is the folder holding this package (the
TheWorldShop demo), or ``MEDALLION_PROJECT`` when Dagster builds the definitions.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.code_location import build_definitions

PACKAGE_PROJECT = Path(__file__).resolve().parent.parent


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(Path(os.environ.get("MEDALLION_PROJECT") or PACKAGE_PROJECT))
