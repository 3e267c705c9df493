"""``dg scaffold defs medallion_assets.MedallionProject NAME``: a defs.yaml naming a new
project folder, and in that folder the starter project ``medallion init`` writes (one raw
source with a sample file, four tables, rules, a warehouse target, a pipeline), so that
``dg list defs`` and ``dg dev`` show it at once.

The project goes beside the dg project's package (``<dg project>/<NAME>``: SQL and YAML are
not Python modules), its raw sample under its own ``.medallion/s3``; a folder that already holds
files is left as it is and only the defs.yaml is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from medallion_assets.catalog.starter import project_files, safe_name, write_files
from medallion_assets.settings import MedallionSettings


class ProjectScaffolder(dg.Scaffolder):
    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        target = Path(request.target_path)
        base = Path(request.project_root) if request.project_root is not None else target
        folder = (base / target.name).resolve()
        if not folder.exists() or not any(folder.iterdir()):
            write_starter(folder)
        project = Path(os.path.relpath(folder, target.resolve())).as_posix()
        dg.scaffold_component(request, {"project": project})


def write_starter(folder: Path) -> None:
    """The starter project in ``folder``, its raw sample where its runs read raw data."""
    settings = MedallionSettings.from_env({}, folder)
    write_files(project_files(folder, settings.s3_root.resolve(), safe_name(folder.name)))
