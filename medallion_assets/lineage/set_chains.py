"""A long chain of one set operation (``a UNION ALL b UNION ALL c ...``) as a balanced tree.

sqlglot parses ``a UNION ALL b UNION ALL c`` left-deep: a chain of 400 branches is a tree 400
levels deep, which the nesting limit (``statement.MAX_NESTING``) refuses and the scope builder
and generator would recurse through. One operation (the same kind, ALL or DISTINCT, BY NAME or
not) is associative, so the chain is rebuilt as a balanced tree of the same branches in the same
order: its columns are still named by the first branch, its ORDER BY and LIMIT stay on the
top, and it is as deep as the logarithm of its length. Mixed operations are left as written.

>>> import sqlglot
>>> chain = sqlglot.parse_one(" UNION ALL ".join(f"SELECT {i} AS n" for i in range(8)))
>>> depth(chain), depth(balance_set_chains(chain))
(8, 4)
"""

from __future__ import annotations

from sqlglot import exp

_OWN = ("this", "expression")
_TOP = ("order", "limit", "offset", "with_")  # what a chain's top node carries for the whole


def balance_set_chains(expression: exp.Expr) -> exp.Expr:
    """``expression`` with every chain of one set operation balanced (in place; the new root
    when the root itself is such a chain)."""
    tops = [
        node
        for node in expression.walk(bfs=False)
        if isinstance(node, exp.SetOperation) and not _continues(node)
    ]
    root = expression
    for top in tops:
        leaves = _leaves(top)
        if len(leaves) < 4:
            continue
        balanced = _build(top, leaves)
        for key in _TOP:
            if top.args.get(key) is not None:
                balanced.set(key, top.args[key])
        if top is root:
            root = balanced
        else:
            top.replace(balanced)
    return root


def depth(expression: exp.Expr) -> int:
    """The parse tree's depth in set operations (walked without recursion)."""
    deepest, stack = 0, [(expression, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, exp.SetOperation):
            stack.extend((child, level + 1) for child in (node.this, node.expression))
    return deepest


def _same(a: exp.SetOperation, b: exp.Expr) -> bool:
    """Whether ``b`` is the same operation as ``a``, with nothing of its own (ORDER BY, ...)."""
    if type(b) is not type(a):
        return False
    assert isinstance(b, exp.SetOperation)
    if any(b.args.get(key) is not None for key in _TOP):
        return False
    keys = (set(a.args) | set(b.args)) - set(_OWN) - set(_TOP)
    return all(a.args.get(k) == b.args.get(k) for k in keys)


def _continues(node: exp.SetOperation) -> bool:
    """Whether ``node`` is the left operand of the same operation (a link, not a chain's top)."""
    parent = node.parent
    return isinstance(parent, exp.SetOperation) and parent.this is node and _same(parent, node)


def _leaves(top: exp.SetOperation) -> list[exp.Expr]:
    """The chain's branches, first to last."""
    rights: list[exp.Expr] = []
    node: exp.Expr = top
    while isinstance(node, exp.SetOperation) and (node is top or _same(top, node)):
        rights.append(node.expression)
        node = node.this
    return [node, *reversed(rights)]


def _build(top: exp.SetOperation, leaves: list[exp.Expr]) -> exp.Expr:
    if len(leaves) == 1:
        return leaves[0]
    middle = len(leaves) // 2
    kept = {k: v for k, v in top.args.items() if k not in (*_OWN, *_TOP)}
    copied = {k: v.copy() if isinstance(v, exp.Expr) else v for k, v in kept.items()}
    operation = type(top)(**copied)
    operation.set("this", _build(top, leaves[:middle]))
    operation.set("expression", _build(top, leaves[middle:]))
    return operation
