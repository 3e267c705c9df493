"""Every folder in ``scans/`` scanned as a whole: one bad file never stops the others.

Each folder holds its SQL files and ``expected.yaml``: the dialect, the table and column edges,
the unresolved columns and the errors (file, statement kind, stage, and a part of the message).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medallion_assets.lineage.scan import ScanResult, scan_directory

CASES = sorted(p for p in (Path(__file__).parent / "scans").iterdir() if p.is_dir())


def _scan(case: Path) -> tuple[dict, ScanResult]:
    expected = yaml.safe_load((case / "expected.yaml").read_text())
    return expected, scan_directory(case, expected["dialect"])


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_scan_case(case: Path):
    expected, result = _scan(case)
    assert sorted(map(list, result.edges)) == expected["edges"]
    assert sorted([e.source, e.target] for e in result.column_edges) == expected["column_edges"]
    assert sorted(u["column"] for u in result.unresolved) == expected["unresolved"]
    errors = result.as_dict()["errors"]
    assert [(e["file"], e["kind"], e["stage"]) for e in errors] == [
        (e["file"], e["kind"], e["stage"]) for e in expected["errors"]
    ]
    for error, wanted in zip(errors, expected["errors"], strict=True):
        assert wanted["message"] in error["message"]
    assert sorted(result.passed) == expected.get("passed_over", [])


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_every_file_is_analysed_or_reported(case: Path):
    _, result = _scan(case)
    files = {str(p.relative_to(case)) for p in case.rglob("*.sql")}
    labels = set(result.files) | {e.file for e in result.errors} | set(result.passed)
    assert {label.split("#", 1)[0] for label in labels} == files


def test_a_column_error_keeps_the_files_table_lineage():
    _, result = _scan(Path(__file__).parent / "scans" / "spark_internal_errors_among_good_files")
    kept = result.files["self_join.sql"]
    assert (kept.target, kept.kind, kept.sources, kept.columns) == (
        "self_join",
        "select",
        ("shop.orders",),
        None,
    )
    assert "broken.sql" not in result.files
