"""Shared pieces of the metadata models: the frozen base model and the value checks.

Value checks raise ``ValueError`` with a message that says what to write instead; the loader
turns them into located catalog issues.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp
from sqlglot.errors import ParseError

from medallion_assets.lineage.statement import known_dialects

LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")
CRITICALITIES: tuple[str, ...] = ("critical", "high", "normal", "low")
Criticality = Literal["critical", "high", "normal", "low"]
Layer = Literal["bronze", "silver", "gold"]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_TABLE = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")


@functools.lru_cache(maxsize=1024)
def _is_spark_type(value: str) -> bool:
    # Projects repeat a handful of types thousands of times: parse each spelling once.
    try:
        exp.DataType.build(value, dialect="spark")
    except (ParseError, ValueError):
        return False
    return True


def check_identifier(value: str) -> str:
    if not _IDENT.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a safe identifier: use lower-case letters, digits and _ "
            "and start with a letter or _"
        )
    return value


def check_table_name(value: str) -> str:
    if not _TABLE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a table name: write '<layer>.<table>' in lower case, "
            "e.g. 'silver.orders_usd'"
        )
    return value


Identifier = Annotated[str, Field(min_length=1, max_length=127)]


class Model(BaseModel):
    """Base for every metadata model: frozen, unknown keys forbidden."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def check_dialect(value: str | None) -> str | None:
    if value is not None and value.lower() not in known_dialects():
        close = difflib.get_close_matches(value.lower(), known_dialects(), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known_dialects())}"
        raise ValueError(f"unknown SQL dialect {value!r}; {hint}")
    return value.lower() if value is not None else None


def check_encoding(value: str) -> str:
    """The normalised name of a text encoding Python decodes (``utf-8``, ``utf-16``,
    ``latin-1`` ...); ValueError naming the common ones otherwise."""
    try:
        info = codecs.lookup(value)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise ValueError(
            f"unknown text encoding {value!r}: write e.g. utf-8, utf-16, utf-16-le, latin-1 "
            "or cp1252"
        )
    return info.name


def check_bucket(value: str) -> str:
    if not _BUCKET.fullmatch(value) or ".." in value:
        raise ValueError(
            f"{value!r} is not a valid S3 bucket name: 3-63 characters of a-z, 0-9, '.' and '-'"
        )
    return value


def check_prefix(value: str) -> str:
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or any(ch in value for ch in "\\\0\n\r"):
        raise ValueError(
            f"{value!r} is not a safe S3 prefix: no leading '/', no '..' segments, no control "
            "characters or backslashes"
        )
    return value
