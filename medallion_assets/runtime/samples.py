"""A key named in an error message, unless it is personal data: a build that refuses rows names
one of them so its owner can find it, and never shows a value of a PII column."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from medallion_assets.catalog import Dataset

MASKED = "values masked: personal data"


def private(dataset: Dataset, columns: Iterable[str]) -> bool:
    """Whether any of ``columns`` holds personal data (``pii_columns``), whatever its case."""
    pii = {c.lower() for c in dataset.settings.pii_columns}
    return any(c.lower() in pii for c in columns)


def key_sample(dataset: Dataset, keys: list[str], row: Any) -> str:
    """``k=value, ...`` of ``row``'s ``keys`` (a Spark Row), or ``MASKED``."""
    if private(dataset, keys):
        return MASKED
    return ", ".join(f"{k}={row[k]!r}" for k in keys)
