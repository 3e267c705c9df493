"""Inputs of benchmark A: the 121 TPC queries as CTAS files, and the TPC table schema.

Each bare SELECT in ``<corpora>/tpch/*.sql`` and ``<corpora>/tpcds/*.sql`` becomes
``CREATE TABLE gold.<stem> AS <query>`` (trailing semicolon removed) in one flat folder, so
every tool reads exactly the same files. The corpora folder is ``$MEDALLION_CORPORA`` when
set, else the copy in the repository, ``tests/data/corpora/``.
"""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCHEMA_FILE = REPO / "tests" / "data" / "tpc_schema.json"
EXPECTED_FILE = REPO / "tests" / "data" / "tpc_expected.py"
CORPUS_SETS = ("tpch", "tpcds")
TARGET_SCHEMA = "gold"


def corpora_dir() -> Path:
    """Folder holding ``tpch/`` and ``tpcds/``; raises if none of the candidates has them."""
    override = os.environ.get("MEDALLION_CORPORA")
    candidates = [Path(override)] if override else []
    candidates.append(REPO / "tests" / "data" / "corpora")
    for candidate in candidates:
        if all((candidate / name).is_dir() for name in CORPUS_SETS):
            return candidate.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"TPC corpora not found (tried {tried}); set MEDALLION_CORPORA")


def query_files(root: Path | None = None) -> list[Path]:
    root = root or corpora_dir()
    return sorted(p for name in CORPUS_SETS for p in (root / name).glob("*.sql"))


def as_ctas(stem: str, sql: str) -> str:
    """``CREATE TABLE gold.<stem> AS <sql>`` with the query's trailing semicolon removed."""
    body = sql.strip().rstrip(";").rstrip()
    return f"CREATE TABLE {TARGET_SCHEMA}.{stem} AS\n{body}\n"


def write_ctas_corpus(out_dir: Path, root: Path | None = None) -> list[Path]:
    """Write one CTAS file per corpus query into ``out_dir`` (flat); return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in query_files(root):
        target = out_dir / source.name
        sql = source.read_text(encoding="utf-8")
        target.write_text(as_ctas(source.stem, sql), encoding="utf-8")
        written.append(target)
    if not written:
        raise FileNotFoundError(f"no .sql files under {root or corpora_dir()}")
    return written


def load_schema() -> dict[str, dict[str, str]] | None:
    """TPC table schemas ``{table: {column: type}}``, or None when the file is missing."""
    if not SCHEMA_FILE.is_file():
        return None
    schema: dict[str, dict[str, str]] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


def expected_sources() -> dict[str, frozenset[str]] | None:
    """Hand-checked base tables per query stem (tests/data/tpc_expected.py), or None."""
    if not EXPECTED_FILE.is_file():
        return None
    expected: dict[str, frozenset[str]] = runpy.run_path(str(EXPECTED_FILE))["EXPECTED_SOURCES"]
    return expected


def write_warmup_corpus(out_dir: Path) -> Path:
    """A tiny two-file project, not part of the corpus, run by every tool before timing.

    It pays for lazy imports and first-call set-up (dialect tables, tokenizers) so that no
    tool's measured run includes them.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "warm_a.sql").write_text(
        "CREATE TABLE gold.warm_a AS\n"
        "WITH x AS (SELECT o.o_orderkey, sum(l.l_quantity) AS qty FROM orders AS o\n"
        "JOIN lineitem AS l ON l.l_orderkey = o.o_orderkey GROUP BY o.o_orderkey)\n"
        "SELECT o_orderkey, qty, CASE WHEN qty > 10 THEN 'big' ELSE 'small' END AS size FROM x\n",
        encoding="utf-8",
    )
    (out_dir / "warm_b.sql").write_text(
        "CREATE TABLE gold.warm_b AS\nSELECT n_name, count(*) AS c FROM nation\n"
        "WHERE n_regionkey IN (SELECT r_regionkey FROM region) GROUP BY n_name\n",
        encoding="utf-8",
    )
    return out_dir
