"""A class-data archive of the local Spark driver (the JVM's AppCDS), so a run's driver maps the
classes of Spark, Scala and Iceberg already parsed and verified instead of loading them again.

``medallion jars`` records it once per machine beside the jars: it runs the starter project of
``medallion init`` in a temporary folder with ``-XX:ArchiveClassesAtExit``, and the driver of
every later run starts with ``-XX:SharedArchiveFile`` (bench M: the starter project 21.3 s ->
18.0 s wall, its driver's start 5.5 -> 4.3 s and its steps 14.5 -> 11.0 s). The JVM checks the
archive against its own build and classpath and, when they differ (a JDK update, other jars),
starts as if there were none; the CDS log is off, so that never reaches the console.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from medallion_assets.jvm.jars import MANIFEST

ARCHIVE = "driver-classes"  # + "-<runtime key>.jsa"
# Archives kept per jar folder (one per Python environment and JDK that records one): those a
# driver mapped last, after those of environments since deleted are removed, so a virtualenv in
# use keeps its archive when others record theirs (five fresh clones' `medallion jars` pruned
# the working copy's, and each of its runs then started its driver ~2 s slower, loading 15,000
# classes from the jars again; three did on 2026-12-06, the clones' folders still there).
KEPT = 3
_QUIET = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
RECORD = "record:"  # MEDALLION_SPARK_CLASS_ARCHIVE=record:PATH: write the archive at exit
# How the driver is given the jars, part of the archive's key: an archive recorded with them
# elsewhere (``spark.jars``, before 2026-11-28) would not map, and ``medallion jars`` records
# again instead of finding one.
CLASSPATH = "driver-classpath"


def archive_file(jars: Path) -> Path:
    """Where the archive of the driver that loads the jars of ``jars`` is kept: one per
    pyspark installation and JDK, since the JVM maps an archive only on the classpath and the
    JVM it was recorded with (two virtualenvs share the jar folder, not pyspark's jars), and
    the folder's jars (medallion's own jar, added to a folder fetched before it, is one more on
    the classpath)."""
    return jars / f"{ARCHIVE}-{runtime_key(jars)}.jsa"


def runtime_key(jars: Path) -> str:
    """12 hex of where pyspark's jars and the ``java`` that Spark launches are, and of the
    manifest of ``jars``."""
    try:
        listed = (jars / MANIFEST).read_text()
    except OSError:
        listed = ""
    where = "|".join([*(str(path) for path in _runtime()), CLASSPATH, listed])
    return hashlib.sha256(where.encode()).hexdigest()[:12]


def _runtime() -> tuple[Path, Path]:
    """(pyspark's jars folder, the ``java`` Spark launches), resolved."""
    spec = importlib.util.find_spec("pyspark")
    pyspark = Path(spec.origin).parent if spec is not None and spec.origin else Path("?")
    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else Path(shutil.which("java") or "java")
    return pyspark.resolve() / "jars", java.resolve()


def _owner(archive: Path) -> Path:
    """The file beside ``archive`` naming the pyspark jars and ``java`` it was recorded with."""
    return archive.with_suffix(".where")


def name_owner(archive: Path) -> None:
    """Write beside ``archive`` the pyspark jars and ``java`` of this environment, whose
    archive it is (``_prune`` removes it once they are gone)."""
    with contextlib.suppress(OSError):  # a read-only cache: the archive is kept by its use
        _owner(archive).write_text("".join(f"{path}\n" for path in _runtime()))


def _gone(archive: Path) -> bool:
    """Whether the environment that recorded ``archive`` is gone (its virtualenv deleted, or
    its JDK): no driver maps it again. Unknown (recorded before 2026-12-06): not gone."""
    try:
        paths = _owner(archive).read_text().splitlines()
    except OSError:
        return False
    return any(not Path(path).exists() for path in paths)


def _remove(archive: Path) -> None:
    archive.unlink(missing_ok=True)
    _owner(archive).unlink(missing_ok=True)


def _prune(jars: Path, keep: Path) -> None:
    """Remove the archives of environments that are gone, then keep those used last (``keep``
    among them): a temporary clone's archive goes before a virtualenv still in use."""
    archives = sorted(jars.glob(f"{ARCHIVE}-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    live = []
    for archive in archives:
        if archive != keep and _gone(archive):
            _remove(archive)
        else:
            live.append(archive)
    for old in [a for a in live if a != keep][KEPT - 1 :]:
        _remove(old)
    (jars / f"{ARCHIVE}.jsa").unlink(missing_ok=True)  # one name for all, before 2026-11-27


def java_options(setting: str, jars: Path) -> str:
    """The driver's JVM options for ``MEDALLION_SPARK_CLASS_ARCHIVE``: ``auto`` maps the
    jar folder's archive when there is one, ``off`` nothing, a path that archive,
    ``record:PATH`` writes one at exit.

    >>> java_options("off", Path("/jars")), java_options("auto", Path("/nonexistent"))
    ('', '')
    >>> java_options("record:/tmp/a.jsa", Path("/jars"))
    '-XX:ArchiveClassesAtExit=/tmp/a.jsa -Xlog:cds=off -Xlog:cds+dynamic=off'
    """
    if setting == "off":
        return ""
    if setting.startswith(RECORD):
        return " ".join((f"-XX:ArchiveClassesAtExit={setting.removeprefix(RECORD)}", *_QUIET[1:]))
    archive = archive_file(jars) if setting == "auto" else Path(setting)
    if not archive.is_file():
        return ""
    with contextlib.suppress(OSError):  # used now: kept by ``_prune`` (a read-only cache: not)
        os.utime(archive)
    return " ".join((f"-XX:SharedArchiveFile={archive}", *_QUIET))


class ArchiveNotRecorded(RuntimeError):
    """The training run that records the archive did not finish; runs work without it."""


def record(jars: Path, timeout: float = 600.0) -> float:
    """Record the archive of ``jars``'s folder from a run of the starter project in a
    temporary folder, replacing any old one only when the run succeeded; its seconds."""
    started = time.perf_counter()
    target = archive_file(jars)
    with tempfile.TemporaryDirectory(prefix="medallion-cds-") as work:
        recorded = Path(work) / target.name
        env = {
            **os.environ,
            "MEDALLION_HOME": str(Path(work) / "state"),
            "MEDALLION_SPARK_JARS": str(jars),
            "MEDALLION_SPARK_CLASS_ARCHIVE": RECORD + str(recorded),
        }
        for variable in ("MEDALLION_LAKE", "MEDALLION_LAKE_CATALOG", "MEDALLION_CONTROL_URL"):
            env.pop(variable, None)  # the training run keeps to its temporary folder
        project = Path(work) / "project"
        cli = [sys.executable, "-c", "from medallion_assets.cli import main; main()"]
        for command in (["init", str(project)], ["run", "--project", str(project)]):
            try:
                done = subprocess.run(
                    cli + command, env=env, capture_output=True, text=True, timeout=timeout
                )
            except subprocess.TimeoutExpired:
                raise ArchiveNotRecorded(
                    f"`medallion {command[0]}` took over {timeout:.0f} s"
                ) from None
            if done.returncode != 0:
                last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
                raise ArchiveNotRecorded(f"`medallion {command[0]}` failed: {last[0][:200]}")
        if not recorded.is_file():
            raise ArchiveNotRecorded("the driver JVM wrote no archive at exit")
        partial = target.with_suffix(".partial")
        shutil.copyfile(recorded, partial)
        partial.replace(target)
        name_owner(target)
        _prune(jars, target)
    return time.perf_counter() - started
