"""The dbt project a scanned folder belongs to: where its macros are, which packages are
installed, and which folders hold no models (macros, packages, dbt's compiled ``target``).

>>> root = dbt_root(Path("analytics/models"))          # doctest: +SKIP
>>> macros = load_macros(root, "snowflake")             # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from medallion_assets.lineage.dbt_jinja import Macros

PROJECT_FILE = "dbt_project.yml"
PACKAGE_FOLDERS = ("dbt_packages", "dbt_modules")
MAX_PROJECT_FILE = 1_000_000  # bytes: a dbt_project.yml is a page or two
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class DbtProject:
    root: Path
    name: str
    macro_paths: tuple[str, ...]

    @property
    def no_models(self) -> tuple[Path, ...]:
        """Folders whose .sql files are not models."""
        folders = [*self.macro_paths, *PACKAGE_FOLDERS, "target", "logs"]
        return tuple(self.root / f for f in folders)


def dbt_root(directory: Path, levels: int = 4) -> DbtProject | None:
    """The dbt project ``directory`` is in (or is): the nearest ``dbt_project.yml`` at most
    ``levels`` folders up."""
    here = directory.resolve()
    for folder in [here, *here.parents][: levels + 1]:
        project = read_project(folder)
        if project is not None:
            return project
    return None


def read_project(folder: Path) -> DbtProject | None:
    """A folder's ``dbt_project.yml``: its name and macro paths (read without expanding YAML
    aliases, so a hostile file costs nothing); None when there is none or it is not a mapping."""
    path = folder / PROJECT_FILE
    try:
        if not path.is_file() or path.stat().st_size > MAX_PROJECT_FILE:
            return None
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(node, yaml.MappingNode):
        return None
    top = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    name = top.get("name")
    paths = top.get("macro-paths") or top.get("macro_paths")
    macro_paths = ("macros",)
    if isinstance(paths, yaml.SequenceNode):
        found = tuple(p.value for p in paths.value if isinstance(p, yaml.ScalarNode))
        macro_paths = found or macro_paths
    label = name.value if isinstance(name, yaml.ScalarNode) else folder.name
    return DbtProject(folder, str(label), macro_paths)


def load_macros(project: DbtProject | None, dialect: str) -> Macros:
    """Every macro of the project and of its installed packages, compiled once."""
    macros = Macros(dialect)
    if project is None:
        return macros
    for folder in PACKAGE_FOLDERS:
        packages = project.root / folder
        for package_root in sorted(packages.iterdir()) if packages.is_dir() else ():
            package = read_project(package_root)
            if package is not None and package.name != project.name:
                _add_files(macros, package, package.name)
    _add_files(macros, project, None)
    macros.name_project(project.name)
    return macros


def _add_files(macros: Macros, project: DbtProject, package: str | None) -> None:
    for macro_path in project.macro_paths:
        folder = (project.root / macro_path).resolve()
        if not folder.is_relative_to(project.root.resolve()) or not folder.is_dir():
            continue  # a macro path that leaves the project is not read
        for path in sorted(folder.rglob("*.sql")):
            label = str(path.relative_to(project.root.resolve()))
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                macros.problems.append((label, f"cannot be read as UTF-8 text: {error}"))
                continue
            macros.add(label, text, package)
