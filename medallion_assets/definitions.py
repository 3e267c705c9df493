"""The code location: ``defs`` is built from the project's ``sql/`` and ``metadata/``.

``workspace.yaml`` loads this module. The project is the folder holding this package (the
TheWorldShop demo), or ``MEDALLION_PROJECT`` when Dagster builds the definitions.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.code_location import build_definitions
from medallion_assets.settings import MedallionSettings

PACKAGE_PROJECT = Path(__file__).resolve().parent.parent


@dg.definitions
def defs() -> dg.Definitions:
    # The settings are read here only for the project; each run reads its own at set-up.
    settings = MedallionSettings.from_env(os.environ, PACKAGE_PROJECT)
    return build_definitions(settings.project or PACKAGE_PROJECT)
