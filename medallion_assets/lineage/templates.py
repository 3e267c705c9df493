"""A dbt model (SQL under Jinja) as the SQL the lineage reads, for ``lineage scan``.

dbt compiles a model before the warehouse runs it; the scan reads the tables the template names
without running Jinja:

- ``{{ ref('orders') }}`` (``ref('package', 'orders')``, ``ref('orders', v=2)``) is the model
  ``orders``, the table another file of the folder writes (its file stem);
  ``{{ source('stripe', 'payments') }}`` is ``stripe.payments``; ``{{ this }}`` is the model
  itself (an incremental model reads its own rows); of ``{{ a if c else b }}``, ``a``;
- ``{{ config(...) }}``, ``{% macro %}``, ``{% test %}``, ``{% docs %}`` blocks and ``{# #}``
  write nothing; ``{% set x = 'literal' %}`` makes ``{{ x }}`` that literal;
- of ``{% if %}...{% elif %}...{% else %}...{% endif %}`` the first branch counts (dbt's
  ``is_incremental()`` filter), but for a loop's separator (``{% if not loop.last %}``); a
  ``{% for %}`` body counts once;
- any other ``{{ ... }}`` stands for what its place in the SQL holds: a query where the model's
  query or a FROM's table stands (reading the ``ref``/``source`` tables among its arguments:
  ``{{ dbt_utils.union_relations([ref('a'), ref('b')]) }}``), nothing after a complete
  expression (a clause such as ``{{ dbt_utils.group_by(2) }}``), a piece of a name inside one
  (``{{ method }}_amount``), else a value reading the columns its string arguments name
  (``{{ cents_to_dollars('subtotal') }}`` reads ``subtotal``; ``{{ var('x') }}`` none).

A file without ``{{``, ``{%`` or ``{#`` is returned as it is.
"""

from __future__ import annotations

import re

from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.normal_forms import DATE_UNITS

_CLOSE = {"{{": "}}", "{%": "%}", "{#": "#}"}
_STRING = re.compile(r"""['"]([^'"]*)['"]""")
_KEYWORD = re.compile(r"""(\w+)\s*=\s*['"]([^'"]*)['"]""")  # name='literal' of a call
_CALL = re.compile(r"(?:\w+\.)*(\w+)\s*\((.*)\)\s*$", re.S)
_TABLES = re.compile(r"\b(ref|source)\s*\(([^()]*)\)")
_OPENS = {
    "if": "endif", "for": "endfor", "macro": "endmacro", "call": "endcall", "test": "endtest",
    "docs": "enddocs", "materialization": "endmaterialization", "snapshot": "endsnapshot",
}  # fmt: skip
_SILENT = frozenset({"macro", "call", "test", "docs", "materialization"})
_COLUMN = re.compile(r"^[A-Za-z_]\w*$")
_OPERAND_END = re.compile(r"(?:[\w)\]'\"`*]|\bnull)$", re.I)
_VALUE_WORDS = frozenset(
    {"select", "and", "or", "not", "when", "then", "else", "by", "on", "in", "is", "case",
     "distinct", "where", "having", "return", "like", "between", "set", "values", "as"}
)  # fmt: skip


def render_template(sql_file: SqlFile) -> SqlFile:
    """``sql_file`` with its Jinja replaced by the SQL the lineage reads (module docstring).

    >>> f = SqlFile("m.sql", "select * from {{ ref('stg') }} join {{ source('s', 't') }} "
    ...     "{% if is_incremental() %}where x > (select max(x) from {{ this }}){% else %}"
    ...     "where true{% endif %}", "bigquery", "m")
    >>> " ".join(render_template(f).text.split())
    'select * from stg join s.t where x > (select max(x) from m )'
    """
    text = sql_file.text
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return sql_file
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (closing word, whether its body is written)
    names: dict[str, str] = {}  # {% set x = 'literal' %}
    writing, at = True, 0
    for start, end, kind, body in _tags(text):
        if writing:
            out.append(text[at:start])
        at = end
        if kind == "{%":
            writing = _statement(body, stack, writing, names)
        elif kind == "{{" and writing:
            place = Place(_last(out, 300), text[end : end + 200])
            out.append(
                _expression(_first_branch(body), sql_file.default_target or "", place, names)
            )
    if writing:
        out.append(text[at:])
    rendered = re.sub(r"[ \t]+\n", "\n", "".join(out)).strip()
    return SqlFile(sql_file.label, rendered, sql_file.dialect, sql_file.default_target)


def _last(pieces: list[str], size: int) -> str:
    """The last ``size`` characters written."""
    kept: list[str] = []
    for piece in reversed(pieces):
        kept.append(piece)
        size -= len(piece)
        if size <= 0:
            break
    return "".join(reversed(kept))


def _tags(text: str) -> list[tuple[int, int, str, str]]:
    """``(start, end, opening, body)`` of each Jinja tag; quotes inside a tag are skipped, so
    ``{{ config(post_hook="grant ... {{ this }}") }}`` is one tag."""
    tags: list[tuple[int, int, str, str]] = []
    at = 0
    while True:
        found = [(text.find(o, at), o) for o in _CLOSE]
        found = [(i, o) for i, o in found if i >= 0]
        if not found:
            return tags
        start, opening = min(found)
        i, quote = start + 2, ""
        while i < len(text):
            char = text[i]
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"" and opening != "{#":
                quote = char
            elif text.startswith(_CLOSE[opening], i):
                break
            i += 1
        end = min(i + 2, len(text))
        body = text[start + 2 : i].strip("-").strip()
        tags.append((start, end, opening, body))
        at = end


def _statement(
    tag: str, stack: list[tuple[str, bool]], writing: bool, names: dict[str, str]
) -> bool:
    """Whether the text after ``{% tag %}`` is written."""
    assigned = re.match(r"(?:set\s+(\w+)\s*=|for\s+(\w+)\s+in\s*\[)\s*['\"]([^'\"]*)['\"]", tag)
    if assigned:  # {% set x = 'e' %}, {% for x in ['a', 'b'] %}: x is the (first) literal
        names[assigned.group(1) or assigned.group(2)] = assigned.group(3)
    word = (tag.split(None, 1) or [""])[0].lower()
    block_set = word == "set" and "=" not in tag  # {% set x %}...{% endset %}
    if word in _OPENS or block_set:
        separator = word == "if" and "loop." in tag  # {% if not loop.last %}union all
        stack.append((_OPENS.get(word, "endset"), writing))
        return writing and word not in _SILENT and not block_set and not separator
    if word in ("elif", "else") and stack and stack[-1][0] in ("endif", "endfor"):
        return False  # the first branch counts
    if stack and word == stack[-1][0]:
        return stack.pop()[1]
    return writing  # {% set x = ... %}, {% do ... %}, an unknown tag: nothing written


def _first_branch(expression: str) -> str:
    """``a if c else b`` as ``a`` (a Jinja conditional outside any quotes or brackets)."""
    depth, quote = 0, ""
    for i, char in enumerate(expression):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and expression.startswith(" if ", i):
            return expression[:i].strip()
    return expression


class Place:
    """Where a ``{{ ... }}`` stands: the SQL written before it and the text after it."""

    def __init__(self, before: str, after: str):
        self.tail = re.sub(r"--[^\n]*$|/\*.*?\*/", "", before, flags=re.S | re.M).rstrip()
        self.after = after
        self.in_name = bool(re.search(r"\w\Z", before)) or bool(re.match(r"[\w.]", after))
        self.table = bool(re.search(r"\b(?:from|join)$", self.tail, re.I))
        query_opening = re.search(r"(?:\bas\s*\(|\(\s*\()$", self.tail, re.I) is not None
        self.query = not self.tail or query_opening or self.tail.endswith(";")
        follows = re.match(r"(?:\s|--[^\n]*\n|\{%.*?%\})*(?:select|with)\b", after, re.I | re.S)
        self.statement = self.query and follows is not None  # a macro run before the query
        word = re.search(r"(\w+)$", self.tail)
        self.clause = bool(_OPERAND_END.search(self.tail)) and not (
            word and word.group(1).lower() in _VALUE_WORDS
        )


def _expression(expression: str, this: str, place: Place, names: dict[str, str]) -> str:
    """The SQL that ``{{ expression }}`` stands for at ``place``."""
    literal = re.fullmatch(r"""\s*['"]([^'"]*)['"]\s*""", expression)
    if literal:
        return literal.group(1)
    call = _CALL.match(expression)
    name = call.group(1).lower() if call else expression.strip()
    if name == "this":
        return f" {this} "
    tables = _tables(expression, names)
    if call is not None and name in ("ref", "source") and tables:
        return f" {tables[0]} "
    if name == "config":
        return ""
    if call is None and name in names:
        return names[name]
    words = _STRING.findall(_top_level(call.group(2))) if call is not None else []
    return stand_in(name, call is not None, tables, words, place)


def stand_in(name: str, called: bool, tables: list[str], words: list[str], place: Place) -> str:
    """What a macro or variable ``name`` Jinja cannot expand stands for at ``place`` (module
    docstring): ``tables`` are those its arguments name, ``words`` its positional strings."""
    if place.in_name and (not place.table or place.after.startswith(".")):
        return re.sub(r"\W", "_", (re.findall(r"\w+", name) or ["x"])[0])  # {{ p }}_amount
    rows = " UNION ALL ".join(f"SELECT * FROM {t}" for t in tables) or "SELECT NULL"
    if place.table:
        return f"({rows})"
    if place.query:
        return "" if place.statement else rows
    if place.clause:
        return ""
    if not called or name in ("var", "env_var"):
        return "NULL"
    columns = [c for c in words if _COLUMN.match(c) and c.lower() not in DATE_UNITS]
    return f"COALESCE({', '.join(columns)})" if columns else "NULL"


def _tables(expression: str, names: dict[str, str]) -> list[str]:
    """The tables the ``ref(...)`` and ``source(...)`` calls in ``expression`` name (a
    variable argument by the literal it holds, ``names``)."""
    found: list[str] = []
    for function, arguments in _TABLES.findall(expression):
        keywords = dict(_KEYWORD.findall(arguments))
        positional = _STRING.findall(_KEYWORD.sub("", arguments))
        if not positional and not keywords:  # ref(r) inside {% for r in ['a', 'b'] %}
            positional = [names[w] for w in re.findall(r"\w+", arguments) if w in names]
        if function == "ref":
            model = keywords.get("model_name") or (positional[-1] if positional else "")
            found += [model] if model else []
        else:
            named = [keywords.get("source_name", ""), keywords.get("table_name", "")]
            pair = [p for p in named if p] or positional[:2]
            found += [".".join(pair)] if len(pair) == 2 else []
    return found


def _top_level(arguments: str) -> str:
    """A call's arguments without its keyword arguments and the calls inside them: what is
    left names the columns a macro such as ``cents_to_dollars('subtotal')`` reads."""
    previous = None
    while previous != arguments:
        previous, arguments = arguments, re.sub(r"\w+\s*\([^()]*\)", "", arguments)
    return re.sub(r"\w+\s*=\s*(?:\[[^\]]*\]|['\"][^'\"]*['\"]|[^,)]+)", "", arguments)
