"""Raw objects at the door: is an object readable in its source's declared format and
encoding, and what is its content?

A file that cannot be decoded (a UTF-16 export in a UTF-8 feed, a truncated Parquet object, a
JSON array in a JSON-lines feed, a CSV whose header is binary garbage) is not schema drift: its
"columns" are noise, and evolving the schema from them would poison every later run. Ingest
therefore inspects each new object first, on Spark's executors where the bytes are read
(``raw_read``), and sets a corrupt one aside as a whole (see ``intake``); only objects that
pass are compared with the declared columns.

>>> column_name_problem("coupon") is None
True
>>> column_name_problem("a`b")
'it has a backtick'
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from medallion_assets.errors import PermanentError
from medallion_assets.runtime.ingest.raw_open import READ_SIZE, open_object

if TYPE_CHECKING:
    from pyarrow import NativeFile
    from pyarrow.parquet import ColumnChunkMetaData

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


class Inspection(NamedTuple):
    sha256: str  # of the bytes
    problem: str | None  # why they cannot be read, or None
    columns: list[str] | None  # the columns they carry in file order, None when unknown
    valueless: list[str] | None = None  # columns holding no value in any record (all NULL)


def inspect(data: bytes, format: str, encoding: str, csv_header: bool) -> Inspection:
    """What an object held in memory is (see ``inspect_chunks``)."""
    if format == "parquet":
        # pyiceberg and pyarrow: loaded only when the lake is read without Spark
        import pyarrow as pa

        digest = hashlib.sha256(data).hexdigest()
        return Inspection(digest, *_parquet_columns(pa.BufferReader(data) if data else None))
    step = 64 * 1024
    return inspect_chunks(
        (data[i : i + step] for i in range(0, len(data), step)), format, encoding, csv_header
    )


# What inspecting one object gives: (sha256, problem, columns, valueless, why it could not be
# read); None when it is gone.
Inspected = tuple[str | None, str | None, list[str] | None, list[str] | None, str | None] | None


def inspected(
    path: str, format: str, encoding: str, csv_header: bool, s3: tuple[str, str] | None
) -> Inspected:
    """``inspect_path`` of one object, a failure to read it said rather than raised (the driver
    names the object), as a tuple a Spark UDF can return."""
    try:
        found = inspect_path(path, format, encoding, csv_header, s3)
    except OSError as error:
        return (None, None, None, None, f"{type(error).__name__}: {error}")
    return None if found is None else (*found, None)


def inspect_path(
    path: str, format: str, encoding: str, csv_header: bool, s3: tuple[str, str] | None
) -> Inspection | None:
    """What the object at ``path`` is, read ``READ_SIZE`` bytes at a time (a Parquet file's
    footer by a ranged read): an object of any size costs a worker a few MB. ``path`` is a
    Spark path (``s3a://bucket/key`` or ``file:/folder/key``, Hadoop's glob escapes removed);
    ``s3`` is the S3 endpoint's (URL, region), None for AWS's own. None when it is gone."""
    try:
        with open_object(path, s3, random_access=format == "parquet") as file:
            chunks = iter(lambda: file.read(READ_SIZE), b"")
            if format != "parquet":
                return inspect_chunks(chunks, format, encoding, csv_header)
            digest = hashlib.sha256()
            for chunk in chunks:
                digest.update(chunk)
            file.seek(0)
            size = file.size()
            return Inspection(digest.hexdigest(), *_parquet_columns(file if size else None))
    except FileNotFoundError:
        return None


def object_lines(path: str, encoding: str, s3: tuple[str, str] | None) -> Iterator[str]:
    """The lines of the text object at Spark path ``path`` (see ``inspect_path``), decoded
    strictly a few MB at a time, without their line ends."""
    with open_object(path, s3) as file:
        for line in _lines(iter(lambda: file.read(READ_SIZE), b""), encoding):
            yield line.removesuffix("\n")


def inspect_chunks(
    chunks: Iterable[bytes], format: str, encoding: str, csv_header: bool
) -> Inspection:
    """What a text object (CSV, JSON lines) is: its SHA-256, why it cannot be read as
    ``format`` in ``encoding`` (or None), the columns it carries in file order and those of
    them without a value in any record (None when it cannot say).

    Runs where Spark reads the object (an executor, see ``raw_read``), so it must not need this
    package: standard library and pyarrow only. The bytes come a chunk at a time and are
    never held whole. Text is decoded strictly; a NUL character is refused too (it is how
    UTF-16 looks to a UTF-8 reader). A JSON lines object's columns are the keys of every
    record, not of a sample.
    """
    digest = hashlib.sha256()

    def hashed() -> Iterator[bytes]:
        for chunk in chunks:
            digest.update(chunk)
            yield chunk

    stream = hashed()
    head = b""
    for chunk in stream:  # enough bytes to know a compressed file by its first ones
        head = head + chunk if head else chunk
        if len(head) >= 16:
            break
    data = itertools.chain([head], stream)
    problem: str | None = None
    columns: tuple[list[str] | None, list[str] | None] = (None, None)
    compressed = [kind for magic, kind in _COMPRESSED if magic.match(head)]
    if not head:
        problem = "it is empty (0 bytes): a delivery that carries no records"
    elif compressed:
        problem = (
            f"it is {compressed[0]}-compressed, but the source declares uncompressed "
            f"{format}: deliver it uncompressed"
        )
    else:
        try:
            if format == "csv" and not csv_header:
                for _ in _lines(data, encoding):
                    pass  # decodes, or says where it does not
            elif format == "csv":
                columns = _csv_columns(_lines(data, encoding))
            else:
                problem, *found = _json_keys(_lines(data, encoding))
                columns = (found[0], found[1])
        except _Undecodable as undecodable:
            problem = str(undecodable)
    for _ in stream:
        pass  # the hash is of every byte, wherever reading stopped
    return Inspection(digest.hexdigest(), problem, *columns)


class _Undecodable(ValueError):
    """Bytes that are not text in the declared encoding; the message says where."""


def _lines(chunks: Iterable[bytes], encoding: str) -> Iterator[str]:
    r"""The text of ``chunks`` line by line (each with its line end), decoded strictly, without
    a byte order mark: one line at a time, so an object of hundreds of MB is never held as
    text. ``_Undecodable`` at the first byte that is not ``encoding`` or a NUL character (how
    UTF-16 looks to a UTF-8 reader).

    >>> list(_lines([b"\xef\xbb\xbfa\r", b"\nb"], "utf-8"))
    ['a\r\n', 'b']
    >>> list(_lines([b"ok\n\xff\n"], "utf-8"))
    Traceback (most recent call last):
    medallion_assets...raw_files._Undecodable: it is not valid utf-8 (byte 3, line 2); ...
    """
    if "\n".encode(encoding) != b"\n":  # UTF-16, UTF-32: decoded incrementally, split as text
        yield from _wide_lines(chunks, encoding)
        return
    number, offset, rest = 1, 0, b""
    for chunk in itertools.chain(chunks, [b""]):
        data = rest + chunk if rest else bytes(chunk)
        last = not chunk
        view, start = memoryview(data), 0
        while start < len(data):
            end = data.find(b"\n", start)
            if end < 0 and not last:
                break  # the line goes on in the next chunk
            stop = len(data) if end < 0 else end + 1
            yield _line(view[start:stop], encoding, number, offset + start)
            start, number = stop, number + 1
        offset, rest = offset + start, data[start:]


def _line(data: memoryview, encoding: str, number: int, offset: int) -> str:
    try:
        line = str(data, encoding)
    except UnicodeDecodeError as error:
        raise _Undecodable(_not_valid(encoding, offset + error.start, number)) from None
    if number == 1:
        line = line.removeprefix("\ufeff")
    return _without_nul(line, encoding, number)


def _wide_lines(chunks: Iterable[bytes], encoding: str) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    number, offset, rest, started = 1, 0, "", False
    for chunk in itertools.chain(chunks, [None]):
        try:
            text = decoder.decode(chunk or b"", final=chunk is None)
        except UnicodeDecodeError as error:
            at = number + rest.count("\n")
            raise _Undecodable(_not_valid(encoding, offset + error.start, at)) from None
        offset += len(chunk or b"")
        if text and not started:
            text, started = text.removeprefix("\ufeff"), True
        *lines, rest = (rest + text).split("\n")
        ended = [line + "\n" for line in lines] + ([rest] if chunk is None and rest else [])
        for line in ended:
            yield _without_nul(line, encoding, number)
            number += 1


def _without_nul(line: str, encoding: str, number: int) -> str:
    """``line``, or ``_Undecodable`` when it holds a NUL character."""
    if "\x00" in line:
        raise _Undecodable(
            f"it holds NUL characters (line {number}): not {encoding} text (UTF-16, or a "
            "binary file?)"
        )
    return line


def _not_valid(encoding: str, byte: int, line: int) -> str:
    return (
        f"it is not valid {encoding} (byte {byte}, line {line}); declare the source's "
        "encoding in sources.yaml if it is another"
    )


def _csv_columns(lines: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the header's names, those whose field is empty on every record: Spark reads an empty
    field as NULL)."""
    rows = csv.reader(lines)
    header = next(rows, [])
    filled = [False] * len(header)
    for row in rows:
        for i, value in enumerate(row[: len(header)]):
            if value:
                filled[i] = True
    return header, [name for name, seen in zip(header, filled, strict=True) if not seen]


# The first bytes of a compressed file: none is how text starts (bzip2's "BZh" is, so its block
# magic, the digits of pi, or its end-of-stream magic must follow).
_COMPRESSED = (
    (re.compile(rb"\x1f\x8b"), "gzip"),
    (re.compile(rb"BZh[1-9](\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)"), "bzip2"),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd"),
    (re.compile(rb"\xfd7zXZ\x00"), "xz"),
    (re.compile(rb"PK\x03\x04"), "zip"),
)


def _parquet_columns(
    file: NativeFile | None,
) -> tuple[str | None, list[str] | None, list[str] | None]:
    """(why it is not Parquet or None, its top-level columns, those whose every value is NULL
    by the row groups' statistics: a column without statistics is not named). ``file`` is a
    seekable pyarrow file, None when the object has no bytes."""
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    import pyarrow as pa
    import pyarrow.parquet as pq

    if file is None:
        return "it is empty (0 bytes): not a Parquet file", None, None
    try:
        meta = pq.read_metadata(file)  # a truncated upload has no footer
    except (pa.ArrowException, OSError) as error:
        return f"it is not a readable Parquet file ({error})", None, None
    names = list(meta.schema.to_arrow_schema().names)
    valueless = []
    for c in range(meta.num_columns):
        path = meta.schema.column(c).path
        if "." in path or not meta.num_rows:
            continue  # a nested field, or no rows to speak of
        nulls = [_null_count(meta.row_group(g).column(c)) for g in range(meta.num_row_groups)]
        if None not in nulls and sum(n for n in nulls if n is not None) == meta.num_rows:
            valueless.append(path)
    return None, names, valueless


def _null_count(chunk: ColumnChunkMetaData) -> int | None:
    """A column chunk's NULL count by its statistics, None when it has none."""
    stats = chunk.statistics
    if stats is None or not getattr(stats, "has_null_count", False):
        return None
    return stats.null_count


def _json_keys(text: Iterable[str]) -> tuple[str | None, list[str] | None, list[str] | None]:
    """(why it is not JSON lines or None, the keys of its records, those null in every one)."""
    keys: dict[str, None] = {}
    filled: set[str] = set()
    lines = objects = 0
    for line in text:
        if not line.strip():
            continue
        lines += 1
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a malformed record goes to quarantine; it says nothing of columns
        if isinstance(record, dict):
            objects += 1
            keys.update(dict.fromkeys(record))
            filled.update(k for k, v in record.items() if v is not None)
    if lines and not objects:
        why = "none of its lines is a JSON object: not JSON lines (one object per line)"
        return why, None, None
    return None, list(keys), [k for k in keys if k not in filled]


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
