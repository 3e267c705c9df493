"""Whether SQL text holds more than one statement, told without parsing it: a ``;`` outside
comments, string literals and quoted names, followed by more than comments, blanks and ``;``.

A file of one statement is parsed once, by the lineage analysis (and its cache); only a file
that may be a script (a preamble of temporary views or functions, several writes) is parsed to
be split. A ``;`` in a comment (``-- one row per customer; hashed email``) is not a statement
break: 8 of the demo's 25 files were parsed at every load for one.

>>> several_statements("-- one row per customer; hashed\\nSELECT 1")
False
>>> several_statements("SELECT 'a;b' AS x, `c;d` FROM t;  -- done; really\\n")
False
>>> several_statements("CREATE TEMPORARY VIEW v AS SELECT 1; SELECT * FROM v")
True
>>> several_statements("SELECT 1; /* trailing; */ ;")
False
"""

from __future__ import annotations

import re

# Left to right: comments, literals and quoted names (each to its end, or to the end of the
# text when unterminated), a ';', a run of anything else, or one lone character.
_TOKENS = re.compile(
    r"--[^\n]*"
    r"|/\*.*?(?:\*/|\Z)"
    r"|'(?:[^'\\]|\\.|'')*(?:'|\Z)"
    r"|\"(?:[^\"\\]|\\.|\"\")*(?:\"|\Z)"
    r"|`(?:[^`]|``)*(?:`|\Z)"
    r"|;"
    r"|[^-/'\"`;]+"
    r"|.",
    re.S,
)


def several_statements(text: str) -> bool:
    """True when a statement follows a ``;`` of ``text`` (see the module)."""
    after_semicolon = False
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == ";":
            after_semicolon = True
        elif after_semicolon and not token.startswith(("--", "/*")) and token.strip():
            return True
    return False
