"""A dbt model (SQL under Jinja) as the SQL lineage reads, for ``lineage scan``.

dbt compiles a model before the warehouse runs it; the scan reads the tables the template names
without running Jinja:

- ``{{ ref('orders') }}`` (``ref('package', 'orders')``, ``ref('orders', v=2)``) is the model
  ``orders``, the table another file of the folder writes (its file stem);
- ``{{ source('stripe', 'payments') }}`` is ``stripe.payments``;
- ``{{ this }}`` is the model itself (an incremental model reads its own rows);
- ``{{ config(...) }}``, ``{% set %}``, ``{% macro %}...{% endmacro %}``, ``{# ... #}`` write
  nothing; any other macro call is a query where a query stands (``WITH d AS ({{ spine() }})``,
  read as ``(SELECT NULL)``), else a value of the columns its string arguments name
  (``{{ cents_to_dollars('subtotal') }}`` reads ``subtotal``); ``{{ var('x') }}`` and any
  other ``{{ name }}`` are values, ``NULL``;
- of ``{% if %}...{% elif %}...{% else %}...{% endif %}`` the first branch counts (dbt's
  ``is_incremental()`` filter); a ``{% for %}`` body counts once.

A file without ``{{`` or ``{%`` is returned as it is.
"""

from __future__ import annotations

import re

from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.normal_forms import DATE_UNITS

_TAG = re.compile(r"\{#.*?#\}|\{%-?(.*?)-?%\}|\{\{-?(.*?)-?\}\}", re.S)
_STRING = re.compile(r"""['"]([^'"]*)['"]""")
_OPENS = {"if": "endif", "for": "endfor", "macro": "endmacro", "call": "endcall"}
_SILENT = frozenset({"macro", "call", "set"})  # blocks whose body is no SQL of the model


def render_template(sql_file: SqlFile) -> SqlFile:
    """``sql_file`` with its Jinja replaced by the SQL the lineage reads (module docstring).

    >>> f = SqlFile("m.sql", "select * from {{ ref('stg') }} join {{ source('s', 't') }} "
    ...     "{% if is_incremental() %}where x > (select max(x) from {{ this }}){% else %}"
    ...     "where true{% endif %}", "bigquery", "m")
    >>> render_template(f).text
    'select * from stg join s.t where x > (select max(x) from m)'
    """
    text = sql_file.text
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return sql_file
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (closing word, whether its body is written)
    writing, at = True, 0
    for match in _TAG.finditer(text):
        if writing:
            out.append(text[at : match.start()])
        at = match.end()
        statement, expression = match.group(1), match.group(2)
        if statement is not None:
            writing = _statement(statement.strip(), stack, writing)
        elif expression is not None and writing:
            this = sql_file.default_target or ""
            out.append(_expression(expression.strip(), this, "".join(out[-3:])))
    if writing:
        out.append(text[at:])
    rendered = re.sub(r"[ \t]+\n", "\n", "".join(out)).strip()
    return SqlFile(sql_file.label, rendered, sql_file.dialect, sql_file.default_target)


def _statement(tag: str, stack: list[tuple[str, bool]], writing: bool) -> bool:
    """Whether the text after ``{% tag %}`` is written."""
    word = (tag.split(None, 1) or [""])[0].lower()
    block_set = word == "set" and "=" not in tag  # {% set x %}...{% endset %}
    if word in _OPENS or block_set:
        stack.append((_OPENS.get(word, "endset"), writing))
        return writing and word not in _SILENT and not block_set
    if word in ("elif", "else") and stack and stack[-1][0] in ("endif", "endfor"):
        return False  # the first branch counts
    if stack and word == stack[-1][0]:
        return stack.pop()[1]
    return writing  # {% set x = ... %}, {% do ... %}, an unknown tag: nothing written


def _expression(expression: str, this: str, before: str) -> str:
    """The SQL that ``{{ expression }}`` stands for, after the SQL ``before`` it."""
    call = re.match(r"(?:\w+\.)*(\w+)\s*\((.*)\)\s*$", expression, re.S)
    name = call.group(1).lower() if call else expression.lower()
    if name == "this":
        return this
    if call is None or name in ("var", "env_var"):
        return "NULL"
    arguments = call.group(2)
    named = _STRING.findall(re.sub(r"\w+\s*=\s*['\"][^'\"]*['\"]", "", arguments))
    if name == "ref" and named:
        return str(named[-1])
    if name == "source" and len(named) >= 2:
        return f"{named[0]}.{named[1]}"
    if name == "config":
        return ""
    tail = re.sub(r"--[^\n]*$|/\*.*?\*/", "", before, flags=re.S | re.M).rstrip()
    if tail.endswith("(") or re.search(r"\b(?:from|join)$", tail, re.I):
        return "(SELECT NULL)"  # a macro that writes a query: WITH d AS ({{ date_spine() }})
    words = _STRING.findall(_top_level(arguments))
    columns = [c for c in words if _COLUMN.match(c) and c.lower() not in DATE_UNITS]
    return f"COALESCE({', '.join(columns)})" if columns else "NULL"


_COLUMN = re.compile(r"^[A-Za-z_]\w*$")


def _top_level(arguments: str) -> str:
    """A call's arguments without its keyword arguments and the calls inside them: what is
    left names the columns a macro such as ``cents_to_dollars('subtotal')`` reads."""
    previous = None
    while previous != arguments:
        previous, arguments = arguments, re.sub(r"\w+\s*\([^()]*\)", "", arguments)
    return re.sub(r"\w+\s*=\s*(?:\[[^\]]*\]|['\"][^'\"]*['\"]|[^,)]+)", "", arguments)
