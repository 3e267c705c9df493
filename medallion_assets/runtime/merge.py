"""Run a MERGE INTO file as Iceberg's own MERGE, on a staged branch of its table.

Before the MERGE the table is made (on the first build) with the columns the MERGE writes, and
columns a changed MERGE adds are added to it (existing rows read them as NULL). The statement
reads the registered views of its sources; its target is the staged branch, so readers see
nothing until the checks pass and the branch is published.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlglot import exp

from medallion_assets.catalog import Dataset
from medallion_assets.errors import PermanentError
from medallion_assets.lake import Produced, StagedWrite
from medallion_assets.lineage.merge_clauses import MergeSpec, merge_spec
from medallion_assets.lineage.script import Script, spark_preamble, spark_sql
from medallion_assets.lineage.spark_sql import read_views
from medallion_assets.lineage.statement import SqlError, Statement, parse_script
from medallion_assets.runtime.merge_sql import (
    CONFLICT_MARKER,
    defined_columns_sql,
    duplicate_keys_sql,
    latest_source,
)
from medallion_assets.runtime.samples import MASKED, private

if TYPE_CHECKING:
    from medallion_assets.runtime.table_run import TableRun

_TARGET = "__medallion_merge_target__"
_NO_KEYS = (
    "keep_latest_by needs a key: an ON condition of equalities joined by AND, each between a "
    "target column and an expression of the source (ON t.id = s.id)"
)


class MergeNotRunnable(PermanentError):
    """A MERGE whose clauses cannot be turned into the table's rows; the message says why."""

    error_code = "MERGE_NOT_RUNNABLE"
    fix = "correct the MERGE statement as the message says"


class MergeConflict(PermanentError):
    """A target row matched more than one source row: the same data would fail again."""

    error_code = "MERGE_CARDINALITY_VIOLATION"
    fix = "make the MERGE's ON condition match at most one source row per target row"


def stage_merge(
    run: TableRun,
    views: Mapping[str, str],
    produced: Produced,
    parsed: tuple[Script, Statement],  # the file's parse_script(inline=False)
) -> tuple[StagedWrite, str]:
    """Stage the MERGE of ``run``'s file on a branch of its table; (the staged write, the Spark
    SQL run, its target written ``{target}``)."""
    spark, lake, dataset = run.session, run.lake, run.dataset
    try:
        statement, preamble = spark_merge(dataset.sql, dataset.dialect, dataset.name, views, parsed)
        for sql in preamble:
            spark.sql(sql)
        spec = merge_spec(statement)
        latest_by = dataset.settings.keep_latest_by
        if latest_by:
            if not spec.keys:
                raise SqlError(_NO_KEYS)
            _known_columns(latest_by, spark.sql(spec.source_sql).columns)
            statement.set("using", latest_source(spec, latest_by))
            spec = merge_spec(statement)
        source_columns = spark.sql(spec.source_sql).columns
        columns = spark.sql(defined_columns_sql(spec, source_columns))
    except SqlError as error:
        raise MergeNotRunnable(f"{dataset.sql_path}: {error}") from None
    _refuse_duplicate_keys(run, spec)
    partitions = dataset.settings.partitions
    lake.prepare(spark, dataset.name, columns, partitions.column if partitions else None)
    try:
        runnable = spark_clauses(statement, lake.columns(spark, dataset.name))
    except SqlError as error:
        raise MergeNotRunnable(f"{dataset.sql_path}: {error}") from None
    query = _with_target(runnable)
    with merge_errors(dataset):
        staged = lake.stage_sql(spark, dataset.name, query, produced)
    return staged, query


def _known_columns(latest_by: tuple[str, ...], source_columns: list[str]) -> None:
    unknown = [c for c in latest_by if c.lower() not in {s.lower() for s in source_columns}]
    if unknown:
        raise SqlError(
            f"keep_latest_by names {', '.join(unknown)}, which the MERGE's source does not have "
            f"(it has {', '.join(source_columns)}): name source columns in metadata/datasets.yaml"
        )


def _refuse_duplicate_keys(run: TableRun, spec: MergeSpec) -> None:
    """Fail when two source rows hold one key (``spec.keys``) and could each become or change
    the same target row: Spark refuses only a key the target already has, so a first build (or
    a key new to the table) would keep the key twice, silently."""
    dataset = run.dataset
    if not spec.keys or not (spec.inserts or spec.checks_cardinality):
        return
    found = run.session.sql(duplicate_keys_sql(spec)).collect()[0]
    if not found["held"]:
        return
    columns = ", ".join(column for column, _ in spec.keys)
    masked = private(dataset, [column for column, _ in spec.keys])
    sample = MASKED if masked else "; ".join(found["sample"])
    raise MergeConflict(
        f"{dataset.sql_path}: MERGE INTO {dataset.name}: {found['held']} key(s) ({columns}) "
        f"held by more than one source row (e.g. {sample}); deduplicate the source, or set "
        f"keep_latest_by for {dataset.name} in metadata/datasets.yaml to keep the latest row"
    )


def spark_merge(
    sql: str,
    dialect: str,
    target: str,
    views: Mapping[str, str],
    parsed: tuple[Script, Statement] | None = None,
) -> tuple[exp.Expr, tuple[str, ...]]:
    """The MERGE of a dataset's file, with every table it reads pointed at its view, and the
    file's preamble (temporary views, functions) in Spark SQL."""
    script, statement = parsed or parse_script(sql, dialect, target, inline=False)
    merge = read_views(statement.expression, views)  # every table but the target itself
    preamble = tuple(spark_sql(read_views(s, views)) for s in spark_preamble(script, dialect))
    return merge, preamble


def spark_clauses(merge: exp.Expr, columns: Sequence[str]) -> exp.Expr:
    """The MERGE with its WHEN clauses in the forms Spark runs: ``DO NOTHING`` (PostgreSQL)
    becomes a guard on the later clauses of its kind (a row it takes is left as it is, which
    is what no clause taking it does), and a positional ``INSERT VALUES (...)`` names the
    table's columns in order.

    >>> import sqlglot
    >>> m = sqlglot.parse_one("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED AND s.x = 0 "
    ...     "THEN DO NOTHING WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES "
    ...     "(s.k, 1)", read="postgres")
    >>> print(spark_clauses(m, ["k", "n", "extra"]).sql("spark"))  # doctest: +NORMALIZE_WHITESPACE
    MERGE INTO t USING s ON t.k = s.k WHEN MATCHED AND NOT COALESCE(s.x = 0, FALSE) THEN DELETE
    WHEN NOT MATCHED THEN INSERT (k, n) VALUES (s.k, 1)
    """
    merge = merge.copy()
    skip: dict[tuple[bool, bool], list[exp.Expr]] = {}  # kind of clause -> DO NOTHING's
    closed: set[tuple[bool, bool]] = set()  # kinds an unconditional DO NOTHING ends
    kept = []
    for when in merge.args["whens"].expressions:
        kind = (bool(when.args.get("matched")), bool(when.args.get("source")))
        if kind in closed:
            continue
        then, condition = when.args.get("then"), when.args.get("condition")
        if isinstance(then, exp.Var) and then.name.upper() == "DO NOTHING":
            if condition is None:
                closed.add(kind)
            else:
                skip.setdefault(kind, []).append(condition.copy())
            continue
        guards = [exp.not_(exp.func("COALESCE", c.copy(), exp.false())) for c in skip.get(kind, [])]
        if guards:
            when.set("condition", exp.and_(*([condition] if condition else []), *guards))
        if isinstance(then, exp.Insert) and then.this is None:
            values = then.expression.expressions if then.expression is not None else []
            if len(values) > len(columns):
                raise SqlError(
                    f"INSERT VALUES gives {len(values)} values but the table has "
                    f"{len(columns)} columns ({', '.join(columns)}): name the columns "
                    "(INSERT (a, b) VALUES (...))"
                )
            names = [exp.to_identifier(c) for c in columns[: len(values)]]
            then.set("this", exp.Tuple(expressions=names))
        kept.append(when)
    merge.args["whens"].set("expressions", kept)
    return merge


def _with_target(merge: exp.Expr) -> str:
    """The MERGE in Spark SQL, its target written ``{target}`` (the staged branch's name)."""
    merge = merge.copy()
    target = merge.this
    table = target if isinstance(target, exp.Table) else target.find(exp.Table)
    alias = table.alias_or_name if table.alias else table.name
    table.replace(
        exp.Table(
            this=exp.to_identifier(_TARGET), alias=exp.TableAlias(this=exp.to_identifier(alias))
        )
    )
    return spark_sql(merge).replace(f"`{_TARGET}`", "{target}").replace(_TARGET, "{target}")


@contextmanager
def merge_errors(dataset: Dataset) -> Iterator[None]:
    """Turn Spark's failure of the cardinality check into a ``MergeConflict`` naming the file."""
    try:
        yield
    except Exception as error:
        if CONFLICT_MARKER not in str(error):
            raise
        raise MergeConflict(
            f"{dataset.sql_path}: MERGE INTO {dataset.name}: a target row matched more than one "
            "source row (Spark and Delta reject this); make the ON condition match at most one "
            "source row per target row, e.g. deduplicate the source"
        ) from None


__all__ = ["MergeConflict", "MergeNotRunnable", "merge_errors", "stage_merge"]
