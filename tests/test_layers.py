"""The package's layers hold: no import cycle between modules or folders (imports inside
functions counted), no folder imports one above it, and the operator features' decisions load
no Dagster, Spark or database driver.

A "folder" is a subpackage of ``medallion_assets`` or one of its top-level modules. ``LAYERS``
lists them from the bottom up; a folder may import its own modules and those of lower layers
only, so two folders of one layer never import each other. A new folder must be placed here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "medallion_assets"

LAYERS: list[set[str]] = [
    {"errors"},
    {"faults", "credentials"},
    {"settings_fields"},
    {"settings"},
    {"lineage"},
    {"catalog"},
    {"demo", "kill_switch", "relaunch", "openlineage"},  # decisions on the catalog alone
    {"io", "jvm", "lake", "control"},  # S3 and warehouses, Spark's jars, the lake, the store
    {"checks", "profiles", "throttles", "recovery", "preflight"},
    {"simulate", "control_plane"},
    {"backfill", "runtime"},
    {"healing"},  # its actions run between a table's failed attempt and its retry
    {"export", "environments"},
    {"adapters"},  # Dagster
    {"cli", "definitions", "testing", "defs"},
]

# The decisions of each operator feature: plain data in, plain data out.
DECISIONS = [
    "kill_switch.switch",
    "kill_switch.stop",
    "profiles.profiles",
    "profiles.priority",
    "healing.retry",
    "healing.diagnosis",
    "relaunch.relaunch",
    "relaunch.preemption",
    "recovery.paths",
    "recovery.reroute",
    "backfill.plan",
    "simulate.simulate",
    "simulate.schedule",
    "simulate.scheduling",
    "export.orchestrators",
    "environments.plan",
]
HEAVY = ("dagster", "pyspark", "py4j", "sqlalchemy")


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts) + (f".{base}" if base else "")
    yield from (f"{base}.{alias.name}" for alias in node.names)  # a submodule, or a name
    yield base


def imports(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at run time (imports inside functions
    counted; TYPE_CHECKING blocks too with ``type_checking``)."""
    known = modules()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        stack: list[ast.AST] = [ast.parse(path.read_text())]
        while stack:
            node = stack.pop()
            for child in ast.iter_child_nodes(node):
                hints = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
                if hints and not type_checking:
                    continue
                if isinstance(child, ast.Import | ast.ImportFrom):
                    for name in _imported(child, package):
                        target = resolve(name) if name.startswith("medallion_assets") else None
                        if target and target != module:
                            graph[module].add(target)
                            break
                stack.append(child)
    return graph


def folder(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return imports()


def test_every_folder_has_a_layer():
    placed = set().union(*LAYERS)
    folders = {folder(m) for m in modules() if m != "medallion_assets"}
    assert folders - placed == set(), "place each new folder in LAYERS"
    assert placed - folders <= {"defs"}  # defs/ holds YAML only


def test_no_module_imports_in_a_circle(graph):
    assert cycles(graph) == []


def test_no_module_imports_in_a_circle_even_for_type_hints():
    """A circle closed by a TYPE_CHECKING import is a design circle all the same: the type the
    lower module needs is a Protocol of its own (``control/engine.StoreWrites``,
    ``lake/tables.Refs``)."""
    assert cycles(imports(type_checking=True)) == []


def test_no_folder_imports_its_own_layer_or_one_above(graph):
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if module != "medallion_assets"
        and folder(module) != folder(target)
        and layer[folder(target)] >= layer[folder(module)]
    )
    assert upward == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


CHECK = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(f"medallion_assets.{{name}}")
heavy = {HEAVY!r}
print(sorted({{name.split(".")[0] for name in sys.modules}} & set(heavy)))
"""


def test_the_features_decisions_load_no_dagster_spark_or_database():
    """Importing every decision module loads no Dagster, Spark or SQLAlchemy: the decisions
    are testable without a server and ``medallion plan`` stays quick."""
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(HEAVY=HEAVY), *DECISIONS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "[]"


def test_the_walk_of_a_tables_run_in_the_docs_names_functions_that_exist():
    """docs/layout.md walks one table's run from the asset body to the warehouse in at most
    ten steps; each `module.py` `function` it names is defined there."""
    import re

    text = (PACKAGE.parent / "docs" / "layout.md").read_text()
    walk = text[text.index("## One table's run, step by step") :]
    steps = re.findall(r"^\d+\. ", walk, re.M)
    assert 1 <= len(steps) <= 10
    named = re.findall(r"`([\w/]+\.py)` `(?:\w+\.)?(\w+)`", walk)
    assert len(named) >= len(steps)
    for module, function in named:
        tree = ast.parse((PACKAGE / module).read_text())
        defined = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        }
        assert function in defined, f"{module} defines no {function}"


# Each decision a step makes around its build has one home (runtime/step_guard.py), and so has
# what stops a run: these names defined in adapters/ would be their twins coming back.
STEP_DECISIONS = {
    "switched_off": "kill_switch",
    "route_around_down": "recovery",
    "Audit": "audit",
    "stop_run": "kill_switch/stop.py",
    "cancel_run_jobs": "runtime/spark_jobs.py",
}


def test_the_step_guards_decisions_have_no_twin_in_the_adapters():
    twins = []
    for path in (PACKAGE / "adapters").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            is_definition = isinstance(node, ast.FunctionDef | ast.ClassDef)
            if is_definition and node.name in STEP_DECISIONS:
                twins.append(f"adapters/{path.name}: {node.name}")
    assert twins == [], "see STEP_DECISIONS for where each lives"


def test_no_module_is_over_400_lines():
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in modules().values()
        if (lines := len(path.read_text().splitlines())) > 400
    }
    assert long == {}


def test_each_import_inside_a_function_says_why():
    """An import inside a function keeps a heavy dependency (Spark, pandera, a database driver,
    Dagster) out of where it is not needed; the comment above it (or on it) says which."""
    silent = []
    for module, path in modules().items():
        lines = path.read_text().splitlines()
        stack: list[tuple[ast.AST, bool]] = [(ast.parse("\n".join(lines)), False)]
        while stack:
            node, in_function = stack.pop()
            body = getattr(node, "body", None)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            previous: ast.stmt | None = None
            for statement in body if isinstance(body, list) else []:
                imports = isinstance(statement, ast.Import | ast.ImportFrom)
                if in_function and imports:
                    grouped = isinstance(previous, ast.Import | ast.ImportFrom)
                    above = lines[statement.lineno - 2].strip()
                    own = "#" in lines[statement.lineno - 1]
                    if not (grouped or own or above.startswith("#")):
                        silent.append(f"{module}:{statement.lineno}")
                previous = statement
            for child in ast.iter_child_nodes(node):
                function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                stack.append((child, in_function or function))
    assert silent == []


def test_the_test_folders_mirror_the_package_folders():
    """tests/<folder>/ holds the tests of medallion_assets/<folder>/ (e2e: the whole product);
    a top-level module's tests are tests/test_<module>.py."""
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and list(p.glob("test_*.py"))}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders - packages == {"e2e"}
