"""Retry and self-healing decisions: classify a failure, say what to do, and when to retry.

``diagnose`` matches a failure against the healing rules of ``policies.yaml`` in file order
(the first rule whose every given field matches wins) and returns a ``Diagnosis``: the error
code, the actions to run, and then ``retry``, ``fail`` (a permanent error: no retry) or
``reroute``. A failure no project rule matches is classified by the built-in classes
(``BUILTIN_CLASSES``): errors that retrying cannot clear (a corrupt object, an invalid name,
data that breaks a type or constraint, a path of the wrong kind, a path this process may not
write, a project that does not load), and any exception that declares ``permanent = True`` or
an ``error_code`` on its class
(``errors.PermanentError``). The project's rules come first so that a team can still
say "retry" for one of these. What nothing classifies is ``UNCLASSIFIED`` and retried by the
retry policy. ``retry_delay`` is the policy's backoff for an attempt. Pure: no I/O, the clock
and the random source are arguments.

    failure = Failure.of(error)
    diagnosis = diagnose(catalog.healing_rules, failure)
    diagnosis.error_code, diagnosis.actions, diagnosis.then  # "CONNECTION_RESET", (...), "retry"
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from medallion_assets.catalog.operations import HealingRule, RetryPolicy
from medallion_assets.errors import causes, headline, said
from medallion_assets.healing.systems import OUT_OF_MEMORY, SOURCE, Places, system_of

UNCLASSIFIED = "UNCLASSIFIED"


@dataclass(frozen=True)
class ErrorClass:
    """A class of errors known without a project rule: it matches when any exception in the
    chain has one of ``exceptions`` (class names, as healing rules name them) or the chain's
    messages match ``message``. ``fix`` tells the operator what clears it."""

    name: str
    error_code: str
    exceptions: tuple[str, ...] = ()
    message: str | None = None
    fix: str = ""
    permanent: bool = True
    system: str = ""  # only failures in this system (healing.systems), when given

    def matches(self, failure: Failure) -> bool:
        if self.system and failure.system != self.system:
            return False
        if any(name in failure.exception_types for name in self.exceptions):
            return True
        return self.message is not None and re.search(self.message, failure.message) is not None


@dataclass(frozen=True)
class Failure:
    """What is known of an exception: its class and its bases (names and dotted paths), the
    message of it and of its causes, a SQLSTATE if any exception in the chain has one, the
    class an exception in the chain declares for itself, and one line for a person."""

    exception_types: tuple[str, ...]
    message: str
    sqlstate: str | None = None
    declared: ErrorClass | None = None
    summary: str = ""
    system: str = ""  # lake, source, catalog, warehouse, spark, or "" (healing.systems)

    @classmethod
    def of(cls, error: BaseException, places: Places | None = None, evidence: str = "") -> Failure:
        """What ``error`` says; with ``places`` (where the project's systems keep their data),
        also which system it happened in; ``evidence``: lines from elsewhere (the Spark log,
        ``healing.evidence``) that say what the error could not: the root cause, which the
        rules then see instead of the symptom (a reset socket to a JVM that ran out of heap
        is no connection to retry)."""
        types: list[str] = []
        messages: list[str] = []
        sqlstate = None
        declared, declarer = None, None
        for current in causes(error):
            for klass in type(current).__mro__:
                if klass is object:
                    continue
                types += [klass.__name__, f"{klass.__module__}.{klass.__qualname__}"]
            messages.append(f"{type(current).__name__}: {said(current)}")
            sqlstate = sqlstate or _sqlstate(current)
            if declared is None and (declared := declared_class(current)) is not None:
                declarer = current
        summary = headline(declarer if declarer is not None else error)
        found = tuple(dict.fromkeys(types))
        message = "\n".join(messages)
        system = system_of(found, message, places) if places is not None else ""
        return cls(found, message, sqlstate, declared, summary, system).with_evidence(
            evidence, places
        )

    def with_evidence(self, evidence: str, places: Places | None = None) -> Failure:
        """This failure as ``evidence`` (lines from elsewhere, see ``of``) says it, when there
        is any: the rules see the root cause instead of the symptom; the summary stays."""
        if not evidence:
            return self
        system = system_of((), evidence, places) if places is not None else ""
        return Failure((), evidence, None, None, self.summary, system)


def declared_class(error: BaseException) -> ErrorClass | None:
    """The class an exception declares for itself: ``permanent`` (a bool) and/or
    ``error_code`` (a str) on its class, and optionally ``fix``. The code defaults to the class
    name in upper snake case (``CorruptObject`` -> ``CORRUPT_OBJECT``)."""
    klass = type(error)
    permanent = getattr(klass, "permanent", None)
    code = getattr(klass, "error_code", None)
    if not isinstance(permanent, bool) and not isinstance(code, str):
        return None
    if not isinstance(code, str) or not code:
        code = re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", klass.__name__).upper()
    fix = getattr(error, "fix", "")
    return ErrorClass(
        f"declared by {klass.__name__}",
        code,
        fix=fix if isinstance(fix, str) else "",
        permanent=permanent is True,
    )


@dataclass(frozen=True)
class Diagnosis:
    error_code: str
    rule: str | None  # the healing rule's name, or the built-in class's; None when unclassified
    actions: tuple[str, ...] = ()
    then: str = "retry"  # retry | fail | reroute
    fix: str = ""  # what clears a permanent error (built-in classes say it)
    builtin: bool = False  # classified by a built-in class, not by a project rule

    @property
    def permanent(self) -> bool:
        return self.then == "fail"

    def source(self) -> str:
        """Who classified the error, for messages: ``healing rule X`` or ``built-in: X``."""
        return f"built-in: {self.rule}" if self.builtin else f"healing rule {self.rule}"


def matches(rule: HealingRule, failure: Failure) -> bool:
    signature = rule.match
    if signature.system and signature.system != failure.system:
        return False
    if reroutes(rule) and failure.system not in ("", SOURCE):
        # Only a raw source has replicas and alternates: a lake, catalog, warehouse or Spark
        # failure rerouted would mark healthy sources down and leave their tables unbuilt.
        return False
    if signature.exception and signature.exception not in failure.exception_types:
        return False
    if signature.message and not re.search(signature.message, failure.message):
        return False
    return not (signature.sqlstate and signature.sqlstate != failure.sqlstate)


def reroutes(rule: HealingRule) -> bool:
    return rule.then == "reroute" or "reroute_source" in rule.actions


def diagnose(rules: Sequence[HealingRule], failure: Failure) -> Diagnosis:
    """The project's rules first (a team may decide to retry what the built-ins call
    permanent), then the class the exception declares, then the built-in classes."""
    for rule in rules:
        if matches(rule, failure):
            actions = rule.actions
            if rule.then == "reroute" and "reroute_source" not in actions:
                actions = (*actions, "reroute_source")  # `then: reroute` is what it says
            return Diagnosis(rule.error_code, rule.name, actions, rule.then)
    known = failure.declared or next((c for c in BUILTIN_CLASSES if c.matches(failure)), None)
    if known is not None:
        then = "fail" if known.permanent else "retry"
        return Diagnosis(known.error_code, known.name, (), then, known.fix, builtin=True)
    return Diagnosis(UNCLASSIFIED, None)


def retry_delay(policy: RetryPolicy, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1 = the first retry): the policy's
    delay, doubled per attempt when exponential, capped at ``max_delay_seconds``, then
    jittered (full: uniform in [0, d]; plus_minus: d +/- up to half of d)."""
    delay = policy.delay_seconds
    if policy.backoff == "exponential":
        delay *= 2 ** max(attempt - 1, 0)
    if policy.max_delay_seconds is not None:
        delay = min(delay, policy.max_delay_seconds)
    rng = rng or random.Random()
    if policy.jitter == "full":
        return rng.uniform(0, delay)
    if policy.jitter == "plus_minus":
        return max(0.0, delay + rng.uniform(-delay / 2, delay / 2))
    return delay


def _sqlstate(error: BaseException) -> str | None:
    for attribute in ("sqlstate", "pgcode"):
        value = getattr(error, attribute, None)
        if isinstance(value, str) and len(value) == 5:
            return value
    diag = getattr(error, "diag", None)  # psycopg
    value = getattr(diag, "sqlstate", None) if diag is not None else None
    return value if isinstance(value, str) else None


# Errors that retrying cannot clear, in the order they are tried. Their messages are Spark's
# error classes and root causes, Hadoop's and pyarrow's texts, and the OS errors' names.
BUILTIN_CLASSES: tuple[ErrorClass, ...] = (
    ErrorClass(
        "out_of_memory",
        "OUT_OF_MEMORY",
        message=OUT_OF_MEMORY.pattern,
        # The same data in the same heap runs out the same way; what clears it is a setting.
        fix="Spark ran out of memory building this table: raise MEDALLION_SPARK_DRIVER_MEMORY "
        "(auto: a quarter of the machine's memory; `medallion settings` shows it), or build "
        "fewer tables at once (MEDALLION_MAX_WORKERS=1), then rerun",
    ),
    ErrorClass(
        "spark_driver_lost",
        "SPARK_DRIVER_LOST",
        exceptions=("Py4JNetworkError",),
        message=r"Answer from Java side is empty|Error while sending or receiving",
        fix="the run's Spark driver is gone (killed, or out of memory: see the Spark log, "
        "MEDALLION_SPARK_LOG); nothing was published half-way: rerun, with more memory "
        "(MEDALLION_SPARK_DRIVER_MEMORY) if it ran out",
    ),
    ErrorClass(
        "lake_storage_missing",
        "LAKE_STORAGE_MISSING",
        message=r"NoSuchBucket|[Tt]he specified bucket does not exist",
        system="lake",
        fix="the lake's bucket (MEDALLION_LAKE) is gone: create it again, or set "
        "MEDALLION_LAKE_CREATE=1 and the next run creates it (`medallion doctor` checks it); "
        "no raw source is down",
    ),
    ErrorClass(
        "project_does_not_load",
        "PROJECT_DOES_NOT_LOAD",
        exceptions=("CatalogError",),
        fix="run `medallion catalog validate` and fix what it lists",
    ),
    ErrorClass(
        "corrupt_object",
        "CORRUPT_OBJECT",
        exceptions=("UnicodeDecodeError",),
        message=(
            r"Parquet magic bytes not found|Parquet file size is \d+ bytes|is not a Parquet file"
            r"|CANNOT_READ_FILE_FOOTER|Could not read footer|Couldn't deserialize thrift"
            r"|ChecksumException|Checksum error: file:|Unexpected end of stream"
            r"|\[UNABLE_TO_INFER_SCHEMA\] Unable to infer schema for Parquet"
            # a damaged footer met while a job reads the file (no inference: recorded schema)
            r"|footer is too large: -?\d+ ?to be read|\(length is too low: \d+\)"
            r"|rows in its Parquet files, not the \d+ published"
            # a lake table's data file truncated, emptied or deleted under Iceberg's reader
            r"|Reached the end of stream with \d+ bytes left to read"
            r"|FileNotFoundException: File \S+\.parquet does not exist"
            r"|NotFoundException: File does not exist: \S+\.parquet"
        ),
        fix="the file or object named is corrupt, truncated or gone: re-deliver a raw object "
        "under its key, or roll the lake table back to a snapshot before the damage "
        "(`medallion table history|rollback`), or drop it so the next run rebuilds it",
    ),
    ErrorClass(
        "invalid_name",
        "INVALID_NAME",
        message=(
            r"\[(INVALID_ATTRIBUTE_NAME_SYNTAX|INVALID_IDENTIFIER|INVALID_COLUMN_NAME_AS_PATH"
            r"|INVALID_FIELD_NAME|COLUMN_ALREADY_EXISTS|PARSE_SYNTAX_ERROR"
            r"|UNRESOLVED_COLUMN|UNRESOLVED_FIELD|AMBIGUOUS_REFERENCE)[\].]"
            r"|contains invalid character\(s\) among"
        ),
        fix="the SQL, the declared schema or an evolved schema names a column Spark rejects "
        "or cannot find: rename it (quote it with backticks, alias it, or revert the evolved "
        "schema) and rerun; retrying cannot change a name",
    ),
    ErrorClass(
        "data_error",
        "DATA_ERROR",
        # A warehouse's own data errors (a value its type cannot hold, a NULL in a NOT NULL
        # column): PostgreSQL and Redshift (DBAPI's DataError), DuckDB. Not every integrity
        # error: a unique key two writers raced for clears on retry.
        exceptions=(
            "DataError",
            "NotNullViolation",
            "_duckdb.ConstraintException",
            "_duckdb.ConversionException",
            "_duckdb.OutOfRangeException",
        ),
        # Spark's, under ANSI SQL: a value its type cannot hold, a cast that cannot be done.
        message=(
            r"\[(ARITHMETIC_OVERFLOW|CAST_OVERFLOW|CAST_OVERFLOW_IN_TABLE_INSERT"
            r"|NUMERIC_VALUE_OUT_OF_RANGE|CAST_INVALID_INPUT|DIVIDE_BY_ZERO|DATETIME_OVERFLOW"
            r"|NOT_NULL_ASSERT_VIOLATION|INVALID_ARRAY_INDEX|DELTA_NOT_NULL_CONSTRAINT_VIOLATED)[\].]"
        ),
        fix="the data breaks a type or constraint (the message names the value or column): "
        "correct the SQL (a wider type, try_cast, a filter) or the data; retrying the same "
        "data fails the same way",
    ),
    ErrorClass(
        "warehouse_schema_clash",
        "WAREHOUSE_SCHEMA_CLASH",
        # The warehouse table has no such column, or one of a type the load cannot go into:
        # PostgreSQL and Redshift (42703, 42804, 42846), DuckDB's binder.
        exceptions=(
            "UndefinedColumn",
            "DatatypeMismatch",
            "CannotCoerce",
            "_duckdb.BinderException",
        ),
        fix="the warehouse table's columns do not fit what is loaded (the message names the "
        "column): alter or drop that table, or change what the target loads; retrying loads "
        "the same columns into the same table",
    ),
    ErrorClass(
        "path_of_wrong_kind",
        "PATH_OF_WRONG_KIND",
        exceptions=("NotADirectoryError", "FileExistsError", "IsADirectoryError"),
        message=(
            r"ParentNotDirectoryException|Parent path is not a directory"
            r"|Destination exists and is not a directory"
        ),
        fix="a file is where a folder should be (or the reverse): move the path named aside, "
        "then rerun",
    ),
    ErrorClass(
        "disk_full",
        "DISK_FULL",
        # The OS's ENOSPC and EDQUOT as Python (errno 28, 122), Java and pyarrow word them.
        message=(
            r"No space left on device|\[Errno 28\]|\[errno 28\]|ENOSPC|Disk quota exceeded"
            r"|\[Errno 122\]|EDQUOT"
        ),
        fix="a disk is full: free space on the disk holding the lake (MEDALLION_LAKE), "
        "MEDALLION_HOME or Spark's scratch folder (spark.local.dir, /tmp by default), or "
        "point them at a larger one, then rerun; nothing was published half-way",
    ),
    ErrorClass(
        "path_not_writable",
        "PATH_NOT_WRITABLE",
        exceptions=("PermissionError", "AccessDeniedException"),
        message=(
            r"Mkdirs failed to create|Permission denied|Read-only file system"
            r"|\(Operation not permitted\)"
        ),
        fix="this process may not write the path named (a read-only lake or folder): make it "
        "writable, or point MEDALLION_LAKE / MEDALLION_HOME at a writable folder, then rerun",
    ),
)
