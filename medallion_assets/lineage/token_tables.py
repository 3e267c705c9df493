"""Table lineage of a statement sqlglot cannot parse, read from its tokens.

A scanned file in a construct the parser does not know (a vendor's operator, a keyword used as
an alias, Athena's backticks) would otherwise give no lineage at all. Its tokens still say
which table it writes (``INSERT INTO t``, ``CREATE TABLE t``, ``MERGE INTO t``, ``UPDATE t``)
and which it reads (the names after ``FROM``, ``JOIN``, a ``MERGE``'s ``USING`` and the commas
of a ``FROM`` list), leaving out CTE names, subqueries and table functions. Its columns stay
untraced: the caller reports them as lost.

>>> words_lineage("SELECT 1 \\"as\\" FROM db.Tab1 t JOIN tab2 ON t.a = tab2.a", "spark", "q")
WordsLineage(kind='select', target='q', sources=('db.tab1', 'tab2'))
>>> words_lineage("UPDATE sr SET sr.n += 'x' FROM p.reason AS sr JOIN p.wo ON 1=1", "tsql", None)
WordsLineage(kind='update', target='p.reason', sources=('p.wo',))
>>> words_lineage("DELETE FROM t WHERE a = 1", "spark", "q") is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

T = TokenType

# Words that end a FROM list or cannot be a table's name or alias.
_STOP = frozenset(
    {
        T.SELECT, T.FROM, T.WHERE, T.JOIN, T.ON, T.USING, T.LATERAL, T.UNNEST, T.VALUES, T.WITH,
        T.ALIAS, T.SET, T.GROUP_BY, T.ORDER_BY, T.HAVING, T.LIMIT, T.UNION, T.INTERSECT,
        T.EXCEPT, T.INNER, T.LEFT, T.RIGHT, T.FULL, T.OUTER, T.CROSS, T.NATURAL, T.TABLE,
        T.NOT, T.EXISTS, T.INTO, T.OVERWRITE, T.PARTITION_BY, T.WHEN, T.QUALIFY, T.WINDOW,
        T.SEMICOLON, T.STRAIGHT_JOIN, T.APPLY, T.DISTRIBUTE_BY, T.CLUSTER_BY, T.SORT_BY,
        T.TABLE_SAMPLE, T.PIVOT, T.UNPIVOT, T.FETCH, T.OFFSET, T.CONNECT_BY, T.START_WITH,
        T.PREWHERE, T.LOCK, T.INSERT, T.UPDATE, T.MERGE, T.DELETE, T.CREATE, T.L_PAREN,
        T.R_PAREN, T.COMMA, T.DOT, T.STRING, T.NUMBER,
    }
)  # fmt: skip
# Clauses after which a comma no longer lists tables.
_END_OF_FROM = _STOP - {T.JOIN, T.ON, T.USING, T.ALIAS, T.INNER, T.LEFT, T.RIGHT, T.FULL,
                        T.OUTER, T.CROSS, T.NATURAL, T.STRAIGHT_JOIN, T.APPLY, T.L_PAREN,
                        T.R_PAREN, T.COMMA, T.DOT, T.STRING, T.NUMBER, T.NOT, T.EXISTS}  # fmt: skip


@dataclass(frozen=True)
class WordsLineage:
    kind: str  # as ``Statement.kind``: select | create_table | create_view | insert | ...
    target: str
    sources: tuple[str, ...]


def words_lineage(sql: str, dialect: str, default_target: str | None) -> WordsLineage | None:
    """The table a statement writes and those it reads, from its tokens; None when they do not
    name one write (a DELETE, two writes, no tokens), a FROM names no table it can read, or its
    parentheses do not pair."""
    try:
        tokens = [t for t in sqlglot.Dialect.get_or_raise(dialect).tokenize(sql) if not _tick(t)]
    except (SqlglotError, ValueError):
        return None
    if not _balanced(tokens):
        return None  # a typo, not a construct the parser lacks: the parse error says where
    reader = _Reader(tokens)
    reader.read()
    writes = {(kind, target) for kind, target in reader.writes}
    if len(writes) > 1 or reader.deletes or reader.unreadable:
        return None
    if writes:
        kind, target = writes.pop()
        if kind == "update":  # T-SQL: UPDATE alias SET ... FROM t AS alias
            target = reader.aliases.get(target, target)
            reader.reads = [t for t in reader.reads if t != target]
    elif reader.selects and default_target:
        kind, target = "select", default_target
    else:
        return None
    sources = sorted({t for t in reader.reads if t not in reader.ctes})
    return WordsLineage(kind, target, tuple(sources))


def _balanced(tokens: list[Token]) -> bool:
    depth = 0
    for token in tokens:
        depth += (token.token_type == T.L_PAREN) - (token.token_type == T.R_PAREN)
        if depth < 0:
            return False
    return depth == 0


def _tick(token: Token) -> bool:
    """A backtick the dialect does not quote with (Athena): the name inside is still a name."""
    return token.token_type == T.UNKNOWN and token.text == "`"


class _Reader:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.i = 0
        self.writes: list[tuple[str, str]] = []
        self.reads: list[str] = []
        self.ctes: set[str] = set()
        self.aliases: dict[str, str] = {}
        self.selects = False
        self.deletes = False
        self.unreadable = False  # a FROM or JOIN followed by no name the reader knows

    def read(self) -> None:
        # Per open parenthesis: whether FROM in it names tables (a subquery, a parenthesised
        # join), not a function's argument (EXTRACT(YEAR FROM d), TRIM(BOTH FROM s)); and
        # whether a comma there lists tables (inside a FROM clause).
        tables_here, from_list = [True], [False]
        while self.i < len(self.tokens):
            kind = self.tokens[self.i].token_type
            before = self.tokens[self.i - 1].token_type if self.i else None
            self.i += 1
            if kind == T.L_PAREN:
                query = self._peek() in (T.SELECT, T.WITH, T.L_PAREN, T.VALUES)
                tables_here.append(query or before in (T.FROM, T.JOIN))
                from_list.append(False)
                if before in (T.FROM, T.JOIN) and not query:  # FROM (a JOIN b ON ...)
                    self._source()
            elif kind == T.R_PAREN:
                if len(tables_here) > 1:
                    tables_here.pop()
                    from_list.pop()
            elif kind in (T.FROM, T.JOIN) and tables_here[-1]:
                from_list[-1] = kind == T.FROM or from_list[-1]
                self._source()
            elif kind == T.COMMA and from_list[-1]:
                self._source()
            elif kind == T.WITH or (kind == T.COMMA and self._cte_ahead()):
                self._cte()
            elif kind == T.SELECT:
                self.selects = True
                from_list[-1] = False
            elif kind in (T.INSERT, T.MERGE, T.UPDATE, T.CREATE, T.DELETE) and before != T.THEN:
                self._write(kind)  # after THEN: a MERGE's action, not a statement
            elif kind in _END_OF_FROM:
                from_list[-1] = False

    def _peek(self, offset: int = 0) -> TokenType | None:
        at = self.i + offset
        return self.tokens[at].token_type if at < len(self.tokens) else None

    def _skip(self, *kinds: TokenType) -> None:
        while self._peek() in kinds:
            self.i += 1

    def _name(self) -> str | None:
        """A dotted name at the cursor (consumed), else None."""
        parts: list[str] = []
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            nameable = token.token_type not in _STOP or (parts and token.token_type == T.TABLE)
            word = token.text[:1].isalpha() or token.text[:1] in "_@#$"
            if token.token_type != T.IDENTIFIER and not (nameable and word):
                break
            parts.append(token.text if "/" in token.text else token.text.lower())
            self.i += 1
            if self._peek() != T.DOT:
                break
            self.i += 1
        return ".".join(parts) if parts else None

    def _source(self) -> None:
        self._skip(T.ONLY)
        start = self.i
        name = self._name()
        if name is None:
            # a subquery, UNNEST(...), VALUES are no table; anything else (legacy SQL's
            # [project:dataset.table], a template's <table>) leaves the lineage incomplete
            self.unreadable |= self._peek() not in (T.L_PAREN, T.UNNEST, T.LATERAL, T.VALUES)
            return
        if self._peek() == T.L_PAREN:  # a table function: UNNEST(...), range(10), f(x)
            self.i = start + 1
            return
        self.reads.append(name)
        self._skip(T.ALIAS)
        if self._peek() not in _STOP and self._peek() is not None:
            alias = self._name()
            if alias is not None and "." not in alias:
                self.aliases[alias] = name

    def _cte_ahead(self) -> bool:
        """``, name [(columns)] AS (`` after a CTE: another CTE."""
        at = self.i
        if self._peek() in _STOP or self._peek() is None:
            return False
        at += 1
        if at < len(self.tokens) and self.tokens[at].token_type == T.L_PAREN:  # its columns
            depth, start = 0, at
            for at in range(start, len(self.tokens)):  # where it stops is used below
                depth += (self.tokens[at].token_type == T.L_PAREN) - (
                    self.tokens[at].token_type == T.R_PAREN
                )
                if depth == 0:
                    break
            at += 1
        return at + 1 < len(self.tokens) and (
            self.tokens[at].token_type == T.ALIAS and self.tokens[at + 1].token_type == T.L_PAREN
        )

    def _cte(self) -> None:
        self._skip(T.RECURSIVE)
        name = self._name()
        if name is not None:
            self.ctes.add(name)

    def _write(self, kind: TokenType) -> None:
        if kind == T.DELETE:
            self.deletes = True
            self._skip(T.FROM)
            self._name()
            return
        if kind == T.CREATE:
            created = self._created()
            if created is not None:
                self.writes.append(created)
            return
        self._skip(T.INTO, T.OVERWRITE, T.TABLE)
        name = self._name()
        if name is None:
            return
        label = {T.INSERT: "insert", T.MERGE: "merge", T.UPDATE: "update"}[kind]
        self.writes.append((label, name))
        if kind in (T.MERGE, T.UPDATE):  # its alias names the target in T-SQL's UPDATE ... FROM
            self._skip(T.ALIAS)
            if self._peek() not in _STOP and self._peek() is not None:
                self._name()
        if kind == T.MERGE:  # USING names the merged rows' table
            while self._peek() not in (T.USING, None):
                self.i += 1
            self.i += 1
            self._source()

    def _created(self) -> tuple[str, str] | None:
        """``CREATE [OR REPLACE] [TEMP] [MATERIALIZED] TABLE|VIEW [IF NOT EXISTS] name``."""
        for _ in range(6):
            kind = self._peek()
            if kind in (T.TABLE, T.VIEW):
                self.i += 1
                while self._peek() in (T.NOT, T.EXISTS) or (
                    self.i < len(self.tokens) and self.tokens[self.i].text.upper() == "IF"
                ):
                    self.i += 1
                name = self._name()
                label = "create_view" if kind == T.VIEW else "create_table"
                return (label, name) if name is not None else None
            if kind is None or kind in (T.FUNCTION, T.PROCEDURE, T.L_PAREN):
                return None
            self.i += 1
        return None
