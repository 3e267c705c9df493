"""A value of the wrong shape is reported as what to write, in the project's words, with a
line of that shape that loads; never Pydantic's message, and a broken sources.yaml does not
drag every SQL file that reads a raw table into the report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter

from medallion_assets.catalog import CatalogError, load_catalog, models, operations, sources
from medallion_assets.catalog.metadata_files import METADATA_FILES
from medallion_assets.catalog.shapes import annotation_at, example
from medallion_assets.catalog.yaml_source import read_yaml
from tests.catalog.test_broken_projects import Broken, build

_COLUMNS_AS_MAPPING = """sources:
  orders:
    system: s3_raw
    bucket: minimal-raw
    prefix: orders/
    format: jsonl
    columns:
      order_id: bigint
      amount: decimal(18,2)
"""

# (file, content, field, words the message must hold)
CASES = {
    "columns_as_mapping": (
        "metadata/sources.yaml",
        _COLUMNS_AS_MAPPING,
        "sources.orders.columns",
        "expected a list of {name[, type, nullable",
    ),
    "column_as_a_word": (
        "metadata/sources.yaml",
        _COLUMNS_AS_MAPPING.replace("      order_id: bigint\n      amount: decimal(18,2)\n", "")
        + "      - order_id bigint\n",
        "sources.orders.columns[0]",
        "expected {name[, type",
    ),
    "systems_as_list": (
        "metadata/systems.yaml",
        "systems:\n  - s3_raw\n  - spark\n",
        "systems",
        "expected a mapping of names to {kind[, ",
    ),
    "owners_as_text": (
        "metadata/project.yaml",
        "name: minimal\nowners: team:data\n",
        "owners",
        "expected a list of text, got the text 'team:data'",
    ),
    "targets_as_mapping": (
        "metadata/targets.yaml",
        "targets:\n  gold.revenue: {system: warehouse}\n",
        "targets",
        "expected a list of {table, system, warehouse_table[",
    ),
    "rule_set_as_mapping": (
        "metadata/validation.yaml",
        "rule_sets:\n  orders_rules:\n    not_null: [order_id]\n",
        "rule_sets.orders_rules",
        "expected a list of rules {kind, ...} (kind: row_count, not_null",
    ),
    "partitions_as_word": (
        "metadata/datasets.yaml",
        "datasets:\n  silver.orders_clean:\n    partitions: daily\n",
        "datasets.silver.orders_clean.partitions",
        "expected {column, start[, type]}",
    ),
}


def _problems(tmp_path: Path, file: str, content: str) -> list[str]:
    with pytest.raises(CatalogError) as raised:
        load_catalog(build(tmp_path, Broken({file: content}, [])), use_cache=False)
    return [str(issue) for issue in raised.value.issues]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_shape_says_what_to_write_and_the_example_loads(tmp_path: Path, case: str):
    file, content, field, words = CASES[case]
    problems = _problems(tmp_path, file, content)
    assert len(problems) == 1, "\n".join(problems)  # nothing else is dragged in
    problem = problems[0]
    assert problem.startswith(f"{file}:") and f" {field}: " in problem, problem
    assert words in problem, problem
    assert "Input should be" not in problem and "valid dictionary" not in problem, problem
    # The fix is a YAML line of the expected shape: it loads and validates as that field.
    line = re.search(r"\(fix: e\.g\. (.*)\)$", problem)
    assert line, problem
    model = METADATA_FILES[Path(file).stem]
    loc = _model_loc(field, model)
    written = _load(tmp_path, line.group(1))
    value = written[0] if isinstance(written, tuple) else next(iter(written.values()))
    TypeAdapter(annotation_at(model, loc)).validate_python(value, strict=True)


def _load(tmp_path: Path, text: str) -> object:
    """``text`` as the project's loader reads YAML (lists become tuples)."""
    path = tmp_path / "example.yaml"
    path.write_text(text + "\n")
    document, issues = read_yaml(path, "example.yaml")
    assert document is not None, issues
    return document.data


def _model_loc(field: str, model: type[BaseModel]) -> tuple[object, ...]:
    """``sources.orders.columns[0]`` -> the model's path; a dotted table name is one key."""
    parts: list[object] = [
        int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", field) if p != ""
    ]
    if annotation_at(model, tuple(parts)) is None:
        parts = [parts[0], f"{parts[1]}.{parts[2]}", *parts[3:]]
    return tuple(parts)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "max_concurrent_jobs: 0",
            "0 is not allowed: max_concurrent_jobs must be at least 1 "
            "(fix: e.g. max_concurrent_jobs: 1)",
        ),
        (
            "rows_per_second: -5",
            "-5 is not allowed: rows_per_second must be more than 0.0 "
            "(fix: e.g. rows_per_second: 1.0)",
        ),
    ],
)
def test_a_number_out_of_bounds_says_the_bound_and_a_value_within(
    tmp_path: Path, line: str, said: str
):
    systems = "systems:\n  s3_raw:\n    kind: s3\n    throttle:\n      " + line + "\n"
    systems += "  spark: {kind: spark}\n  warehouse: {kind: duckdb}\n"
    problems = _problems(tmp_path, "metadata/systems.yaml", systems)
    assert any(said in p for p in problems), "\n".join(problems)


def test_a_broken_sources_file_is_not_repeated_by_every_reader(tmp_path: Path):
    broken = _COLUMNS_AS_MAPPING + "    owners: team:data\n"
    problems = _problems(tmp_path, "metadata/sources.yaml", broken)
    assert all(p.startswith("metadata/sources.yaml") for p in problems), "\n".join(problems)
    assert not any("reads unknown table 'raw." in p for p in problems)


@pytest.mark.parametrize(
    "model",
    [
        m
        for module in (models, sources, operations)
        for m in vars(module).values()
        if isinstance(m, type)
        and issubclass(m, BaseModel)
        and m.__module__ == module.__name__
        and m.model_config.get("json_schema_extra")
    ],
    ids=lambda m: m.__name__,
)
def test_each_model_example_is_valid_yaml_of_that_model(tmp_path: Path, model: type[BaseModel]):
    written = _load(tmp_path, example(model, "value"))
    assert isinstance(written, dict)
    model.model_validate(written["value"], strict=True)


@pytest.mark.parametrize(
    ("file", "content", "fix"),
    [
        ("metadata/datasets.yaml", "datasets:\n\tgold.revenue: {}\n", "indent with spaces"),
        (
            "metadata/datasets.yaml",
            "datasets:\n  gold.revenue:\n    description: totals: per country\n",
            "a value holding ': ' needs quotes",
        ),
        ("metadata/datasets.yaml", "datasets:\n  gold.revenue: {owners: [a, b}\n", "close the"),
        ("sql/gold/revenue.sql", "", "write one query (SELECT ...)"),
        ("sql/gold/revenue.sql", "SELEC country FROM silver.orders_clean", "-- dialect:"),
    ],
)
def test_a_syntax_error_says_what_to_do_not_fix_it(
    tmp_path: Path, file: str, content: str, fix: str
):
    problems = [p for p in _problems(tmp_path, file, content) if p.startswith(file)]
    assert problems and fix in problems[0], "\n".join(problems)
    assert "(fix: fix the" not in problems[0]
