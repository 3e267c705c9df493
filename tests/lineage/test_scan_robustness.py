"""Damaged SQL never breaks a scan: every statement of the lineage fixtures, the TPC corpora and
TheWorldShop's sql/, truncated, short of a token, with a duplicated alias or unbalanced
parentheses, is either analysed or reported as that file's error, and never raises out of
``scan_directory``. A seeded sample keeps it in the fast tier and the same on every run.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from medallion_assets.lineage.scan import ScanResult, scan_directory
from tests.conftest import CORPORA, REPO, fixture_path
from tests.lineage.sql_mutants import MUTATIONS

CASES = Path(__file__).parent / "cases"
MUTANTS_PER_KIND = 150  # of each mutation: 600 files, scanned in about a second
SEED = 12


def files_of(labels: set[str]) -> set[str]:
    """The files of scan labels: a script's parts are ``file.sql#N``."""
    return {label.split("#", 1)[0] for label in labels}


def _statements() -> list[tuple[str, str, str]]:
    """(origin, dialect, SQL) of every statement the mutants are made from."""
    statements = []
    for path in sorted(CASES.glob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        statements.append(("cases", case["dialect"], case["sql"]))
    for path in sorted(fixture_path(CORPORA).rglob("*.sql")):
        statements.append(("tpc", "duckdb", path.read_text()))
    for path in sorted((REPO / "sql").rglob("*.sql")):
        statements.append(("theworldshop", "spark", path.read_text()))
    return statements


def _write_mutants(root: Path) -> dict[str, set[str]]:
    """One folder per dialect of mutated files; the file names written, by dialect."""
    rng = random.Random(SEED)
    statements = _statements()
    written: dict[str, set[str]] = {}
    for kind, mutate in MUTATIONS.items():
        for i, (_, dialect, sql) in enumerate(rng.sample(statements, MUTANTS_PER_KIND)):
            name = f"{kind}_{i:03d}.sql"
            (root / dialect).mkdir(parents=True, exist_ok=True)
            (root / dialect / name).write_text(mutate(sql, rng), encoding="utf-8")
            written.setdefault(dialect, set()).add(name)
    return written


@pytest.fixture(scope="module")
def mutants(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, set[str]]]:
    root = tmp_path_factory.mktemp("mutants")
    return root, _write_mutants(root)


@pytest.fixture(scope="module")
def column_scans(mutants) -> dict[str, ScanResult]:
    root, written = mutants
    return {dialect: scan_directory(root / dialect, dialect) for dialect in written}


def test_the_sample_draws_on_every_source():
    origins = [origin for origin, _, _ in _statements()]
    assert origins.count("cases") >= 70
    assert origins.count("tpc") == 121
    assert origins.count("theworldshop") >= 20


def test_every_mutated_file_is_analysed_or_reported(mutants, column_scans):
    _, written = mutants
    assert sum(map(len, written.values())) == MUTANTS_PER_KIND * len(MUTATIONS)
    for dialect, names in written.items():
        result = column_scans[dialect]
        errors = {e.file for e in result.errors if e.stage != "cycle"}
        assert files_of(set(result.files) | errors | set(result.passed)) == names, dialect
        assert all(e.message for e in result.errors)


def test_every_mutated_file_is_analysed_or_reported_without_columns(mutants):
    root, written = mutants
    for dialect, names in written.items():
        result = scan_directory(root / dialect, dialect, columns=False)
        seen = set(result.files) | {e.file for e in result.errors} | set(result.passed)
        assert files_of(seen) == names, dialect


def test_the_mutants_reach_sqlglots_own_errors(column_scans):
    """The sample goes down the error paths: files that do not parse, and files whose column
    lineage makes sqlglot raise (a table alias used twice)."""
    errors = [e for result in column_scans.values() for e in result.errors]
    assert any(e.stage == "statement" and "does not parse" in e.message for e in errors)
    assert any(e.stage == "columns" and "Alias already used" in e.message for e in errors)
