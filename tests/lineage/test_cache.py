"""The parse cache: an unchanged project is not parsed again, a change re-parses only what it
touches, and a damaged cache file costs a re-parse, never the build.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.lineage import analysis
from medallion_assets.lineage.analysis import Analysis, SqlFile, analyze
from medallion_assets.lineage.cache import LineageCache

LAYERS = ("bronze", "silver", "gold")
PROJECT_FILES = 25  # 8 bronze + 10 silver + 7 gold SQL files in TheWorldShop


def project_files(project: Path) -> list[SqlFile]:
    """The primary SQL files of a project, as the loader hands them to ``analyze``."""
    return [
        SqlFile(
            f"sql/{layer}/{path.name}",
            path.read_text(encoding="utf-8"),
            "spark",
            f"{layer}.{path.stem}",
        )
        for layer in LAYERS
        for path in sorted((project / "sql" / layer).glob("*.sql"))
    ]


@pytest.fixture(scope="module")
def raw_schema(demo_catalog) -> dict[str, dict[str, str]]:
    return {f"raw.{name}": demo_catalog.source_schema(name) for name in demo_catalog.sources}


@pytest.fixture
def build(demo_project: Path, raw_schema, tmp_path: Path) -> Callable[[], Analysis]:
    """One build of the demo copy with a fresh cache object over the same cache folder."""
    cache_dir = tmp_path / "cache"

    def run() -> Analysis:
        return analyze(project_files(demo_project), raw_schema, cache=LineageCache(cache_dir))

    return run


@pytest.fixture
def parsed_targets(monkeypatch) -> list[str]:
    """Targets of the files the next builds actually parse, in order."""
    seen: list[str] = []
    real = analysis.parse_statement

    def recording(sql: str, dialect: str, default_target: str | None):
        seen.append(default_target or "")
        return real(sql, dialect, default_target)

    monkeypatch.setattr(analysis, "parse_statement", recording)
    return seen


def edit(project: Path, relative: str, old: str, new: str) -> None:
    path = project / relative
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{relative} no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new), encoding="utf-8")


def cache_file(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "lineage.json"


def test_the_first_build_parses_every_file(build):
    first = build()
    assert first.parsed == PROJECT_FILES
    assert first.errors == ()
    assert len(first.lineage) == PROJECT_FILES


def test_a_second_build_of_an_unchanged_project_parses_nothing(build):
    first = build()
    second = build()
    assert second.parsed == 0
    assert second.errors == ()
    assert second.lineage == first.lineage


def test_a_change_that_keeps_the_columns_reparses_only_that_file(
    build, demo_project, parsed_targets
):
    first = build()
    parsed_targets.clear()
    edit(
        demo_project,
        "sql/bronze/fx_rates.sql",
        "upper(trim(currency)) AS currency",
        "upper(currency) AS currency",
    )
    second = build()
    assert parsed_targets == ["bronze.fx_rates"]
    assert second.parsed == 1
    unchanged = {label for label in first.lineage if label != "sql/bronze/fx_rates.sql"}
    assert {label: second.lineage[label] for label in unchanged} == {
        label: first.lineage[label] for label in unchanged
    }


def test_a_change_of_output_columns_recomputes_only_the_tables_reading_it(
    build, demo_project, parsed_targets
):
    build()
    parsed_targets.clear()
    edit(demo_project, "sql/bronze/fx_rates.sql", "    provider,", "    provider AS provider_name,")
    second = build()
    # Both readers of bronze.fx_rates see a new input schema; their own outputs do not change,
    # so the gold tables above them come from the cache.
    assert sorted(parsed_targets) == ["bronze.fx_rates", "silver.orders_usd", "silver.payments"]
    assert second.parsed == 3
    columns = [c.column for c in second.lineage["sql/bronze/fx_rates.sql"].columns]
    assert "provider_name" in columns and "provider" not in columns


def test_the_cache_keeps_only_what_the_last_build_used(build, demo_project, tmp_path):
    build()
    edit(demo_project, "sql/bronze/fx_rates.sql", "    provider,", "    provider AS provider_name,")
    build()
    entries = json.loads(cache_file(tmp_path).read_text(encoding="utf-8"))
    assert len(entries) == 2 * PROJECT_FILES  # one table-level and one column-level entry each


def test_a_truncated_cache_file_is_ignored_and_rewritten(build, tmp_path):
    first = build()
    text = cache_file(tmp_path).read_text(encoding="utf-8")
    cache_file(tmp_path).write_text(text[: len(text) // 2], encoding="utf-8")
    again = build()
    assert again.parsed == PROJECT_FILES
    assert again.lineage == first.lineage
    assert build().parsed == 0  # the rebuilt cache is good again


@pytest.mark.parametrize("content", ["", "not json at all", "[1, 2, 3]", "null", "\x00\xff"])
def test_a_cache_file_that_is_not_a_json_object_is_ignored(build, tmp_path, content):
    first = build()
    cache_file(tmp_path).write_text(content, encoding="utf-8")
    again = build()
    assert again.parsed == PROJECT_FILES
    assert again.lineage == first.lineage


def test_cache_entries_of_the_wrong_shape_are_ignored_not_fatal(build, tmp_path):
    # E.g. a cache written by an older build of the tool under the same key scheme.
    first = build()
    entries = json.loads(cache_file(tmp_path).read_text(encoding="utf-8"))
    cache_file(tmp_path).write_text(json.dumps({key: {} for key in entries}), encoding="utf-8")
    again = build()
    assert again.parsed == PROJECT_FILES
    assert again.lineage == first.lineage


def test_loading_an_unchanged_project_twice_parses_no_sql_the_second_time(
    demo_project, parsed_targets
):
    first = load_catalog(demo_project)
    assert (demo_project / ".medallion" / "cache" / "lineage.json").is_file()
    parsed_targets.clear()
    second = load_catalog(demo_project)
    assert parsed_targets == []
    assert second.lineage.column_edges == first.lineage.column_edges
    assert second.lineage.dag.edges() == first.lineage.dag.edges()


def test_a_cache_folder_that_cannot_be_written_only_warns(tmp_path):
    from medallion_assets.lineage.analysis import SqlFile, analyze
    from medallion_assets.lineage.cache import LineageCache

    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the cache folder should be")
    cache = LineageCache(blocker / "cache")
    files = [SqlFile("a.sql", "SELECT x FROM t", "spark", "a")]
    with pytest.warns(UserWarning, match="lineage cache not saved"):
        result = analyze(files, {}, cache=cache)
    assert result.lineage["a.sql"].sources == ("t",)
