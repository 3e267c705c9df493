"""What a project has, for the reference checks (``references.py``): its tables with their
output columns and types, its sources; and the words for a name that is not among them."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KnownNames:
    """What exists, for reference checks: datasets with their output columns, sources, layers."""

    datasets: Mapping[str, tuple[str, ...] | None]  # None: columns unknown (unexpanded star)
    sources: Mapping[str, tuple[str, ...]]
    sources_loaded: bool = True  # false: sources.yaml did not validate (its problems are said)
    # table -> column -> type as derived through the SQL ("unknown" where it is not)
    types: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


# Types a range cannot compare (what lineage derives, or sources.yaml declares, lower-cased).
_NOT_NUMERIC = re.compile(
    r"(string|varchar|char|text|date|timestamp|boolean|bool|binary|array|map|struct)\b"
)


def not_numeric(kind: str) -> bool:
    """Whether a column of type ``kind`` is certainly not a number ("unknown" is not).

    >>> not_numeric("STRING"), not_numeric("decimal(18,2)"), not_numeric("unknown")
    (True, False, False)
    """
    return bool(_NOT_NUMERIC.match(kind.strip().lower()))


def suggest(name: str, candidates: Iterable[str]) -> str:
    options = sorted(candidates)
    close = difflib.get_close_matches(name, options, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    shown = ", ".join(options[:12]) + (" ..." if len(options) > 12 else "")
    return f"known: {shown}" if options else "none are defined"
