"""A SQL file of several statements: a preamble of session statements, then its one write or query.

The preamble may define temporary functions, views and tables (``CREATE TEMP ...``,
``CACHE TABLE x AS``, T-SQL ``SELECT ... INTO #t``), declare and set variables, and ``USE`` a
database. Lineage reads the write with every temporary relation inlined, so a temporary view over
``bronze.orders`` makes the target depend on ``bronze.orders``, column by column.

>>> import sqlglot
>>> s = split_script(sqlglot.parse("CREATE TEMP VIEW v AS SELECT a FROM t; SELECT a FROM v"))
>>> [(p.kind, p.name) for p in s.preamble], type(s.main).__name__
([('view', 'v')], 'Select')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError


class SqlError(ValueError):
    """A SQL file that cannot be analysed; the message says why and what to do."""


class Unparsable(SqlError):
    """SQL that sqlglot cannot parse in its dialect ("does not parse as ..."): valid SQL a
    scan may still read the tables of (``token_tables``), or SQL with a mistake."""


def first_line(error: Exception) -> str:
    """What a parse error says, in one line: sqlglot's first error with its line and column."""
    errors = getattr(error, "errors", None)
    if errors:
        first = errors[0]
        return f"{first.get('description')} at line {first.get('line')}, column {first.get('col')}"
    return (str(error).splitlines() or [""])[0]


def table_name(table: exp.Table) -> str:
    """Lower-cased dotted name of a table reference, as written (``db.table``); a file path
    read as a table (Spark's ``parquet.`s3://b/p```) is the path as written."""
    path = path_of(table.this)
    if path is not None:
        return path
    return ".".join(part.name.lower() for part in table.parts)


def path_of(name: exp.Expr | None) -> str | None:
    """The path a quoted table name holding a ``/`` is (``delta.`/mnt/x```), else None."""
    if isinstance(name, exp.Identifier) and name.quoted and "/" in name.name:
        return str(name.name)
    return None


def drop_partition_decorators(statement: exp.Expr) -> None:
    """BigQuery's ``t$20230101`` and ``t$__UNPARTITIONED__`` read a partition of ``t``: the
    table is ``t`` (``$`` is in no BigQuery table's name)."""
    for table in statement.find_all(exp.Table):
        name = table.this
        if isinstance(name, exp.Identifier) and "$" in name.name.lstrip("$"):
            name.set("this", name.name[: name.name.index("$", 1)])


_WRITES = (exp.Query, exp.Create, exp.Insert, exp.Merge)
PREAMBLE_KINDS = "temporary functions, views and tables, DECLARE, SET, USE and CACHE TABLE"


@dataclass(frozen=True)
class Preamble:
    kind: str  # function | view | table | cache | declare | set | use | use_database | session
    name: str  # the object or database; "" for DECLARE/SET (see ``variables``)
    expression: exp.Expr
    query: exp.Expr | None = None  # the rows of a temporary view, table or cache
    variables: tuple[str, ...] = ()  # names a DECLARE defines


@dataclass(frozen=True)
class Script:
    preamble: tuple[Preamble, ...]
    main: exp.Expr  # the file's one write or query

    @property
    def relations(self) -> dict[str, exp.Expr]:
        """Temporary views and tables by name, in definition order."""
        return {p.name: p.query for p in self.preamble if p.query is not None}

    @property
    def variables(self) -> set[str]:
        return {v for p in self.preamble for v in p.variables}


def split_script(statements: list[exp.Expr]) -> Script:
    """The preamble and the one write or query of a file's statements (in file order)."""
    preamble: list[Preamble] = []
    writes: list[tuple[int, exp.Expr]] = []
    for position, statement in enumerate(statements, start=1):
        part = preamble_part(statement)
        if part is None and len(statements) > 1 and not isinstance(statement, _WRITES):
            raise SqlError(
                f"statement {position} ({_kind(statement)}) is neither the file's write nor a "
                f"preamble statement ({PREAMBLE_KINDS}): remove it"
            )
        if part is None:
            writes.append((position, statement))
        elif writes:
            raise SqlError(
                f"statement {position} ({_kind(statement)}) follows the file's write: "
                "move it before the write, or into its own file"
            )
        else:
            preamble.append(part)
    if not writes:
        raise SqlError(
            f"holds only session statements ({PREAMBLE_KINDS}): add the SELECT or write "
            "that produces the table"
        )
    if len(writes) > 1:
        names = " and ".join(_describe(s) for _, s in writes[:2])
        raise SqlError(
            f"holds {len(writes)} writes or queries ({names}); one file writes one table: "
            f"split it into one file per table (a file may start with {PREAMBLE_KINDS})"
        )
    return Script(tuple(preamble), writes[0][1])


_CLONE = re.compile(
    r"^\s*snapshot\s+(table\b.*?)(?:\bfor\s+system_time\s+as\s+of\b.*)?$", re.I | re.S
)


def known_command(command: exp.Command, dialect: str) -> list[exp.Expr] | None:
    """A statement sqlglot keeps unparsed (a scanned script's) whose effect on data is known:
    the statements of ``EXECUTE IMMEDIATE 'literal'``; nothing for other dynamic SQL, a
    ``CALL`` or a ``DROP``; BigQuery's ``CREATE SNAPSHOT TABLE t CLONE s`` as a clone. None:
    not one of these."""
    head, rest = command.name.upper(), command.text("expression")
    if head == "DROP" or head == "CALL":
        return []
    if head in ("EXECUTE", "EXEC"):
        immediate = re.match(r"\s*immediate\b", rest, re.I)
        try:
            value = sqlglot.parse_one(rest[immediate.end() :], read=dialect) if immediate else None
        except SqlglotError:
            value = None
        if not (isinstance(value, exp.Literal) and value.is_string):
            return []  # built at run time: not in the text
        try:
            return [s for s in sqlglot.parse(value.this, read=dialect) if s]
        except SqlglotError:
            return [command]  # the analysis names it as unsupported
    clone = _CLONE.match(rest) if head == "CREATE" else None
    if clone is None:
        return None
    try:
        return [sqlglot.parse_one(f"CREATE {clone.group(1)}", read=dialect)]
    except SqlglotError:
        return [command]


def preamble_part(statement: exp.Expr) -> Preamble | None:
    """What ``statement`` defines for the write after it, or None when it is no preamble."""
    if isinstance(statement, exp.Create) and _temporary(statement):
        kind = str(statement.args.get("kind") or "").upper()
        target = statement.this
        if kind == "FUNCTION":
            table = target.this if isinstance(target, exp.UserDefinedFunction) else target
            return Preamble("function", _name(table), statement)
        rows = statement.expression
        if isinstance(rows, exp.Values):  # CREATE TEMP VIEW v AS VALUES (1, 2) AS t(a, b)
            rows = exp.select(exp.Star()).from_(rows.copy())
        if isinstance(target, exp.Schema) and isinstance(rows, exp.Query):
            # CREATE TEMP VIEW v (a, b) AS ...: the rows under the listed names, by position
            named = [exp.to_identifier(c.name) for c in target.expressions]
            alias = exp.TableAlias(this=exp.to_identifier("_named_"), columns=named)
            rows, target = exp.select(exp.Star()).from_(rows.subquery(alias)), target.this
        if kind in ("VIEW", "TABLE") and isinstance(rows, exp.Query):
            return Preamble(kind.lower(), _name(target), statement, rows)
    if isinstance(statement, exp.Cache) and isinstance(statement.expression, exp.Query):
        return Preamble("cache", _name(statement.this), statement, statement.expression)
    into = statement.args.get("into") if isinstance(statement, exp.Select) else None
    if isinstance(into, exp.Into) and (into.args.get("temporary") or _hash_temp(into.this)):
        query = statement.copy()
        query.set("into", None)  # T-SQL SELECT ... INTO #t, Redshift SELECT ... INTO TEMP t
        return Preamble("table", _name(into.this), statement, query)
    if isinstance(statement, exp.Declare):
        names = tuple(
            n.name.lower()
            for item in statement.expressions
            for n in (item.this if isinstance(item.this, list) else [item.this])
        )
        return Preamble("declare", "", statement, variables=names)
    if isinstance(statement, exp.Set):
        return Preamble("set", "", statement)
    if isinstance(statement, exp.Use):
        kind = statement.text("kind").upper()
        if kind in ("DATABASE", "CATALOG"):
            return Preamble("use_database", _name(statement.this), statement)
        if kind in ("", "SCHEMA", "NAMESPACE"):
            return Preamble("use", _name(statement.this), statement)
        return Preamble("session", "", statement)  # USE ROLE r, USE WAREHOUSE w: no names
    return None


def _temporary(create: exp.Create) -> bool:
    properties = create.args.get("properties")
    return isinstance(properties, exp.Properties) and any(
        isinstance(p, exp.TemporaryProperty) for p in properties.expressions
    )


def _hash_temp(table: exp.Expr | None) -> bool:
    return isinstance(table, exp.Table) and bool(table.this.args.get("temporary"))


def _name(node: exp.Expr | None) -> str:
    if isinstance(node, exp.Table):
        return table_name(node)
    if isinstance(node, exp.Expr):
        return node.name.lower()
    return ""


def _kind(statement: exp.Expr) -> str:
    return statement.key.upper()


def _describe(statement: exp.Expr) -> str:
    """What a write names as its target, for the message about two writes."""
    target: exp.Expr | None = None
    if isinstance(statement, (exp.Create, exp.Insert, exp.Merge)):
        target = statement.this
        if isinstance(target, exp.Schema):
            target = target.this
    elif isinstance(statement, exp.Select) and isinstance(statement.args.get("into"), exp.Into):
        target = statement.args["into"].this
    if isinstance(target, exp.Table):
        return f"{_kind(statement)} {table_name(target)}"
    if isinstance(statement, exp.Query):
        return "a bare SELECT"
    return _kind(statement)


def inline_temporary(script: Script) -> exp.Expr:
    """A copy of the main statement reading what the temporary relations read: each reference
    becomes ``(WITH <temporaries> SELECT * FROM name) AS name``; declared variables become
    constants."""
    relations = script.relations
    variables = script.variables
    if not relations and not variables:
        return script.main  # nothing to inline: no copy (a parse tree is large)
    main = script.main.copy()
    ctes = [
        exp.CTE(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier(name)))
        for name, query in relations.items()
    ]
    for table in list(main.find_all(exp.Table)):
        name = table_name(table)
        if name not in relations or table is main.this or _is_write_target(table, main):
            continue
        rows = exp.select("*").from_(name)
        rows.set("with_", exp.With(expressions=[c.copy() for c in ctes]))
        alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
        table.replace(exp.Subquery(this=rows, alias=alias))
    for column in list(main.find_all(exp.Column)):
        if not column.table and column.name in variables:
            column.replace(exp.Placeholder(this=column.name))
    return main


_SPARK_DIALECTS = frozenset({"spark", "spark2", "sparksql", "databricks", "hive"})


def spark_preamble(script: Script, dialect: str) -> list[exp.Expr]:
    """The preamble as Spark runs it before the write: temporary views (for views, temporary
    tables and cached tables), SQL functions, variables. Re-runnable in one session (OR REPLACE).
    Raises ``SqlError`` for what Spark cannot run, e.g. a JavaScript function.
    """
    declared = script.variables
    if any(p.expression.find(exp.Parameter) for p in script.preamble):
        raise SqlError("declares @variables, which Spark cannot run: use literals or a CTE")
    statements: list[exp.Expr] = []
    for part in script.preamble:
        if part.query is not None:
            statements.append(_temporary_view(part.name, part.query))
        elif part.kind == "function":
            statements.append(_spark_function(part))
        elif part.kind == "declare":
            declare = part.expression.copy()
            declare.set("replace", True)
            statements.append(declare)
        elif part.kind == "set":
            statements.extend(_spark_set(part.expression, declared, dialect))
        # USE is not run: the tables after it are qualified already (lineage/use_names.py).
    return statements


def _temporary_view(name: str, query: exp.Expr) -> exp.Expr:
    return exp.Create(
        this=exp.to_table(name),
        kind="VIEW",
        replace=True,
        expression=query.copy(),
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )


def _spark_function(part: Preamble) -> exp.Expr:
    create = part.expression.copy()
    create.set("replace", True)
    properties = create.args.get("properties")
    for prop in properties.expressions if isinstance(properties, exp.Properties) else []:
        language = prop.name.lower() if isinstance(prop, exp.LanguageProperty) else "sql"
        if language != "sql":
            raise SqlError(
                f"defines temporary function {part.name} in {language}, which Spark cannot run: "
                "write it as a SQL function (... AS (expression)) or inline the expression"
            )
    udf = create.this
    for parameter in udf.expressions if isinstance(udf, exp.UserDefinedFunction) else []:
        kind = parameter.args.get("kind")
        if not isinstance(kind, exp.DataType) or kind.this == exp.DType.VARIANT:
            raise SqlError(
                f"temporary function {part.name}: parameter {parameter.name} has no type Spark "
                "accepts (ANY TYPE): give it a type"
            )
    body = create.expression
    if isinstance(body, exp.Paren):
        create.set("expression", exp.Return(this=body.this.copy()))
    elif not isinstance(body, (exp.Return, exp.Literal)):
        raise SqlError(f"temporary function {part.name} has no SQL body Spark can run")
    return create


def _spark_set(statement: exp.Expr, declared: set[str], dialect: str) -> list[exp.Expr]:
    items = [i for i in statement.expressions if isinstance(i, exp.SetItem)]
    targets = [i.this.this if isinstance(i.this, exp.EQ) else None for i in items]
    if items and all(isinstance(t, exp.Column) and t.name in declared for t in targets):
        spark = statement.copy()
        for item in spark.expressions:
            item.set("kind", "VARIABLE")
        return [spark]
    if dialect.lower() in _SPARK_DIALECTS:
        return [statement.copy()]  # a Spark configuration, e.g. spark.sql.shuffle.partitions
    # Another warehouse's session setting (SET NOCOUNT ON, SET search_path): nothing for Spark.
    return []


def spark_sql(statement: exp.Expr) -> str:
    """Spark SQL of a statement; a feature Spark lacks is a ``SqlError``, not a silent change."""
    try:
        return statement.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as error:
        raise SqlError(f"uses what Spark SQL cannot express: {error}") from None


def _is_write_target(table: exp.Table, main: exp.Expr) -> bool:
    target = main.this
    return isinstance(target, exp.Schema) and target.this is table


__all__ = [
    "Preamble",
    "Script",
    "inline_temporary",
    "spark_preamble",
    "spark_sql",
    "split_script",
]
