"""Parse one SQL file into the statement that produces a table: its target, its query, its inputs.

>>> s = parse_statement("INSERT OVERWRITE TABLE silver.t SELECT a FROM bronze.x", "spark", "gold.f")
>>> (s.kind, s.target, s.sources)
('insert_overwrite', 'silver.t', ('bronze.x',))
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.optimizer.scope import build_scope

from medallion_assets.lineage.copies import copy_query, path_target
from medallion_assets.lineage.nesting import TOO_DEEP_FIX, check_nesting, check_parentheses
from medallion_assets.lineage.normal_forms import (
    COMMON_KINDS,
    common_form,
    common_text,
    split_multitable,
)
from medallion_assets.lineage.relations import real_tables
from medallion_assets.lineage.script import (
    Script,
    SqlError,
    Unparsable,
    drop_partition_decorators,
    first_line,
    inline_temporary,
    path_of,
    split_script,
    table_name,
)
from medallion_assets.lineage.set_chains import balance_set_chains
from medallion_assets.lineage.use_names import qualify_for_use

__all__ = ["SqlError", "Statement", "parse_script", "parse_statement", "table_name"]


def _not_a_fallback(record: logging.LogRecord) -> bool:
    """sqlglot warns on the console for each statement it keeps unparsed (``CALL p()``) and
    each scope it cannot walk (``WITH c AS (TABLE s)``); the file's error or its unresolved
    columns say so instead."""
    message = record.getMessage()
    return "Falling back to parsing as a 'Command'" not in message and not message.startswith(
        "Cannot traverse scope"
    )


logging.getLogger("sqlglot").addFilter(_not_a_fallback)


@dataclass(frozen=True)
class Statement:
    kind: str  # select | create_table | create_view | insert | insert_overwrite | merge | update
    target: str
    sources: tuple[str, ...]
    expression: exp.Expr  # the whole parsed statement, identifiers lower-cased
    query: exp.Expr | None  # the row-producing query (None for MERGE and INSERT ... VALUES)
    target_columns: tuple[str, ...] = ()  # INSERT INTO t (a, b) / CREATE VIEW v (a, b): by position


# Names users may give that sqlglot spells differently: ANSI SQL is sqlglot's generic dialect.
_DIALECT_ALIASES = {"ansi": "", "generic": "", "sparksql": "spark"}


def known_dialects() -> list[str]:
    # sqlglot's dialect table: loaded only when the dialects are listed
    from sqlglot.dialects.dialect import Dialects

    return sorted({d.value for d in Dialects if d.value} | set(_DIALECT_ALIASES))


def sqlglot_dialect(name: str) -> str:
    """The sqlglot name of an authoring dialect (``ansi``: sqlglot's generic dialect, "").

    >>> sqlglot_dialect("Redshift"), sqlglot_dialect("ansi"), sqlglot_dialect("sparksql")
    ('redshift', '', 'spark')
    """
    return _DIALECT_ALIASES.get(name.lower(), name.lower())


def parse_statement(sql: str, dialect: str, default_target: str | None) -> Statement:
    """Parse ``sql`` (one write or query, after an optional preamble) written in ``dialect``.

    A bare SELECT writes ``default_target``; CTAS, INSERT, MERGE and CREATE VIEW name their own.
    Temporary relations of the preamble are inlined, so lineage reads through them.
    """
    return parse_script(sql, dialect, default_target)[1]


def parse_script(
    sql: str, dialect: str, default_target: str | None, *, inline: bool = True
) -> tuple[Script, Statement]:
    """The file's statements and its write; ``inline=False`` keeps the write as written (reading
    the temporary objects of the preamble), which is what the runtime executes."""
    check_parentheses(sql)  # before the parser recurses once per level past Python's limit
    try:
        expressions = [balance_set_chains(e) for e in _parse_all(sql, dialect)]
        for expression in expressions:
            check_nesting(expression)
            _lower_identifiers(expression)
        script = split_script(expressions)
        qualify_for_use(script, sqlglot_dialect(dialect))
        main = inline_temporary(script) if inline else script.main
        return script, _statement(main, default_target, sqlglot_dialect(dialect))
    except RecursionError:
        # Caught here, at the file's own boundary, so the message names the file and the
        # interpreter's recursion limit stays as it is for everything else.
        raise SqlError(f"is nested too deeply to analyse; {TOO_DEEP_FIX}") from None


def _statement(expression: exp.Expr, default_target: str | None, dialect: str = "") -> Statement:
    copy = copy_query(expression, dialect)
    if copy is not None:
        kind, target, query = copy
        return Statement(kind, target, _tables_read(query), expression, query)
    if isinstance(expression, exp.Query) and _select_into(expression) is not None:
        return _select_into_statement(expression)
    if isinstance(expression, exp.Query):
        if not default_target:
            raise SqlError("a bare SELECT needs a target table: name the file after the table")
        return Statement("select", default_target, _tables_read(expression), expression, expression)
    if isinstance(expression, exp.Create):
        return _create(expression)
    if isinstance(expression, exp.Insert):
        return _insert(expression)
    if isinstance(expression, exp.Merge):
        return _merge(expression)
    if isinstance(expression, exp.Update):
        return _update(expression)
    raise SqlError(
        f"{type(expression).__name__.upper()} statements do not produce a table: write a SELECT, "
        "CREATE TABLE ... AS, CREATE VIEW, INSERT INTO/OVERWRITE or MERGE INTO"
    )


def _parse_all(sql: str, dialect: str) -> list[exp.Expr]:
    try:
        read = sqlglot_dialect(dialect)
        parsed = sqlglot.parse(common_text(sql, read), read=read)
        # Empty statements (`;;`, or `;` after a comment) are not statements.
        kept = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
        statements = [one for s in kept for one in split_multitable(s)]
        # One walk per statement: its common form, then its derived tables' names.
        walks = [list(s.find_all(*COMMON_KINDS, exp.Subquery, exp.Unnest)) for s in statements]
        for statement, nodes in zip(statements, walks, strict=True):
            common_form(statement, read, nodes)
    except (ParseError, TokenError) as error:
        raise Unparsable(f"does not parse as {dialect} SQL: {first_line(error)}") from None
    except ValueError as error:  # unknown dialect name
        raise SqlError(f"{error} Known dialects: {', '.join(known_dialects())}") from None
    if not statements:
        raise SqlError("holds no SQL statement: write the SELECT that produces the table")
    for statement, nodes in zip(statements, walks, strict=True):
        if isinstance(statement, exp.Command) and not _copies(statement, dialect):
            raise Unparsable(
                f"does not parse as {dialect} SQL: unsupported statement {statement.name!r}"
            )
        _name_derived_tables(nodes)
        if sqlglot_dialect(dialect) == "bigquery":
            drop_partition_decorators(statement)
    return statements


def _copies(command: exp.Command, dialect: str) -> bool:
    """A statement sqlglot keeps as text that copies rows (UNLOAD, EXCHANGE PARTITION)."""
    try:
        return copy_query(command, sqlglot_dialect(dialect)) is not None
    except SqlError:
        return command.name.upper() == "UNLOAD"  # a malformed UNLOAD: its own error says why


UNNEST_ALIAS = "_unnest_"


def _name_derived_tables(nodes: Sequence[exp.Expr]) -> None:
    """Give each subquery of a FROM or JOIN without an alias an internal one
    (``_subquery_1``...) among a statement's walked ``nodes``: Spark, BigQuery and others
    allow several, and scopes need a name for each source. An UNNEST without an alias
    (BigQuery: its struct fields are the columns) likewise; the name is internal, not the
    element's value alias (``columns._unnest_outputs``)."""
    subqueries = unnests = 0
    for node in nodes:
        if isinstance(node, exp.Unnest):
            unnests += 1
            if not node.args.get("alias") and _in_from(node):
                node.set(
                    "alias", exp.TableAlias(this=exp.to_identifier(f"{UNNEST_ALIAS}{unnests}"))
                )
            continue
        if not isinstance(node, exp.Subquery):
            continue
        # A derived table's Subquery holds its query; parentheses around tables or a join
        # ``((a JOIN b))`` are Subqueries holding a Table or another Subquery.
        joined = node.this
        if isinstance(joined, exp.Table) and joined.args.get("joins") and node.alias:
            # ``(t1 CROSS JOIN t2) AS tx``: the joined rows under one name, a derived table
            joins = joined.args.pop("joins")
            derived_table = exp.select(exp.Star()).from_(joined)
            derived_table.set("joins", joins)  # after the FROM: the star lists t1's first
            node.set("this", derived_table)
        derived = isinstance(node.this, (exp.Select, exp.SetOperation))
        if derived and not node.alias and _in_from(node):
            subqueries += 1
            node.set("alias", exp.TableAlias(this=exp.to_identifier(f"_subquery_{subqueries}")))


def _lower_identifiers(expression: exp.Expr) -> None:
    # Lineage is case-insensitive: Spark resolves identifiers case-insensitively by default.
    for identifier in expression.find_all(exp.Identifier):
        name = identifier.this
        if isinstance(name, str) and not name.islower() and path_of(identifier) is None:
            identifier.set("this", name.lower())


def _target_table(node: exp.Expr | None) -> tuple[exp.Table, tuple[str, ...]]:
    """Target table of CREATE/INSERT and the explicit column list, if any."""
    if isinstance(node, exp.Schema):
        named = (exp.Identifier, exp.ColumnDef)  # CREATE VIEW v (a COMMENT 'x', b)
        columns = tuple(c.name.lower() for c in node.expressions if isinstance(c, named))
        node = node.this
    else:
        columns = ()
    if not isinstance(node, exp.Table):
        raise SqlError("the statement's target is not a table name")
    return node, columns


def _create(expression: exp.Create) -> Statement:
    kind = str(expression.args.get("kind") or "").upper()
    if kind not in ("TABLE", "VIEW"):
        raise SqlError(f"CREATE {kind} does not produce a table: use CREATE TABLE ... AS SELECT")
    query = _unwrap(expression.expression)
    statement_kind = "create_view" if kind == "VIEW" else "create_table"
    if isinstance(query, exp.Values):  # CREATE TABLE t AS VALUES (1, 2) AS v(a, b): constants
        table, _ = _target_table(expression.this)
        read = {t for q in _nested_queries(query, skip=None) for t in _tables_read(q)}
        return Statement(statement_kind, table_name(table), tuple(sorted(read)), expression, None)
    if not isinstance(query, exp.Query):
        raise SqlError("CREATE TABLE without AS SELECT holds no query: add 'AS SELECT ...'")
    table, columns = _target_table(expression.this)
    return Statement(
        statement_kind, table_name(table), _tables_read(query), expression, query, columns
    )


def _unwrap(query: exp.Expr | None) -> exp.Expr | None:
    """``INSERT INTO t (a, b) (SELECT ...)``: the parenthesised query itself."""
    while isinstance(query, exp.Subquery) and isinstance(query.this, exp.Query):
        if any(query.args.get(k) for k in ("alias", "limit", "order", "offset")):
            break
        query = query.this
    return query


def _select_into(query: exp.Query) -> exp.Into | None:
    """The INTO clause of ``SELECT ... INTO t FROM ...`` (of a set operation's first branch)."""
    while isinstance(query, exp.SetOperation):
        query = query.this
    into = query.args.get("into") if isinstance(query, exp.Select) else None
    return into if isinstance(into, exp.Into) else None


def _select_into_statement(query: exp.Query) -> Statement:
    """``SELECT ... INTO new_table FROM ...`` (Postgres, Redshift, T-SQL) creates new_table."""
    into = _select_into(query)
    assert into is not None
    table = into.this
    if not isinstance(table, exp.Table):
        raise SqlError("SELECT ... INTO needs a table name after INTO")
    into.pop()
    return Statement("create_table", table_name(table), _tables_read(query), query, query)


def _insert(expression: exp.Insert) -> Statement:
    directory = path_target(expression)
    if directory is not None:  # INSERT OVERWRITE DIRECTORY 'path' SELECT ...
        query = _unwrap(expression.expression)
        if not isinstance(query, exp.Query):
            raise SqlError("INSERT OVERWRITE DIRECTORY needs a SELECT")
        return Statement("insert_overwrite", directory, _tables_read(query), expression, query)
    table, columns = _target_table(expression.this)
    query = _unwrap(expression.expression)
    ctes = expression.args.get("with_")
    if ctes is not None and isinstance(query, exp.Query):
        # Spark's "WITH x AS (...) INSERT ... SELECT ... FROM x": the CTEs belong to the query.
        expression.set("with_", None)
        query.set("with_", ctes)
    kind = "insert_overwrite" if expression.args.get("overwrite") else "insert"
    if isinstance(query, exp.Query):
        return Statement(kind, table_name(table), _tables_read(query), expression, query, columns)
    # INSERT ... VALUES: a scalar subquery in a row still reads its tables.
    nested = _nested_queries(query, skip=None) if query is not None else []
    read = {t for q in nested for t in _tables_read(q)}
    return Statement(kind, table_name(table), tuple(sorted(read)), expression, None, columns)


def _in_from(node: exp.Expr) -> bool:
    """Whether ``node`` is a source of a FROM or JOIN, inside parentheses or not."""
    parent = node.parent
    while isinstance(parent, exp.Subquery):
        parent = parent.parent
    return isinstance(parent, (exp.From, exp.Join))


def _update(expression: exp.Update) -> Statement:
    """``UPDATE t SET c = expr [FROM ...]`` as the lineage of its assigned columns: the query
    ``SELECT expr AS c FROM t [JOIN ...]`` (T-SQL's ``UPDATE alias ... FROM table alias``
    and MySQL's ``UPDATE a JOIN b ... SET`` alike)."""
    target = expression.this
    if not isinstance(target, exp.Table):
        raise SqlError("UPDATE needs a table name as its target")
    from_ = expression.args.get("from_")
    real = target
    if from_ is not None and not target.args.get("db"):
        aliased = [t for t in from_.find_all(exp.Table) if t.alias == target.name]
        real = aliased[0] if aliased else target
    assignments = [e for e in expression.expressions if isinstance(e, exp.EQ)]
    names = tuple(e.this.name for e in assignments)
    values = [exp.alias_(e.expression.copy(), e.this.name) for e in assignments]
    select = exp.Select(expressions=values)
    tables = [target.copy()] if real is target else []
    if from_ is not None:
        tables.append(from_.this.copy())
    joins = []
    for position, table in enumerate(tables):
        joins += [j.pop() for j in list(table.args.get("joins") or [])]
        if position > 0:
            joins.insert(0, exp.Join(this=table))
    select.set("from_", exp.From(this=tables[0]))
    select.set("joins", joins or None)
    if expression.args.get("with_") is not None:
        select.set("with_", expression.args["with_"].copy())
    name = table_name(real)
    read = tuple(t for t in _tables_read(select) if t != name)
    return Statement("update", name, read, expression, select, names)


def _merge(expression: exp.Merge) -> Statement:
    target = expression.this
    if not isinstance(target, exp.Table):
        raise SqlError("MERGE INTO needs a table name as its target")
    using = expression.args.get("using")
    read: set[str] = set()
    if isinstance(using, exp.Table):
        read.add(table_name(using))
    elif isinstance(using, exp.Subquery) and isinstance(using.this, exp.Query):
        read.update(_tables_read(using.this))
    for subquery in _nested_queries(expression, skip=using):
        read.update(_tables_read(subquery))
    return Statement("merge", table_name(target), tuple(sorted(read)), expression, None)


def _nested_queries(expression: exp.Expr, skip: exp.Expr | None) -> list[exp.Query]:
    """Outermost subqueries of ``expression`` (of a MERGE, outside its USING clause)."""
    found = []
    for node in expression.walk(prune=lambda n: n is skip or isinstance(n, exp.Query)):
        if isinstance(node, exp.Query) and node is not skip:
            found.append(node)
    return found


def _tables_read(query: exp.Expr) -> tuple[str, ...]:
    """Real tables read by a query: CTE names and aliases resolve to their definitions."""
    root = build_scope(query)
    if root is None:
        return ()
    return tuple(sorted({table_name(t) for t in real_tables(root)}))
