"""Damaged copies of real SQL, for the robustness test: truncated, a token removed, an alias
duplicated, parentheses unbalanced. Pure text edits, seeded, so every run builds the same set.

>>> import random
>>> sorted({remove_token("SELECT a FROM t", random.Random(seed)) for seed in range(20)})
['SELECT  FROM t', 'SELECT a  t', 'SELECT a FROM', 'a FROM t']
>>> duplicate_alias("SELECT a AS x, b AS y FROM t", random.Random(0))
'SELECT a AS y, b AS y FROM t'
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# Words, quoted names and strings, numbers and single punctuation marks: close enough to any
# dialect's tokens for "remove one of them" to make the edits a user's typo would.
_TOKEN = re.compile(r"""'(?:[^']|'')*'|"[^"]*"|`[^`]*`|\w+|[^\s\w]""")
_ALIAS = re.compile(r"\bAS\s+(\w+)", re.IGNORECASE)
_TABLE_ALIAS = re.compile(r"\b(?:FROM|JOIN)\s+[\w.]+\s+(?:AS\s+)?(\w+)", re.IGNORECASE)
# Words the table-alias pattern would take for an alias in "FROM t JOIN ...", "FROM t WHERE ...".
_KEYWORD = re.compile(
    r"on|where|join|left|right|inner|full|cross|group|order|having|limit|union|select|using|"
    r"natural|lateral|window|qualify",
    re.IGNORECASE,
)


def truncate(sql: str, rng: random.Random) -> str:
    """``sql`` cut at a random point (never empty, never whole)."""
    return sql[: rng.randrange(1, max(2, len(sql) - 1))]


def remove_token(sql: str, rng: random.Random) -> str:
    tokens = list(_TOKEN.finditer(sql))
    token = tokens[rng.randrange(len(tokens))]
    return (sql[: token.start()] + sql[token.end() :]).strip()


def duplicate_alias(sql: str, rng: random.Random) -> str:
    """One column alias or table alias renamed to another one of the statement."""
    for pattern in rng.sample([_ALIAS, _TABLE_ALIAS], 2):
        found = [m for m in pattern.finditer(sql) if not _KEYWORD.fullmatch(m.group(1))]
        names = sorted({m.group(1) for m in found})
        if len(names) >= 2:
            match = rng.choice(found)
            other = rng.choice([n for n in names if n != match.group(1)])
            return sql[: match.start(1)] + other + sql[match.end(1) :]
    return sql + " AS x, 1 AS x"  # no two aliases to collide: add a clashing pair


def unbalance_parentheses(sql: str, rng: random.Random) -> str:
    """One parenthesis removed, or an extra one opened."""
    positions = [i for i, ch in enumerate(sql) if ch in "()"]
    if positions and rng.random() < 0.7:
        at = rng.choice(positions)
        return sql[:at] + sql[at + 1 :]
    at = rng.randrange(len(sql) + 1)
    return sql[:at] + "(" + sql[at:]


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "truncated": truncate,
    "token_removed": remove_token,
    "alias_duplicated": duplicate_alias,
    "parentheses_unbalanced": unbalance_parentheses,
}
