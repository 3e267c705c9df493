"""What every command shares: ``--project``, loading the catalog, clear failures, and output
that never shows a password."""

from __future__ import annotations

import functools
import getpass
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TextIO, TypeVar

import click

from medallion_assets.catalog import Catalog, CatalogError, load_catalog
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.credentials import MaskedFileHandler, mask_credentials
from medallion_assets.settings import MedallionSettings

P = ParamSpec("P")
R = TypeVar("R")

project_option = click.option(
    "--project",
    "project",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default="current folder",
    help="Project folder holding sql/ and metadata/.",
)

# `medallion run` and `medallion plan`: how many steps of a run execute at a time.
max_workers_option = click.option(
    "--max-workers",
    type=click.IntRange(min=1),
    default=None,
    help="Steps at a time, on threads over one Spark (default: MEDALLION_MAX_WORKERS, else "
    "the machine's cores); 1 runs one table after another.",
)


def settings_for(project: Path) -> MedallionSettings:
    """The settings the ``medallion`` command read when it started, for ``project``."""
    context = click.get_current_context(silent=True)
    settings = context.find_object(MedallionSettings) if context is not None else None
    if settings is None:  # a command invoked on its own, outside the `medallion` group
        settings = MedallionSettings.from_env(os.environ)
    return settings.for_project(project)


def load(project: Path) -> Catalog:
    """Load the catalog or exit 2 listing every problem."""
    try:
        return load_catalog(project)
    except CatalogError as error:
        does_not_load(project, error)


def does_not_load(project: Path, error: CatalogError) -> NoReturn:
    """Print every problem of a project that does not load, and exit 2."""
    problems(f"the project at {project} does not load", error.issues)


def problems(what: str, issues: Iterable[CatalogIssue]) -> NoReturn:
    """``error: <what>:`` and one indented line per problem on stderr, then exit 2."""
    click.echo(f"error: {what}:", err=True)
    for issue in issues:
        click.echo(f"  {issue}", err=True)
    sys.exit(2)


def checked_before_spark(project: Path, settings: MedallionSettings) -> Catalog:
    """Preflight (``medallion_assets.preflight``) before a command starts Spark: each warning
    said on stderr; each problem said in one line with its fix, then exit 2, within seconds
    (``medallion doctor`` prints every check). Returns the project it loaded, for the command
    to run (the project is loaded once per process)."""
    # boto3, pyiceberg and the warehouse drivers: loaded only by the commands that run tables
    from medallion_assets.preflight import preflight

    catalog = load(project)
    findings = preflight(settings, catalog)
    for found in findings:
        if found.status == "warning":
            click.echo(f"warning: {found.line}", err=True)
    problems = [found for found in findings if found.failed]
    for found in problems:  # each line names the problem and its fix; nothing was run
        click.echo(f"error: {found.line}", err=True)
    if problems:
        sys.exit(2)
    return catalog


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def known_table(func: Callable[P, R]) -> Callable[P, R]:
    """Turn an unknown table or column (KeyError from the graph) into a one-line error."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except KeyError as error:
            fail(str(error.args[0]) if error.args else "unknown table")

    return wrapper


class MaskedStream:
    """A text stream that writes everything through ``mask_credentials``: the last line of
    defence for output no message site masked (a library's traceback, a warning, a print).
    It has no ``buffer``, so nothing can write around it in bytes."""

    def __init__(self, stream: TextIO, secrets: Iterable[str]):
        self._stream = stream
        self.secrets = frozenset(secrets)

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._stream.write(mask_credentials(text, self.secrets))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self._stream, name)


def mask_output(secrets: Iterable[str]) -> None:
    """Mask this process's stdout and stderr from now on (Dagster's console log and compute
    logs write through them too)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, MaskedStream):
            setattr(sys, name, MaskedStream(stream, secrets))


class _MaskedFile(MaskedFileHandler):
    """Python's root log of a command (marks the handler so a second call adds none)."""

    def __init__(self, path: Path, secrets: Iterable[str]):
        super().__init__(path, secrets)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))


def spark_log_of(settings: MedallionSettings) -> Path:
    """Where a command sends Spark's console output: ``$MEDALLION_SPARK_LOG``, else
    ``<state>/logs/spark.log``, beside Python's own log."""
    return settings.spark_log_file


def log_python_to(path: Path, secrets: Iterable[str]) -> None:
    """Send what libraries log on Python's root logger to ``path`` (masked), never to the
    console: without a root handler, ``logging.exception`` in a library (py4j, when the Spark
    driver dies under a call) sets one up on stderr and prints its traceback between the
    run's lines. Loggers with their own handlers (Dagster's) are left as they are."""
    root = logging.getLogger()
    if any(isinstance(handler, _MaskedFile) for handler in root.handlers):
        return
    root.addHandler(_MaskedFile(path, secrets))


def native_stderr_to(path: Path) -> None:
    """Send what native libraries write straight to the process's stderr (Arrow's C++ S3
    filesystem under pyiceberg: ``s3fs.cc:... got error embedded in a 200 OK response:
    SlowDown``, retried and harmless) to ``path``, while Python's own stderr (the run's
    ``error:`` lines) stays on the console. Only when Python's stderr is the process's file
    descriptor 2 (a terminal, a pipe), not a test runner's capture; once per process."""
    try:
        if sys.stderr.fileno() != 2:
            return
    except (AttributeError, OSError, ValueError):  # io.StringIO and the like: no descriptor
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    console = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 2)
    os.close(log)
    encoding = sys.stderr.encoding or "utf-8"
    sys.stderr = open(console, "w", buffering=1, encoding=encoding, errors="backslashreplace")  # noqa: SIM115 - the process's stderr from now on


def operator(changed_by: str | None) -> str:
    """Who a change is recorded as: ``--by``, else ``user@host`` of the shell running it."""

    return changed_by or f"{getpass.getuser()}@{socket.gethostname()}"
