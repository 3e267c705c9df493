"""The value of a column lineage: where one output value comes from (``Origin``), an output
column (``OutputColumn``), and what an expression does to the values it reads."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import exp

# How an output value relates to its sources, weakest first; composing two steps keeps the
# strongest, so a hash applied anywhere upstream marks the column as masked.
# "star" is an unexpanded ``*`` over a table of unknown schema: ``s.* -> t.*``.
TRANSFORMS = ("constant", "direct", "star", "expression", "aggregate", "masked")
_RANK = {name: rank for rank, name in enumerate(TRANSFORMS)}
_MASKING = (exp.SHA, exp.SHA2, exp.MD5, exp.MD5Digest)
_MASKING_NAMES = frozenset({"mask", "hash", "xxhash64", "crc32", "sha1", "sha256", "md5"})


@dataclass(frozen=True)
class Origin:
    """Where one value comes from."""

    sources: frozenset[str] = frozenset()  # "table.column"
    transform: str = "constant"
    type: str | None = None
    unresolved: str | None = None  # reason, when some part cannot be traced

    def merge(self, other: Origin) -> Origin:
        transform = max(self.transform, other.transform, key=_RANK.__getitem__)
        return Origin(
            self.sources | other.sources,
            transform,
            self.type if self.type == other.type else None,
            self.unresolved or other.unresolved,
        )

    def computed(self) -> Origin:
        """This origin as the value of an expression over it: no longer a copy, type unknown."""
        transform = max(self.transform, "expression", key=_RANK.__getitem__)
        return Origin(self.sources, transform, None, self.unresolved)


def merged(origins: Iterable[Origin]) -> Origin:
    """One value that comes from any of ``origins``."""
    return functools.reduce(Origin.merge, origins, Origin())


@dataclass(frozen=True)
class OutputColumn:
    name: str  # "*" for a star that could not be expanded
    origin: Origin
    star_table: str | None = None  # for "*": the one unknown table it reads, if just one


def is_query(node: exp.Expr) -> bool:
    return isinstance(node, (exp.Subquery, exp.Query))


def stronger(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


def own_transform(expression: exp.Expr) -> str:
    if isinstance(expression, exp.Column):
        return "direct"
    transform = "expression"
    for node in expression.walk(prune=lambda n: is_query(n)):
        if isinstance(node, _MASKING) or (
            isinstance(node, exp.Anonymous) and str(node.this).lower() in _MASKING_NAMES
        ):
            return "masked"
        if isinstance(node, exp.AggFunc):
            transform = "aggregate"
    return transform


def cast_type(expression: exp.Expr) -> str | None:
    if isinstance(expression, exp.Cast):
        return expression.to.sql("spark").lower()
    if isinstance(expression, exp.Count):
        return "bigint"
    return None
