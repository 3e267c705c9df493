"""Every SQL fixture in ``cases/`` gives its target, its sources and every column's sources."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medallion_assets.lineage.file_lineage import statement_columns
from medallion_assets.lineage.statement import SqlError, parse_statement

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path):
    case = load(path)
    if "parse_error" in case:  # a file that cannot be analysed: the reason is given
        with pytest.raises(SqlError, match=case["parse_error"]):
            parse_statement(case["sql"], case["dialect"], case.get("default_target"))
        return
    statement = parse_statement(case["sql"], case["dialect"], case.get("default_target"))
    assert statement.target == case["target"]
    assert list(statement.sources) == case["sources"]

    if "error" in case:  # a statement whose columns cannot be analysed: the reason is given
        with pytest.raises(SqlError, match=case["error"]):
            statement_columns(statement, case.get("schema") or {})
        return
    columns = statement_columns(statement, case.get("schema") or {})
    stars = [c for c in columns if c.column == "*"]
    if "star" in case:  # an unexpanded '*': one edge from each unknown table's '*'
        assert [(sorted(c.sources), c.transform) for c in stars] == [(case["star"], "star")]
    resolved = {c.column: sorted(c.sources) for c in columns if not c.unresolved}
    unresolved = sorted(c.column for c in columns if c.unresolved)
    assert resolved == case["columns"]
    assert unresolved == sorted(case.get("unresolved") or [])
