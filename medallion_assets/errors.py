"""Exceptions that say how to handle them, so no caller has to be taught about each one.

- ``PermanentError``: retrying cannot clear it (a corrupt object, a name Spark rejects). Its
  class declares ``permanent = True``, optionally an ``error_code`` (default: the class name,
  ``CorruptObject`` -> ``CORRUPT_OBJECT``) and a ``fix``; the healing diagnosis
  (``healing.diagnosis.declared_class``) reads those, so a step that raises one fails at once,
  without retries, with its message and the fix. Any exception class may declare the same
  attributes instead of subclassing.
- ``ResourceError``: a resource of the runtime (the control store, the S3 endpoint) cannot be
  used. Its message is complete for an operator (what, where without credentials, the
  variable that sets it, the fix): the CLI prints it as one line and exits 2, no traceback.

    class CorruptObject(PermanentError):
        error_code = "CORRUPT_OBJECT"
        fix = "re-deliver the object"
"""

from __future__ import annotations

import re
from collections.abc import Iterator


class PermanentError(Exception):
    """An error that retrying cannot clear; subclasses may set ``error_code`` and ``fix``."""

    permanent = True
    fix = ""


class ResourceError(Exception):
    """A runtime resource cannot be used; the message names it, its setting and the fix."""


class SettingsError(ResourceError):
    """An environment variable holds a value the runtime cannot use; names it and the fix."""


def causes(error: BaseException | None) -> Iterator[BaseException]:
    """``error``, then what caused it (``raise ... from``, or the error being handled when it
    was raised), and so on; each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


# A JVM stack frame and the markers between a Java trace's sections: never worth showing.
_FRAME = re.compile(r"^\s*(at |\.\.\. \d+ more|Driver stacktrace:|JVM stacktrace:)")
# "Caused by: java.io.IOException: msg" or py4j's ": org.apache.spark.SparkException: msg"
_JAVA_CAUSE = re.compile(r"^(?:Caused by: |: )(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*): ?")
_LOCATION = re.compile(r"(?:file:|s3[an]?://|hdfs://|abfss?://|gs://)[^\s'\"(),;]+")
MAX_SUMMARY = 500


def headline(error: BaseException) -> str:
    """One line for a person about ``error`` (see ``summary_line``); its type when it has no
    message."""
    return summary_line(said(error)) or type(error).__name__


# What ``said`` adds when an error's own text could not be had: a driver that cannot answer.
NO_ANSWER = "the Spark driver did not answer"


def said(error: BaseException) -> str:
    """``str(error)``, which never raises: py4j's error asks the JVM for its message, and a
    driver killed by running out of memory cannot answer; then what the error was built with
    and ``NO_ANSWER`` with why, so the driver's death stays visible to whoever reads it.

    >>> class Gone(Exception):
    ...     def __str__(self): raise ConnectionRefusedError(111, "Connection refused")
    >>> said(Gone("An error occurred while calling o36.collectToPython."))[32:]
    'o36.collectToPython. (the Spark driver did not answer: ConnectionRefusedError)'
    """
    try:
        return str(error)
    except Exception as why:  # the JVM is gone: what the error was built with is all there is
        built = " ".join(str(arg) for arg in error.args if isinstance(arg, str)).strip()
        return f"{built} ({NO_ANSWER}: {type(why).__name__})".lstrip()


def summary_line(text: str) -> str:
    """The line of an error's text worth showing: a Java trace's root cause (Spark's ``Caused
    by:``), else the first line; with the first file or object location of the text when that
    line names none. Empty when the text is.

    >>> summary_line(": org.x.SparkException: job aborted\\n\\tat a.b(C.java:1)\\n"
    ...     "Caused by: java.io.IOException: Mkdirs failed to create file:/lake/t\\n\\tat d.e")
    'IOException: Mkdirs failed to create file:/lake/t'
    """
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _FRAME.match(line)]
    if not lines:
        return ""
    java = [line for line in lines if _JAVA_CAUSE.match(line)]
    line = _JAVA_CAUSE.sub(r"\1: ", java[-1]) if java else lines[0]
    if not _LOCATION.search(line) and (where := _LOCATION.search(text)):
        line = f"{line} ({where.group(0).rstrip('.')})"
    return line if len(line) <= MAX_SUMMARY else line[: MAX_SUMMARY - 3] + "..."
