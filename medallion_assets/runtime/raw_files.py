"""Raw objects at the door: is a landed object readable in its source's declared format and
encoding, and what is its content?

A file that cannot be decoded (a UTF-16 export in a UTF-8 feed, a truncated Parquet object, a
JSON array in a JSON-lines feed, a CSV whose header is binary garbage) is not schema drift: its
"columns" are noise, and evolving the schema from them would poison every later run. Ingest
therefore checks each newly landed object here first and sets a corrupt one aside as a whole
(see ``ingest``); only objects that pass are compared with the declared columns.

Text objects are decoded strictly in the declared encoding and landed as UTF-8, so Spark always
reads UTF-8 (its own multi-byte decoding of CSV and JSON lines loses or mangles records).

>>> column_name_problem("coupon") is None
True
>>> column_name_problem("a`b")
'it has a backtick'
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from medallion_assets.catalog.models import Source
from medallion_assets.runtime.errors import PermanentError

CHUNK = 1024 * 1024
JSON_SAMPLE_LINES = 200  # records whose keys are read from each new JSON lines file
MAX_COLUMN_NAME_BYTES = 127  # Redshift's identifier limit, the tightest on the way down
# Columns ingest adds or Spark reads beside the data; a file's column must not shadow them.
RESERVED_COLUMNS = ("_ingested_at", "_source_file", "_batch_id", "_corrupt_record", "_metadata")


class CorruptObject(PermanentError, ValueError):
    """Raw objects that cannot be read in their source's declared format and encoding, when
    nothing readable is left to ingest. ``key`` and ``reason`` name the first; ``objects``
    holds every one (key -> reason). Retrying cannot fix it: the object must be replaced."""

    error_code = "CORRUPT_OBJECT"
    fix = "replace the object, or declare the source's real format/encoding in sources.yaml"

    def __init__(self, key: str, reason: str, objects: Mapping[str, str] | None = None):
        self.key, self.reason = key, reason
        self.objects = dict(objects or {key: reason})
        listed = "; ".join(f"{k}: {r}" for k, r in self.objects.items())
        super().__init__(
            f"corrupt raw object(s), nothing readable to ingest: {listed}. Replace the object "
            "(a new upload under the same key is ingested on the next run), or declare the "
            "source's real format/encoding in sources.yaml"
        )


def land_text(path: Path, encoding: str) -> tuple[str, str | None]:
    """(SHA-256 of the raw bytes, why the file is not text in ``encoding`` or None).

    Decodes strictly; a NUL character is refused too (it is how UTF-16 looks to a UTF-8
    reader). A readable file not in UTF-8 is rewritten in place as UTF-8.
    """
    digest = hashlib.sha256()
    check = _TextCheck(encoding)
    transcode = codecs.lookup(encoding).name not in ("utf-8", "ascii")
    copy = path.with_name(f".{path.name}.utf8")
    try:
        with path.open("rb") as raw, copy.open("wb") if transcode else _Discard() as out:
            while chunk := raw.read(CHUNK):
                digest.update(chunk)  # the whole object, even past a problem
                out.write(check.feed(chunk).encode())
            out.write(check.feed(b"", final=True).encode())
        if transcode and check.problem is None:
            os.replace(copy, path)
    finally:
        copy.unlink(missing_ok=True)
    return digest.hexdigest(), check.problem


class _Discard:
    """A writable that keeps nothing (no transcoded copy is needed)."""

    def __enter__(self) -> _Discard:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def write(self, data: bytes) -> None:
        return None


class _TextCheck:
    """Strict incremental decoding that remembers the first problem and where it was."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        self.decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
        self.problem: str | None = None
        self.offset, self.line = 0, 1

    def feed(self, chunk: bytes, final: bool = False) -> str:
        if self.problem is not None:
            return ""
        try:
            text: str = self.decoder.decode(chunk, final)
        except UnicodeDecodeError as error:
            # error.object is what the decoder held (bytes left from the last chunk + chunk)
            before = error.object[: error.start]
            at = self.offset - (len(error.object) - len(chunk)) + error.start
            line = self.line + before.decode(self.encoding, "replace").count("\n")
            self.problem = (
                f"it is not valid {self.encoding} (byte {at}, line {line}); declare the "
                "source's encoding in sources.yaml if it is another"
            )
            return ""
        nul = text.find("\x00")
        if nul >= 0:
            self.problem = (
                f"it holds NUL characters (line {self.line + text.count(chr(10), 0, nul)}): "
                f"not {self.encoding} text (UTF-16, or a binary file?)"
            )
            return ""
        self.offset += len(chunk)
        self.line += text.count("\n")
        return text


def land_binary(path: Path) -> tuple[str, str | None]:
    """(SHA-256, why the file is not a readable Parquet file or None)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    digest = sha256_of(path)
    if path.stat().st_size == 0:
        return digest, "it is empty (0 bytes): not a Parquet file"
    try:
        pq.read_schema(path)  # footer and schema: a truncated upload has neither
    except (pa.ArrowException, OSError) as error:
        return digest, f"it is not a readable Parquet file ({error})"
    return digest, None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as raw:
        while chunk := raw.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def land(path: Path, source: Source) -> tuple[str, str | None]:
    """(content SHA-256, why the landed object cannot be read or None) for ``source``."""
    if source.format == "parquet":
        return land_binary(path)
    return land_text(path, source.encoding)


def file_columns(path: Path, source: Source) -> list[str] | None:
    """The columns one landed (checked, UTF-8) file carries, in file order; None when the file
    cannot say (CSV without a header). ValueError when a JSON lines file has lines but none of
    the first ones is a JSON object."""
    if source.format == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    if source.format == "csv":
        if not source.csv_header:
            return None
        import csv

        with path.open(newline="", encoding="utf-8-sig") as handle:
            return next(csv.reader(handle), [])
    return _json_keys(path)


def _json_keys(path: Path) -> list[str]:
    keys: dict[str, None] = {}
    lines = objects = 0
    with path.open(encoding="utf-8-sig") as handle:
        for text in handle:
            if not text.strip():
                continue
            lines += 1
            if lines > JSON_SAMPLE_LINES:
                break
            try:
                record = json.loads(text)
            except ValueError:
                continue  # a malformed record goes to quarantine; it says nothing of columns
            if isinstance(record, dict):
                objects += 1
                keys.update(dict.fromkeys(record))
    if lines and not objects:
        raise ValueError(
            f"none of its first {min(lines, JSON_SAMPLE_LINES)} line(s) is a JSON object: "
            "not JSON lines (one object per line)"
        )
    return list(keys)


def column_name_problem(name: str) -> str | None:
    """Why ``name`` cannot become a column of a source, or None."""
    if not name.strip():
        return "it is empty"
    if name != name.strip():
        return "it starts or ends with white space"
    if not name.isprintable():
        return "it has a NUL, control or invisible character"
    if "`" in name:
        return "it has a backtick"
    if len(name.encode()) > MAX_COLUMN_NAME_BYTES:
        return f"it is longer than {MAX_COLUMN_NAME_BYTES} bytes"
    if name.lower() in RESERVED_COLUMNS:
        return "it is a column ingest adds itself"
    return None


def columns_problem(columns: Iterable[str], known: Iterable[str]) -> str | None:
    """Why a file's ``columns`` are not a header this source can take, or None: a name that
    cannot be a column, two names equal but for case (Spark is case-insensitive), or a
    header sharing nothing with the known columns (a headerless file, another feed's file)."""
    known = list(known)
    columns = list(columns)
    by_lower = {k.lower(): k for k in known}
    seen: dict[str, str] = {}
    for position, name in enumerate(columns, 1):
        if name not in by_lower.values():
            problem = column_name_problem(name)
            if problem is not None:
                return f"column {position} {name[:60]!r} cannot be a column name: {problem}"
            if name.lower() in by_lower:
                return (
                    f"column {name!r} differs only in case from column {by_lower[name.lower()]!r}"
                )
        if name.lower() in seen:
            return f"columns {seen[name.lower()]!r} and {name!r} have the same name"
        seen[name.lower()] = name
    if columns and known and not {c.lower() for c in columns} & set(by_lower):
        return (
            f"none of its columns ({', '.join(repr(c[:40]) for c in columns[:5])}) is one of the "
            "source's: a headerless file or another feed's file?"
        )
    return None
