"""Build the Spark session: local by default (two task threads per core), a master URL or a
Spark Connect URL.

Its settings come from the run's ``MedallionSettings`` (read when the resource is set up), never
from import-time reads.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from pyspark import SparkContext
from pyspark.sql import SparkSession

from medallion_assets.catalog.base import CRITICALITIES
from medallion_assets.credentials import MaskedFileHandler, mask_credentials
from medallion_assets.io import spark_lineage
from medallion_assets.io.openlineage import job_namespace
from medallion_assets.io.spark_lineage import Parent
from medallion_assets.jvm import class_lookups
from medallion_assets.jvm.driver import driver_java_options, jar_conf, local_conf
from medallion_assets.lake.catalog import LakeCatalog
from medallion_assets.lake.session import attach
from medallion_assets.runtime import pyspark_loggers

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from medallion_assets.catalog.operations import ProfilesFile
    from medallion_assets.settings import MedallionSettings


APP_NAME = "medallion_assets"


def spark_session(
    settings: MedallionSettings,
    pool_weights: Mapping[str, int] | None = None,
    conf: Mapping[str, object] | None = None,
    parent: Parent | None = None,
) -> SparkSession:
    """Get or create the process's Spark session for these settings: ``spark_remote`` (Spark
    Connect) when set, else ``spark_master``. The driver JVM's console output (banners, log4j
    warnings, Java traces) goes to ``spark_log`` when set instead of the terminal.
    ``pool_weights`` (a FAIR scheduler pool per criticality, e.g. ``{"critical": 3, "low": 1}``)
    take effect when this call starts the Spark driver: a critical table's jobs then get a
    larger share of the executors than a low one's while both run. ``conf``: more Spark
    settings for the driver this call starts (the Spark resource's ``spark_config``).
    ``parent``: the Dagster run whose driver this call starts, the parent of the runs Spark's
    OpenLineage listener reports (``io/spark_lineage.py``: on when OpenLineage is configured
    and the catalog is REST or Glue)."""
    pyspark_loggers.install()  # before any pyspark logger is made on this thread
    # Workers must run the interpreter that has pyspark and the project installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    # The session's settings, in one mapping: the local driver's JVM is launched with them.
    options: dict[str, str] = {"spark.app.name": APP_NAME}
    jar_key = ""
    if not settings.spark_remote:
        jar_key, jar_value = jar_conf(settings, conf)
        options |= local_conf(settings) | {
            "spark.master": settings.master(),
            jar_key: jar_value,
            "spark.driver.memory": settings.driver_memory,
            # Read by spark-submit when this call launches the driver JVM (client mode).
            "spark.driver.extraJavaOptions": driver_java_options(settings),
            "spark.ui.enabled": "false",
            # Stage progress bars would interleave with the run's own lines and logs.
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            # Steps of a run share the executors (adapters/threads.py): FAIR, not first come.
            "spark.scheduler.mode": "FAIR",
        }
        if pool_weights:
            allocation = fair_pools(settings.state_home / "spark", pool_weights)
            options["spark.scheduler.allocation.file"] = str(allocation)
        # The catalog `lake` (loaded when first used) and s3a: a Connect server has its own.
        lake = LakeCatalog.of(settings)
        lake.make_folder()
        options |= lake.spark_conf()
        namespace = job_namespace(os.environ)
        options |= spark_lineage.listener_conf(os.environ, lake.kind, namespace, parent)
    options |= adaptive_conf(settings)
    options |= {key: str(value) for key, value in (conf or {}).items() if key != jar_key}
    builder = SparkSession.builder
    if settings.spark_remote:
        builder = builder.remote(settings.spark_remote)
    for key, value in options.items():
        builder = builder.config(key, value)
    log = settings.spark_log_file if not settings.spark_remote else None
    with _console_to(None if log is None else str(log)):
        if not settings.spark_remote:
            class_lookups.launch_driver(options, keep_in=settings.jars_folder)
        session = builder.getOrCreate()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    if not settings.spark_remote:
        _quiet_accumulator_server(session.sparkContext)
    query_context_logs_to(log, settings.secrets)
    return session


# PySpark's loggers of a failed query's context: each prints the Java stack trace as one JSON
# record on stderr, between the run's lines (and in `dagster dev`'s console); the step's error
# already says what failed and where in the SQL.
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def query_context_logs_to(path: Path | None, secrets: frozenset[str] = frozenset()) -> None:
    """Send PySpark's query-context records to ``path`` (Spark's log, masked), or nowhere."""

    for name in QUERY_CONTEXT_LOGGERS:
        logger = pyspark_loggers.get_logger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        # PySparkLogger gives a handler its JSON formatter; the record (its Java trace
        # included) is masked as a whole.
        logger.addHandler(
            logging.NullHandler() if path is None else MaskedFileHandler(path, secrets)
        )


def reports_lineage(settings: MedallionSettings) -> bool:
    """Whether a driver started for ``settings`` runs OpenLineage's Spark listener."""
    if settings.spark_remote:
        return False
    kind = LakeCatalog.of(settings).kind
    return bool(spark_lineage.listener_conf(os.environ, kind, "", None))


def _quiet_accumulator_server(context: SparkContext) -> None:
    """PySpark's accumulator server (a socket server in the driver's Python) prints a
    traceback to stderr when its JVM goes away mid-update: the driver watch says that in one
    line instead (``driver_watch``)."""
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None


def _ended(code: int) -> str:
    """How a process ended, from its exit status (negative, or 128 + n from a shell: signal n).

    >>> _ended(-9), _ended(137), _ended(1)
    ('was killed (SIGKILL)', 'was killed (SIGKILL)', 'exited with code 1')
    """

    number = -code if code < 0 else code - 128 if code > 128 else None
    if number is not None and number in signal.Signals._value2member_map_:
        return f"was killed ({signal.Signals(number).name})"
    return f"exited with code {code}"


@contextmanager
def driver_watch(on_exit: Callable[[str], None], every: float = 0.5) -> Iterator[None]:
    """Call ``on_exit`` once, saying how, if the local Spark driver's JVM ends while in the
    block (killed, out of memory): every Spark call of every step fails from then on, and a
    run should stop rather than retry each of them. No-op without a local JVM (Spark
    Connect: the server's failures reach the steps as errors)."""
    done = threading.Event()

    def watch() -> None:

        while not done.wait(every):
            gateway = getattr(SparkContext, "_gateway", None)
            process = getattr(gateway, "proc", None)  # set by PySpark's launch_gateway
            code = process.poll() if process is not None else None
            if process is not None and code is not None:
                on_exit(f"the Spark driver (JVM, pid {process.pid}) {_ended(code)}")
                return

    thread = threading.Thread(target=watch, name="spark-driver-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def fair_pools(folder: Path, weights: Mapping[str, int]) -> Path:
    """Write Spark's FAIR scheduler allocation file with one pool per name; a weight below 1 is
    1 (a pool of weight 0 would only run when no other pool wants the executors). Jobs inside
    a pool share it fairly too: first-come, a step's long job kept every freed task thread
    from the step of the same criticality that started after it."""
    pools = "".join(
        f'  <pool name="{escape(name)}"><schedulingMode>FAIR</schedulingMode>'
        f"<weight>{max(1, weight)}</weight><minShare>0</minShare></pool>\n"
        for name, weight in sorted(weights.items())
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fairscheduler.xml"
    path.write_text(f'<?xml version="1.0"?>\n<allocations>\n{pools}</allocations>\n')
    return path


@contextmanager
def _console_to(path: str | None) -> Iterator[None]:
    """Start the driver JVM with its stderr on ``path``: the JVM inherits file descriptor 2 when
    it is launched, so pointing it at the file just for the launch keeps every later JVM line
    there, while Python's own stderr is restored at once. Nothing to do when a session (and so
    the JVM) already exists or no path is given."""

    if path is None or SparkContext._active_spark_context is not None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def step_session(
    base: SparkSession,
    settings: MedallionSettings,
    pool: str,
    job_tag: str | None = None,
    label: str | None = None,
) -> SparkSession:
    """A session of one step over ``base``'s Spark: its own temp views and SQL settings (the
    views a table's SQL registers, its preamble's SET lines), the same SparkContext or Spark
    Connect server, so steps on parallel threads never see each other's names. Spark jobs the
    calling thread starts go to the FAIR scheduler pool ``pool``, carry ``job_tag`` and are
    described as ``label`` (the table: what the Spark UI and its event log say of each job)."""
    if settings.spark_remote:
        session: SparkSession = SparkSession.builder.remote(settings.spark_remote).create()
    else:
        session = base.newSession()
        class_lookups.use_on_this_thread()
        context = session.sparkContext
        context.setLocalProperty("spark.scheduler.pool", pool)
        # A cancelled job (a terminated run) interrupts its running tasks, not only the rest.
        context.setInterruptOnCancel(True)
        if job_tag is not None:
            context.addJobTag(job_tag)  # the thread's jobs, as the pool above
        if label is not None:
            context.setJobDescription(label)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    for key, value in adaptive_conf(settings).items():
        session.conf.set(key, value)
    return session


def adaptive_conf(settings: MedallionSettings) -> dict[str, str]:
    """Shuffles sized by the data: adaptive execution starts with ``shuffle_partitions`` and
    merges them to ~64 MB each by what the map side wrote (not to the cores' count: on a small
    machine that kept 1.3 GB in four tasks), splits skewed join partitions, and picks
    broadcast joins from the sizes it measured."""
    return {
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64m",
        "spark.sql.adaptive.skewJoin.enabled": "true",
    }


def pool_weights(profiles: ProfilesFile | None) -> dict[str, int]:
    """The steps' FAIR pools, one per criticality, weighted as the active profile ranks them
    (equally without profiles): every pool a step may use is declared, so Spark never warns
    of an unconfigured one."""
    weights = dict.fromkeys(CRITICALITIES, 1)
    if profiles is not None:
        ranks = profiles.profiles[profiles.active].settings.criticality_priority
        weights |= {str(criticality): rank for criticality, rank in ranks.items()}
    return weights


class SparkWarmUp:
    """The process's Spark driver started on a background thread, so its start-up (~5 s here)
    overlaps the work before the first step (importing Dagster, loading the catalog and the
    instance). The first step's ``spark_session`` then finds it running. A failure is not
    raised here: the step that asks for the session meets it again and reports it as the
    step's error, where every other Spark failure is reported.

    Until ``wait`` returns (the driver started, or failed to), the JVM's launch may be pointing
    the process's stderr at the Spark log (``_console_to``): callers wait before anything else
    redirects the process's output (a Dagster run's compute-log capture). The lake's catalog
    and the steps' libraries are then readied behind the first step."""

    def __init__(
        self,
        settings: MedallionSettings,
        weights: Mapping[str, int],
        say: Callable[[str], None] | None = None,
    ):
        """``say``: told when the start begins and ends (the first start on a machine takes
        tens of seconds, which would otherwise be silence)."""
        pyspark_loggers.install()  # on this thread, before the warm-up's makes any
        _register_paired_fork_hooks()
        self.error: BaseException | None = None
        self._started = threading.Event()  # the driver is up, or its start failed
        self._say = say or (lambda _line: None)
        where = settings.spark_remote or settings.master()
        self._say(f"starting Spark ({mask_credentials(where)}) ...")
        self._thread = threading.Thread(
            target=self._start, args=(settings, dict(weights)), name="spark-warm-up", daemon=True
        )
        self._thread.start()

    def _start(self, settings: MedallionSettings, weights: Mapping[str, int]) -> None:
        started = time.perf_counter()
        try:
            session = spark_session(settings, weights or None)
        except BaseException as error:  # the first step meets it again and reports it
            self.error = error
            return
        finally:
            self._started.set()
        self._say(f"Spark started in {time.perf_counter() - started:.1f} s")
        # While the first step's first Spark jobs run (this process mostly waiting on the
        # JVM; the step's own attach waits on the lock this one holds): the lake's catalog
        # made in the JVM (its JDBC tables checked, ~0.5-0.9 s), and the libraries the steps
        # import lazily (~0.6-0.8 s on the starter project's bronze step). Not earlier: while
        # the JVM starts, this process imports Dagster on the other core.
        with contextlib.suppress(Exception):  # the step that attaches it says what is wrong
            attach(LakeCatalog.of(settings), session)
        _import_step_libraries()
        _ready_jvm_classes(session)  # a local driver is its own executor

    def wait(self) -> None:
        """Until the driver has started (or failed to): the console is the process's again."""
        self._started.wait()


# What steps import lazily (other commands stay quick): pandera's Spark backend, boto3.
STEP_LIBRARIES = ("pandera.pyspark", "medallion_assets.io.s3_store")


# Spark's case mappings (lower, upper) load ICU on first use: 1.2-5 s of the task using one.
JVM_CLASSES = ("org.apache.spark.sql.catalyst.util.CollationAwareUTF8String",)


def _ready_jvm_classes(session: SparkSession) -> None:
    with contextlib.suppress(Exception):  # Spark Connect, or another Spark's classes
        for name in JVM_CLASSES:
            session._jvm.java.lang.Class.forName(name)  # type: ignore[union-attr]  # initialises it


# Modules whose import registers an at-fork hook pair (before: take a lock or pin state;
# after, in the parent: release it) and which the CLI's main thread imports while the warm-up
# launches the JVM (PySpark's ``Popen`` has a ``preexec_fn``, so the fork runs the hooks).
# Registered between the fork's two halves, a pair runs only its second: "release unlocked
# lock" and filelock's KeyError, each printed with a traceback on the user's console.
PAIRED_FORK_HOOKS = ("concurrent.futures.thread", "filelock")


def _register_paired_fork_hooks() -> None:
    for name in PAIRED_FORK_HOOKS:
        with contextlib.suppress(ImportError):  # filelock is Dagster's, not ours
            importlib.import_module(name)


def _import_step_libraries() -> None:
    for name in STEP_LIBRARIES:
        try:
            importlib.import_module(name)
        except Exception:  # the step that imports it meets the error and says it
            return


def end_driver(timeout: float = 10.0) -> None:
    """End this process's Spark driver JVM and wait for it (at most ``timeout`` s): its
    launcher exits when its input closes, stopping Spark on the way. For a process about to
    end without the interpreter's teardown, which would otherwise leave the JVM stopping
    beside it, still writing its log. Nothing to do without a local driver. The py4j gateway
    is shut first: the JVM's exit waits up to 300 ms for threads in native code, as its
    threads reading py4j's sockets are (the driver ended in ~0.45 s, now ~0.12 s)."""
    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)  # pyspark's launch
    if gateway is None or proc is None or proc.stdin is None:
        return
    gateway.shutdown()  # py4j's: says nothing when the JVM is already gone
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        proc.stdin.close()
        proc.wait(timeout)
