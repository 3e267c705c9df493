"""A parse cache keyed by content hashes, so an unchanged project is not parsed again.

Entries live in one JSON file per cache folder, written atomically. A build keeps only the
entries it used, so the file never grows past the size of the project it serves.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

# Bump when the shape of cached results changes; the sqlglot version and the lineage engine's
# own source are part of the key too, so a changed engine never serves an old result.
FORMAT_VERSION = 4  # 2: files nested past MAX_NESTING are errors, never cached
# 3: SELECT INTO targets, column lists, positional INSERT, star edges, preambles
# 4: ambiguous columns beside unknown ones
_SQLGLOT_VERSION = version("sqlglot")


def _engine_digest() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


_ENGINE = _engine_digest()


def content_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in (str(FORMAT_VERSION), _SQLGLOT_VERSION, _ENGINE, *parts):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


class LineageCache:
    """Lineage results by content key, read once and saved once per build."""

    def __init__(self, directory: Path):
        self.path = directory / "lineage.json"
        self._entries: dict[str, Any] = self._read()
        self._used: set[str] = set()
        self._dirty = False

    def _read(self) -> dict[str, Any]:
        try:
            with self.path.open(encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}  # a missing or corrupt cache only costs a re-parse
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Any:
        value = self._entries.get(key)
        if value is not None:
            self._used.add(key)
        return value

    def put(self, key: str, value: Any) -> None:
        self._entries[key] = value
        self._used.add(key)
        self._dirty = True

    def save(self) -> None:
        if not self._dirty and self._used == set(self._entries):
            return
        kept = {k: v for k, v in self._entries.items() if k in self._used}
        try:
            self._write(kept)
        except OSError as error:
            # A read-only checkout still loads; it only parses again next time.
            warnings.warn(f"lineage cache not saved to {self.path}: {error}", stacklevel=2)
            return
        self._entries = kept
        self._dirty = False

    def _write(self, entries: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".lineage-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entries, handle, separators=(",", ":"))
            os.replace(tmp, self.path)  # atomic: readers see the old file or the new one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
