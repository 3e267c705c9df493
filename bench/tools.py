"""One adapter per lineage tool, so every tool is driven and counted the same way.

An adapter splits its work in two: ``analyse(folder)`` is the timed part (everything the tool
needs to produce table AND column lineage for every file in the folder) and
``summarise(raw)`` is untimed bookkeeping that turns the tool's own result objects into a
``Summary`` of plain counts, so the benchmark can show a tool that silently does nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

Schema = dict[str, dict[str, str]]  # {table: {column: type}}


@dataclass
class Summary:
    """What one tool found for one folder of CTAS files."""

    files: int
    errors: int  # files the tool failed on, or skipped without lineage
    table_edges: int  # distinct (source table, target table) pairs
    column_edges: int  # distinct (source column, target column) pairs
    # source of each distinct column edge as bare "table.column", to check against the schema
    column_edge_sources: list[str] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)  # target stem -> base tables
    error_samples: list[str] = field(default_factory=list)  # "file: message", a few only

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def bare_table(name: str) -> str:
    """``'<default>.LineItem'`` / ``'main.lineitem'`` -> ``'lineitem'``: for comparing tools."""
    return str(name).strip('"`').rsplit(".", 1)[-1].strip('"`').lower()


def bare_column(name: str) -> str:
    """``'<default>.lineitem.l_tax'`` -> ``'lineitem.l_tax'``: for checking against the schema."""
    table, _, column = str(name).rpartition(".")
    return bare_table(table) + "." + column.strip('"`').lower()


def target_stem(name: str) -> str:
    """``'gold.tpch_q01'`` -> ``'tpch_q01'``."""
    return bare_table(name)


class Adapter:
    """Base class: ``name``, ``parser`` (what the tool parses with), analyse and summarise."""

    name = "?"
    parser = "?"

    def analyse(self, folder: Path) -> Any:
        raise NotImplementedError

    def summarise(self, raw: Any) -> Summary:
        raise NotImplementedError


def make_adapter(tool: str, **options: Any) -> Adapter:
    """``tool`` is ``ours``, ``clgraph`` or ``sqllineage``; options go to its constructor."""
    if tool == "ours":
        from bench.ours import OursScan

        return OursScan(**options)
    if tool == "clgraph":
        from bench.competitors import CLGraph

        return CLGraph(**options)
    if tool == "sqllineage":
        from bench.competitors import SQLLineage

        return SQLLineage(**options)
    raise ValueError(f"unknown tool {tool!r}")
