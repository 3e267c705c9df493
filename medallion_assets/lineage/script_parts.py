"""A scanned file as the parts lineage traces: a script's writes one by one.

Outside a project a file may be a whole script: several writes, statements that move no data
(DROP, TRUNCATE, DELETE, ALTER, GRANT, transactions, ``CREATE TABLE t (a INT, ...)``), a stored
procedure or a BigQuery script with ``BEGIN ... END``, ``IF ... THEN``, loops. Each write
becomes a part of its own (``load.sql#3``: the file's third statement) after the temporary
objects, variables and ``USE`` before it; procedure parameters are variables; statements that
move no data are passed over, and the columns a ``CREATE TABLE`` declares name a later
``INSERT``'s columns by position. A file that is one write after its preamble is traced as
written; one that moves no data at all (comments, function definitions, DROP) adds nothing.
Dynamic SQL (``EXECUTE IMMEDIATE`` of a value built at run time) and a ``CALL`` are passed
over: the data they move is not in the file's text (a called procedure is traced where it is
defined); ``EXECUTE IMMEDIATE`` of a string literal is traced as the statement it holds.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from medallion_assets.lineage.analysis import FileError, SqlFile
from medallion_assets.lineage.no_data import NO_DATA_START, SESSION_WORDS, moves_no_data
from medallion_assets.lineage.normal_forms import (
    MULTITABLE_HINT,
    common_text,
    split_multitable,
    view_redefinition,
)
from medallion_assets.lineage.script import (
    SqlError,
    first_line,
    known_command,
    preamble_part,
    split_script,
    table_name,
)
from medallion_assets.lineage.semicolons import several_statements
from medallion_assets.lineage.statement import sqlglot_dialect
from medallion_assets.lineage.token_tables import words_lineage


@dataclass(frozen=True)
class ScriptParts:
    parts: list[SqlFile]  # what lineage traces: the file, or one part per write
    declared: dict[str, dict[str, str]]  # table -> column -> type, from CREATE TABLE t (a INT)
    errors: tuple[FileError, ...] = ()  # statements of a script that could not be read

    @property
    def moves_no_data(self) -> bool:
        """Nothing to trace: comments, functions, DROP ... (a declared table is a node)."""
        return not (self.parts or self.declared or self.errors)


# Files parsed as scripts even without a semicolon between statements: a CREATE without
# AS SELECT (a schema-only table, LIKE, CLONE), dynamic SQL, a DECLARE, a procedure, a block,
# a temporary object (a file of nothing else moves no data).
_SCRIPT_HINT = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?:create\b(?!.*\bas\s*(?:select|with|\())|execute\b|exec\b|"
    r"declare\b)|\bprocedure\b|\bbegin\b|\bcreate\s+(?:or\s+replace\s+)?(?:global\s+)?temp(?:orary)?\s",
    re.I | re.S,
)

# Statements starting lines: two or more make a script even without semicolons (T-SQL).
_LINE_STARTS = re.compile(
    r"^(?:insert|merge|update|delete|create|drop|truncate|alter)\b", re.I | re.M
)


def script_parts(sql_file: SqlFile) -> ScriptParts:
    """``sql_file`` as the parts lineage traces: the file itself when it is one write after a
    preamble (or cannot be parsed: the analysis says why), else one part per write, each with
    the preamble statements before it; and the tables its ``CREATE TABLE t (a INT, ...)``
    statements declare."""
    one = not several_statements(sql_file.text)
    lines = len(_LINE_STARTS.findall(sql_file.text))
    hint = _SCRIPT_HINT.search(sql_file.text) or NO_DATA_START.match(sql_file.text)
    hint = hint or MULTITABLE_HINT.search(sql_file.text)  # one statement, several writes
    if one and lines < 2 and not hint:
        return ScriptParts([sql_file], {})  # one statement
    dialect = sqlglot_dialect(sql_file.dialect)
    errors: tuple[FileError, ...] = ()
    unparsed: list[SqlFile] = []
    salvaged = False  # pieces of it were passed over: the file does not parse as written
    try:
        written = [
            s
            for s in sqlglot.parse(common_text(sql_file.text, dialect), read=dialect)
            if s is not None and not isinstance(s, exp.Semicolon)
        ]
    except (SqlglotError, ValueError):
        pieces = _salvage(sql_file, dialect)
        if pieces is None:
            return ScriptParts([sql_file], {})  # the analysis says why it does not parse
        (written, errors, unparsed), salvaged = pieces, True
    try:
        statements = flatten(written, dialect)
    except (SqlglotError, ValueError):
        return ScriptParts([sql_file], {})
    declared: dict[str, dict[str, str]] = {}
    passed = [s for s in statements if moves_no_data(s, declared, dialect)]
    as_written = len(statements) == len(written) and all(map(operator.is_, statements, written))
    if not passed and not errors and not unparsed and as_written and not salvaged:
        try:
            split_script(statements)
            return ScriptParts([sql_file], {})  # one write after its preamble, as written
        except SqlError:
            pass
    parts = _parts(sql_file, dialect, statements, passed, bool(declared or errors or unparsed))
    return ScriptParts(parts + unparsed, declared, errors)


# Where a statement that moves data can start, for a script sqlglot cannot read whole.
_STARTS = frozenset(
    {TokenType.INSERT, TokenType.MERGE, TokenType.UPDATE, TokenType.CREATE, TokenType.WITH}
) | {TokenType.SELECT}


def _salvage(
    sql_file: SqlFile, dialect: str
) -> tuple[list[exp.Expr], tuple[FileError, ...], list[SqlFile]] | None:
    """The statements of a script sqlglot cannot parse whole (a PL/SQL procedure, T-SQL
    control flow): each piece between semicolons parsed alone, or from the first place in it
    where a statement that moves data starts (``IF c THEN INSERT ...``). A piece that holds
    such a start and still does not parse is a part of its own when its words name its
    tables (the analysis reads them, ``token_tables``), else an error of the script's
    statement; a piece without one (control flow, assignments) moves no data. None when
    nothing can be read."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql_file.text)
    except (SqlglotError, ValueError):
        return None
    pieces: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            pieces.append([])
        else:
            pieces[-1].append(token)
    statements: list[exp.Expr] = []
    errors: list[FileError] = []
    unparsed: list[SqlFile] = []
    for position, piece in enumerate((p for p in pieces if p), start=1):
        read, failure = _read_piece(sql_file.text, piece, dialect)
        statements.extend(read)
        if failure is None:
            continue
        label, text = f"{sql_file.label}#{position}", _text(sql_file.text, piece)
        if words_lineage(text, dialect, sql_file.default_target) is not None:
            unparsed.append(SqlFile(label, text, sql_file.dialect, sql_file.default_target))
        else:
            message = f"does not parse as {sql_file.dialect} SQL: {first_line(failure)}"
            errors.append(FileError(label, message))
    session = all(p[0].text.upper() in SESSION_WORDS for p in pieces if p)  # RESET a.b; DESC ...
    return (statements, tuple(errors), unparsed) if statements or session else None


def _text(text: str, piece: list[Token]) -> str:
    return text[piece[0].start : piece[-1].end + 1]


def _read_piece(
    text: str, piece: list[Token], dialect: str
) -> tuple[list[exp.Expr], SqlglotError | None]:
    """The statements of one piece between semicolons: from its first token the longest run
    that parses (to the piece's end, else to a later statement start: T-SQL writes statements
    without semicolons), then on from there. A run that parses in no way is passed up to the
    next start; the error is kept when that run began a statement that moves data."""
    depth, starts = 0, []
    for index, token in enumerate(piece):
        depth += token.token_type == TokenType.L_PAREN
        depth -= token.token_type == TokenType.R_PAREN
        after_paren = index > 0 and piece[index - 1].token_type == TokenType.R_PAREN
        if depth == 0 and token.token_type in _STARTS and not after_paren:
            starts.append(index)  # ``WITH c AS (...) SELECT``: the SELECT is no start
    starts = starts[:12]
    read: list[exp.Expr] = []
    failure: SqlglotError | None = None
    i = 0
    while i < len(piece):
        later = [s for s in starts if s > i]
        last: SqlglotError | None = None
        for end in [len(piece), *reversed(later)][:6]:
            if end < len(piece) and piece[end - 1].token_type == TokenType.ALIAS:
                continue  # ``CREATE VIEW v AS`` cut from its query: not a statement
            try:
                run = _text(text, piece[i:end])
                read.extend(s for s in sqlglot.parse(run, read=dialect) if s is not None)
            except SqlglotError as error:
                last = error
                continue
            i = end
            break
        else:
            body = _body_start(piece, i)
            if body is not None:  # a routine's signature sqlglot cannot read: its body
                i = body
                continue
            if piece[i].token_type in _STARTS:
                failure = last
            i = later[0] if later else len(piece)
    return read, failure


def _body_start(piece: list[Token], i: int) -> int | None:
    """Where the body of ``CREATE ... PROCEDURE|FUNCTION ... BEGIN`` at ``i`` starts."""
    head = [token.text.upper() for token in piece[i : i + 6]]
    if not head or head[0] != "CREATE" or not {"PROCEDURE", "FUNCTION"} & set(head):
        return None
    words = (token.text.upper() for token in piece[i:])
    begin = next((n for n, word in enumerate(words, start=i) if word == "BEGIN"), None)
    return None if begin is None else begin + 1


# The heads of control flow whose statement follows a condition and THEN, DO or LOOP.
_CONDITIONAL = frozenset({"IF", "ELSEIF", "ELSIF", "WHILE", "FOR", "EXCEPTION", "WHEN"})
# The heads followed directly by a statement.
_OPENING = frozenset({"BEGIN", "ELSE", "LOOP", "REPEAT"})
# The heads that end a block or leave it: no data moves.
_CLOSING = frozenset(
    {"END", "LEAVE", "BREAK", "CONTINUE", "ITERATE", "RETURN", "UNTIL", "EXIT", "RAISE", "GO"}
)


_BRANCHES = (exp.IfBlock, exp.WhileBlock, exp.LoopBlock, exp.RepeatBlock, exp.ForIn)


def flatten(statements: list[exp.Expr], dialect: str) -> list[exp.Expr]:
    """The statements of a script with the control flow taken away: a procedure's body (its
    parameters declared as variables), the statements of blocks, branches and loops, in the
    order written. Every branch counts: lineage is what the script can do."""
    flat: list[exp.Expr] = []
    for statement in statements:
        flat.extend(_body(statement, dialect))
    return flat


def _body(statement: exp.Expr, dialect: str) -> list[exp.Expr]:
    if isinstance(statement, exp.EndStatement):
        return []
    if isinstance(statement, (exp.Condition, exp.Alias)):
        # A lone keyword read as a column (LEAVE, THROW) or an assignment read as a
        # comparison (T-SQL `SET @x = 0` inside IF): no statement moves data this way.
        return []
    if isinstance(statement, exp.Block):
        return flatten(list(statement.expressions), dialect)
    if isinstance(statement, exp.MultitableInserts):
        return split_multitable(statement)  # one INSERT per target
    if isinstance(statement, exp.Alter):
        return [view_redefinition(statement)]  # ALTER VIEW v AS SELECT: a new definition
    if isinstance(statement, _BRANCHES):  # every branch and loop body, in order
        parts = [statement.args.get(arg) for arg in ("true", "false", "body", "expression")]
        return flatten([p for p in parts if isinstance(p, exp.Expr)], dialect)
    if isinstance(statement, exp.Create) and str(statement.args.get("kind")).upper() == (
        "PROCEDURE"
    ):
        body = statement.expression
        return [*_parameters(statement), *(_body(body, dialect) if body is not None else [])]
    if isinstance(statement, exp.Command):
        if _routine_head(statement, dialect):
            return []  # a procedure's signature read apart from its body (``_salvage``)
        known = known_command(statement, dialect)
        if known is not None:
            return flatten(known, dialect)
        rest = _control_rest(statement.name.upper(), statement.text("expression"), dialect)
        if rest is None:
            return [statement]  # not control flow: the analysis names it as unsupported
        if not rest.strip():
            return []
        try:
            parsed = sqlglot.parse(rest, read=dialect)
        except SqlglotError:
            return [statement]  # the analysis names it as unsupported
        return flatten([s for s in parsed if s is not None], dialect)
    return [statement]


_ROUTINE = re.compile(r"^\s*(?:or\s+replace\s+)?(?:procedure|function|package|trigger)\b", re.I)


def _routine_head(command: exp.Command, dialect: str) -> bool:
    """``CREATE PROCEDURE p(a NUMBER) AS DECLARE v NUMBER := 0``, kept unparsed by sqlglot,
    with no statement in it that moves data."""
    text = command.text("expression")
    if command.name.upper() != "CREATE" or not _ROUTINE.match(text):
        return False
    tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(text)
    return not any(token.token_type in _STARTS for token in tokens)


def _parameters(procedure: exp.Create) -> list[exp.Expr]:
    """``DECLARE`` of the procedure's parameters: inside its body they are variables."""
    signature = procedure.this
    items = [
        exp.DeclareItem(this=[column.this.copy()], kind=column.args.get("kind"))
        for column in signature.expressions
        if isinstance(column, exp.ColumnDef)
    ]
    return [exp.Declare(expressions=items)] if items else []


def _control_rest(head: str, rest: str, dialect: str) -> str | None:
    """The statement inside a control-flow command (``IF c THEN <it>``), "" for one that only
    closes a block, None when ``head`` is not control flow."""
    if head in _OPENING:  # T-SQL's BEGIN TRY / BEGIN CATCH open a block too
        return re.sub(r"^\s*(?:TRY|CATCH)\b", "", rest, flags=re.I) if head == "BEGIN" else rest
    if head in _CLOSING:
        return ""
    if head not in _CONDITIONAL:
        return None
    depth = 0
    for token in sqlglot.Dialect.get_or_raise(dialect).tokenize(rest):
        if token.token_type in (TokenType.L_PAREN, TokenType.CASE):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.END):
            depth -= 1
        elif depth == 0 and token.text.upper() in ("THEN", "DO", "LOOP"):
            return rest[token.end + 1 :]
    return ""  # a condition alone (EXCEPTION WHEN ... without a statement)


def _parts(
    sql_file: SqlFile,
    dialect: str,
    statements: list[exp.Expr],
    passed: list[exp.Expr],
    declares: bool,
) -> list[SqlFile]:
    skipped = {id(s) for s in passed}
    queries = [s for s in statements if _bare_query(s)]
    preamble: list[tuple[str, str, frozenset[str]]] = []  # (relation or "", text, its reads)
    parts: list[tuple[int, str, str | None]] = []
    for position, statement in enumerate(statements, start=1):
        if id(statement) in skipped:
            continue
        text = statement.sql(dialect=dialect)
        part = preamble_part(statement)
        if part is not None:
            relation = part.name if part.query is not None else ""
            preamble.append((relation, text, _reads(part.query or statement)))
            continue
        target = sql_file.default_target
        if _bare_query(statement) and len(queries) > 1 and target:
            target = f"{target}_{queries.index(statement) + 1}"
        parts.append((position, ";\n".join([*_needed(preamble, statement), text]), target))
    if not parts:  # declarations (nodes), functions, DROP ...: nothing to trace
        return []
    if len(parts) == 1:
        return [SqlFile(sql_file.label, parts[0][1], sql_file.dialect, parts[0][2])]
    return [
        SqlFile(f"{sql_file.label}#{position}", text, sql_file.dialect, target)
        for position, text, target in parts
    ]


def _reads(statement: exp.Expr) -> frozenset[str]:
    return frozenset(table_name(t) for t in statement.find_all(exp.Table))


def _needed(preamble: list[tuple[str, str, frozenset[str]]], write: exp.Expr) -> list[str]:
    """The preamble a write needs: every statement but the temporary relations it does not
    read, directly or through another (a script's parts stay linear in its length); of a
    relation defined twice, the last definition before the write."""
    wanted, kept = _reads(write), []
    for relation, text, reads in reversed(preamble):
        if relation:
            if relation not in wanted:
                continue
            wanted = (wanted - {relation}) | reads
        kept.append(text)
    return kept[::-1]


def _bare_query(statement: exp.Expr) -> bool:
    return isinstance(statement, exp.Query) and not isinstance(statement.args.get("into"), exp.Into)
