"""How this machine's Spark driver JVM is launched: the jars it is given and its Java options
(the JIT it compiles with and its class-data archive). Read by ``spark-submit`` when a session
starts a local driver or a cluster's client-mode driver."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_assets.jvm import class_archive, local_fs
from medallion_assets.jvm.jars import jar_folder

if TYPE_CHECKING:
    from medallion_assets.settings import MedallionSettings


def spark_jars(settings: MedallionSettings) -> tuple[Path, ...]:
    """The JVM packages a session started here puts on Spark's classpath (none for Spark
    Connect, whose server has its own); ``MissingJars`` (one line naming what is missing and
    the command that fetches it) when the folder is incomplete."""
    if settings.spark_remote:
        return ()

    return jar_folder(settings.jars_folder).jars


def jar_conf(
    settings: MedallionSettings, conf: Mapping[str, object] | None = None
) -> tuple[str, str]:
    """The Spark setting that puts ``spark_jars`` on the classpath. A local driver's executors
    are its own threads: the jars go on the JVM's own classpath (``spark.driver.extraClassPath``),
    where its class-data archive covers their classes too. Through ``spark.jars`` each run's
    first task would copy them (~120 MB) into Spark's temporary folder and load them again
    from there. A cluster's executors get them from the driver (``spark.jars``).

    ``conf``: the session's other Spark settings; jars it names under the same key join these.
    """
    named = [str(jar) for jar in spark_jars(settings)]
    key, sep = ("spark.driver.extraClassPath", os.pathsep)
    if not settings.local_driver:
        key, sep = ("spark.jars", ",")
    if conf and conf.get(key):
        named.append(str(conf[key]))
    return key, sep.join(named)


def local_conf(settings: MedallionSettings) -> dict[str, str]:
    """A local driver's own settings of its jars: ``file:`` served by medallion's class that
    creates files without a ``chmod`` process each, when the jar folder holds it
    (``local_fs``). A cluster's executors keep Hadoop's: they may run another build."""
    return local_fs.spark_conf(spark_jars(settings)) if settings.local_driver else {}


# C1 only; the JVM then reserves a client VM's 48 MB of code cache, which Spark's generated
# code fills within a demo run ("CodeCache is full. Compiler has been disabled." on the
# console, and everything after it interpreted): the tiered default's 240 MB instead.
QUICK_JIT_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")
QUICK_JIT = " ".join(QUICK_JIT_FLAGS)
# At most this many cores, a local driver's C2 compiler threads compete with its task threads.
QUICK_JIT_MAX_CORES = 4


def driver_java_options(settings: MedallionSettings, cores: int | None = None) -> str:
    """The local driver JVM's options for ``settings.spark_jit``: C1 only (``quick``) or the
    JVM's tiered default (``full``, no option). ``auto`` is quick for a ``local`` master on at
    most 4 cores (``cores``: the machine's, by default). A run is a fresh JVM, so it pays the
    JIT's warm-up every time; on 2 cores the sequential demo run spent 40 s of its driver's
    104 s of CPU in C2 compiler threads, time the tasks then wait for (README, bench G). C1's
    code is slower in long hot loops, so a bigger machine or a cluster keeps the full JIT."""
    jit = settings.spark_jit
    if jit == "auto":
        count = cores if cores is not None else (os.cpu_count() or 1)
        jit = "quick" if settings.local_driver and count <= QUICK_JIT_MAX_CORES else "full"
    archive = class_archive.java_options(settings.spark_class_archive, settings.jars_folder)
    return " ".join(o for o in (QUICK_JIT if jit == "quick" else "", archive) if o)
