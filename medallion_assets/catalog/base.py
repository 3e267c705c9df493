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

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from sqlglot import exp
from sqlglot.errors import ParseError

from medallion_assets.lineage.statement import known_dialects

LAYERS: tuple[str, ...] = ("bronze", "silver", "gold")
CRITICALITIES: tuple[str, ...] = ("critical", "high", "normal", "low")
Criticality = Literal["critical", "high", "normal", "low"]
Layer = Literal["bronze", "silver", "gold"]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_TABLE = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")

# Warehouse names the project writes itself (io/warehouse_sql.py): the load ledger beside each
# loaded table, and the staging tables of a load. A target may not be named like them.
WAREHOUSE_LEDGER = "medallion_loads"
WAREHOUSE_STAGING_PREFIX = "_stage_"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


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


MAX_NAME_LENGTH = 127  # Redshift's limit for a table name; the lake's folders stay well short


def check_table_name(value: str) -> str:
    if not _TABLE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a table name: write '<layer>.<table>' in lower case, "
            "e.g. 'silver.orders_usd'"
        )
    if any(len(part) > MAX_NAME_LENGTH for part in value.split(".")):
        raise ValueError(
            f"table name {value[:40]!r}... is longer than {MAX_NAME_LENGTH} characters: "
            "use a shorter name"
        )
    return value


Identifier = Annotated[str, Field(min_length=1, max_length=127)]


class Model(BaseModel):
    """Base for every metadata model: frozen, unknown keys forbidden."""

    # A field's docstring is its description: the metadata reference (docs/) shows it.
    model_config = ConfigDict(
        extra="forbid", frozen=True, str_strip_whitespace=True, use_attribute_docstrings=True
    )


def example(**values: JsonValue) -> ConfigDict:
    """A model's example: error messages show it as the shape to write, and editors show it
    from the JSON Schema (``examples``)."""
    return ConfigDict(json_schema_extra={"examples": [values]})


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


# Python's name of an encoding -> the name Spark's CSV reader (Java) knows it by; Spark reads a
# CSV source in its declared encoding itself (``raw_read``), so only these can be declared.
_JAVA_CHARSETS = {
    "utf-8": "UTF-8",
    "utf-8-sig": "UTF-8",
    "ascii": "US-ASCII",
    "utf-16": "UTF-16",
    "utf-16-le": "UTF-16LE",
    "utf-16-be": "UTF-16BE",
    "utf-32": "UTF-32",
    "utf-32-le": "UTF-32LE",
    "utf-32-be": "UTF-32BE",
    **{f"iso8859-{n}": f"ISO-8859-{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 15)},
    **{f"cp{n}": f"windows-{n}" for n in range(1250, 1259)},
    **{f"cp{n}": f"IBM{n}" for n in (437, 850, 852, 855, 857, 858, 862, 866)},
    "cp932": "windows-31j",
    "shift_jis": "Shift_JIS",
    "euc_jp": "EUC-JP",
    "euc_kr": "EUC-KR",
    "gbk": "GBK",
    "gb2312": "GB2312",
    "gb18030": "GB18030",
    "big5": "Big5",
    "koi8-r": "KOI8-R",
    "koi8-u": "KOI8-U",
}


def java_charset(encoding: str) -> str | None:
    """The Java (Spark) name of a Python text encoding, or None when Spark's CSV reader has no
    such charset.

    >>> java_charset("latin-1"), java_charset("cp1252"), java_charset("mac_roman")
    ('ISO-8859-1', 'windows-1252', None)
    """
    return _JAVA_CHARSETS.get(check_encoding(encoding))


def check_bucket(value: str) -> str:
    if not _BUCKET.fullmatch(value) or ".." in value:
        raise ValueError(
            f"{value!r} is not a valid S3 bucket name: 3-63 characters of a-z, 0-9, '.' and '-'"
        )
    return value


def check_prefix(value: str) -> str:
    """An S3 prefix that stays inside its bucket: relative, no '.'/'..' or empty segments.

    An empty segment or '.' is a different key on S3 than on the local folder standing in for
    it, and '..' leaves the source's folder there, so both are refused rather than normalised.
    """
    segments = value.split("/")[:-1] if value.endswith("/") else value.split("/")
    if (
        value.startswith("/")
        or any(s in (".", "..", "") for s in segments if value)
        or any(ch in value for ch in "\\\0\n\r")
    ):
        raise ValueError(
            f"{value!r} is not a safe S3 prefix: write a relative path such as 'orders/' "
            "(no leading '/', no '.', '..' or empty segments, no backslashes or control "
            "characters)"
        )
    return value


DATE_PLACEHOLDER = "{date}"


def check_partition(value: str) -> str:
    """A daily partition folder template such as ``dt={date}``: one ``{date}``, and a relative
    path that stays under its source's prefix once the date is filled in."""
    if value.count(DATE_PLACEHOLDER) != 1:
        raise ValueError(
            f"partition pattern {value!r} must hold '{{date}}' exactly once; "
            "write e.g. 'dt={date}'"
        )
    rendered = value.replace(DATE_PLACEHOLDER, "2026-01-01")
    if "{" in rendered or "}" in rendered:
        raise ValueError(
            f"partition pattern {value!r} holds a placeholder other than '{{date}}'; only "
            "'{date}' is filled in (as YYYY-MM-DD): write e.g. 'dt={date}'"
        )
    if rendered.endswith("/"):
        raise ValueError(
            f"partition pattern {value!r} ends with '/'; the runtime adds it: write "
            f"{value.rstrip('/')!r}"
        )
    try:
        check_prefix(rendered)
    except ValueError:
        raise ValueError(
            f"partition pattern {value!r} leaves its source's prefix or is not a safe S3 path: "
            "write a relative folder under the prefix such as 'dt={date}' (no leading '/', "
            "no '.', '..' or empty segments, no backslashes or control characters)"
        ) from None
    return value
