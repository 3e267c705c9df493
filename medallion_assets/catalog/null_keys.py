"""Keys a merge matches rows by must never be NULL: a row whose key is NULL matches nothing, so
every run inserts it again (a `merge` or `scd2` table's `keys`, a warehouse target's merge
`keys`). A key is certainly non-null when the table's own `not_null` rule (severity error)
covers it, when the SQL makes it never NULL (``coalesce(..., <a literal>)``, a count, a row
number), or when the SQL carries it (unchanged, cast, trimmed or case-changed) from a column
that is certainly non-null (a source column declared `nullable: false`, an ingestion column,
or such a key of the table it reads), through no outer join but LEFT JOINs onto the table it
comes from. Any other key is refused at its line, with the two ways to fix it.

>>> null_keys_issues({}, {}, {})
[]
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from medallion_assets.catalog import sources as source_models
from medallion_assets.catalog.catalog import INGESTION_COLUMNS, Dataset
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.catalog.metadata_files import LoadedFile
from medallion_assets.catalog.rules import NotNullRule
from medallion_assets.lineage.statement import SqlError, parse_statement

_STAMPED = frozenset(name for name, _ in INGESTION_COLUMNS)


def null_keys_issues(
    files: Mapping[str, LoadedFile],
    datasets: Mapping[str, Dataset],
    sources: Mapping[str, source_models.Source],
) -> list[CatalogIssue]:
    """One issue per merge key that may be NULL."""
    proof = _NonNull(datasets, sources)
    issues: list[CatalogIssue] = []
    for name, dataset in datasets.items():
        kind = dataset.settings.kind
        if kind in ("merge", "scd2"):
            for key in dataset.settings.keys:
                if not proof.certain(name, key):
                    found = ("datasets", name, "keys")
                    issues.append(_issue(files, "datasets", found, name, key, f"kind {kind}"))
        target = dataset.target
        if target is not None and target.mode == "merge":
            for key in target.keys:
                if not proof.certain(name, key):
                    where = ("targets", _target_index(files, name), "keys")
                    issues.append(_issue(files, "targets", where, name, key, "its target's merge"))
    return issues


class _NonNull:
    def __init__(
        self, datasets: Mapping[str, Dataset], sources: Mapping[str, source_models.Source]
    ):
        self.datasets = datasets
        self.sources = sources
        self.known: dict[tuple[str, str], bool] = {}
        self.selects: dict[str, exp.Select | None] = {}  # each table's SQL, parsed once

    def _select(self, dataset: Dataset) -> exp.Select | None:
        if dataset.name not in self.selects:
            self.selects[dataset.name] = _select(dataset)
        return self.selects[dataset.name]

    def certain(self, table: str, column: str) -> bool:
        found = self.known.get((table, column))
        if found is None:
            self.known[(table, column)] = False  # a cycle proves nothing
            found = self.known[(table, column)] = self._prove(table, column)
        return found

    def _prove(self, table: str, column: str) -> bool:
        if table.startswith("raw."):
            source = self.sources.get(table.removeprefix("raw."))
            declared = {c.name: c for c in source.columns} if source is not None else {}
            return column in _STAMPED or (column in declared and not declared[column].nullable)
        dataset = self.datasets.get(table)
        if dataset is None:
            return False
        if any(
            isinstance(rule, NotNullRule) and rule.blocking and column in rule.columns
            for rule in dataset.rules
        ):
            return True
        query = self._select(dataset)
        value = _projection(query, column)
        if _never_null(value):
            return True
        lineage = next((c for c in dataset.columns if c.column == column), None)
        if lineage is None or len(lineage.sources) != 1:
            return False
        if lineage.transform != "direct" and not _passes_nulls_through(value):
            return False
        if not _joins_keep(query, value):
            return False  # the other side of an outer join is NULL where nothing matches
        upstream, _, upstream_column = lineage.sources[0].rpartition(".")
        return self.certain(upstream, upstream_column)


def _select(dataset: Dataset) -> exp.Select | None:
    """The table's query when it is one SELECT."""
    try:
        query = parse_statement(dataset.sql, dataset.dialect, dataset.name).query
    except SqlError:
        return None
    return query if isinstance(query, exp.Select) else None


def _joins_keep(query: exp.Select | None, value: exp.Expr | None) -> bool:
    """Whether no outer join can make ``value``'s column NULL: none at all, or only LEFT
    JOINs of the top SELECT onto the table the column is read from."""
    if query is None:
        return False
    joins = [j for s in query.find_all(exp.Select) for j in s.args.get("joins") or ()]
    outer = [j for j in joins if j.side in ("LEFT", "RIGHT", "FULL")]
    if not outer:
        return True
    if any(j.parent is not query or j.side != "LEFT" for j in outer):
        return False
    column = value.find(exp.Column) if value is not None else None
    first = query.args.get("from_") or query.args.get("from")
    kept = first.this.alias_or_name if isinstance(first, exp.From) else None
    return column is not None and bool(kept) and column.table == kept


def _projection(query: exp.Select | None, column: str) -> exp.Expr | None:
    """The expression the table's SELECT makes ``column`` from, when it is one SELECT."""
    if query is None:
        return None
    for projection in query.expressions:
        if projection.alias_or_name.lower() == column.lower():
            value: exp.Expr = projection.unalias()
            return value
    return None


def _never_null(value: exp.Expr | None) -> bool:
    """``coalesce(..., <a literal>)``, a count, a row number or rank: never NULL."""
    if isinstance(value, exp.Window):
        value = value.this
    if isinstance(value, (exp.Count, exp.RowNumber, exp.Rank, exp.DenseRank, exp.Literal)):
        return True
    last = value.expressions[-1] if isinstance(value, exp.Coalesce) else None
    return isinstance(last, exp.Literal)


def _passes_nulls_through(value: exp.Expr | None) -> bool:
    """A column under casts and case or space changes only: NULL exactly when it is. sqlglot
    reads Spark's CAST as a TryCast (Spark's CAST before ANSI mode); Spark 4 runs ANSI mode,
    where a CAST that cannot convert fails the query, so only a written TRY_CAST (``safe``)
    can make a NULL."""
    while isinstance(value, (exp.Cast, exp.Upper, exp.Lower, exp.Trim)) and not (
        isinstance(value, exp.TryCast) and value.args.get("safe")
    ):
        value = value.this
    return isinstance(value, exp.Column)


def _target_index(files: Mapping[str, LoadedFile], table: str) -> int:
    loaded = files.get("targets")
    data = loaded.document.data if loaded is not None and loaded.document is not None else None
    targets = data.get("targets", []) if isinstance(data, dict) else []
    for index, target in enumerate(targets):
        if isinstance(target, dict) and target.get("table") == table:
            return index
    return 0


def _issue(
    files: Mapping[str, LoadedFile],
    file: str,
    where: tuple[str | int, ...],
    table: str,
    key: str,
    what: str,
) -> CatalogIssue:
    message = (
        f"{what} of {table} matches rows by {key!r}, which may be NULL (a row with a NULL key "
        "matches nothing, so every run would insert it again)"
    )
    fix = (
        f"add {{kind: not_null, columns: [{key}]}} to {table}'s rules, or make it non-null in "
        "the SQL (from a column declared nullable: false, through no outer join that may leave "
        "it NULL)"
    )
    loaded = files.get(file)
    if loaded is None or loaded.document is None:
        field = ".".join(str(w) for w in where)
        return CatalogIssue(f"metadata/{file}.yaml", field, message, fix)
    return loaded.document.issue(where, message, fix)
