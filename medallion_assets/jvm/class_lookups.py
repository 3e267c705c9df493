"""Remember, in a Spark driver started here, the class names its class path does not have.

Spark compiles the code of every query stage with Janino, and Janino resolves each simple
name of that code by asking the class loader for it in several packages in turn: most of
those names are not there. A miss walks every jar of the class path (~330 with the lake's)
and builds two exceptions; a rerun of the demo compiles ~580 classes and pays ~2 s of a
core for it (bench O, ``bench/README.md``). ``MissCachingClassLoader`` sits between Spark and
the driver's own class loader (the JVM's, or spark-submit's holding ``spark.jars``), whose
jars are fixed when the JVM is launched, so a name missing once is missing for good: it
answers a name it has seen missing from memory.

Spark asks the calling thread's context class loader (``Utils.getContextOrSparkClassLoader``):
the thread that creates the SparkContext passes its loader on to the local executor's task
threads, and each thread that plans queries (a step's) uses its own. A jar added later
(``ADD JAR``, an executor's ``addJar``) goes to Spark's own loaders, which ask this one first
and then their jars, so it is still found. Compiled in the driver by Janino itself, which
every Spark driver has, so nothing is built or shipped beside the package; its class files are
kept beside Spark's jars, and a later driver loads them instead of compiling again (Janino,
itself cold in a driver just started, took ~0.2 s of the driver's start).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext

log = logging.getLogger(__name__)

LOADER_CLASS = "MissCachingClassLoader"

SOURCE = """
public class MissCachingClassLoader extends ClassLoader {
    private final java.util.Set missing = java.util.concurrent.ConcurrentHashMap.newKeySet();

    public MissCachingClassLoader(ClassLoader parent) { super(parent); }

    public boolean remembers(String name) { return missing.contains(name); }

    public int remembered() { return missing.size(); }

    protected Class loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (missing.contains(name)) throw new MissingClass(name);
        try {
            return getParent().loadClass(name);
        } catch (ClassNotFoundException e) {
            missing.add(name);
            throw e;
        }
    }
}

class MissingClass extends ClassNotFoundException {
    MissingClass(String name) { super(name); }

    // Thrown for a name already known missing: its stack trace would tell nothing new.
    public synchronized Throwable fillInStackTrace() { return this; }
}
"""

_made: dict[int, Any] = {}  # id of the driver's gateway -> its loader (a py4j JavaObject)
_lock = threading.Lock()
_threads = threading.local()  # .gateway: the gateway whose loader this thread uses


def launch_driver(options: Mapping[str, object], keep_in: Path | None = None) -> None:
    """Launch the local driver JVM with a session builder's ``options`` when no SparkContext
    runs, and cache class lookups on the calling thread before the context is made there:
    the local executor's task threads take their class loader from that thread. The
    builder's ``getOrCreate`` then finds the JVM up and makes the context with the same
    options. ``keep_in``: a folder (Spark's jars') where the loader's compiled class files
    are kept for the next driver."""
    if SparkContext._active_spark_context is None:
        conf = SparkConf()
        for key, value in options.items():
            conf.set(key, str(value))
        SparkContext._ensure_initialized(conf=conf)
    use_on_this_thread(None if keep_in is None else kept_folder(keep_in))


def kept_folder(jars: Path) -> Path:
    """Where the loader's class files are kept in the folder ``jars``: one per source."""
    return jars / f"class-lookups-{hashlib.sha256(SOURCE.encode()).hexdigest()[:12]}"


def use_on_this_thread(kept: Path | None = None) -> None:
    """Make the driver's miss-caching loader the calling thread's context class loader (made
    the first time, once per driver JVM). Never fails a step: without it Spark only looks
    names up the slow way."""
    gateway = SparkContext._gateway
    if gateway is None or getattr(_threads, "gateway", None) == id(gateway):
        return
    try:
        thread = gateway.jvm.java.lang.Thread.currentThread()
        current = thread.getContextClassLoader()
        loader = _loader(gateway, current, kept)
        # Only over the loader it caches for: a thread given another one (a session's jars)
        # keeps it.
        if current is not None and current.equals(loader.getParent()):
            thread.setContextClassLoader(loader)
    except Exception as error:  # an older Janino, a JVM going away: Spark works without it
        log.debug("class lookups are not cached on this thread: %s", error)
        return
    _threads.gateway = id(gateway)


def _loader(gateway: Any, current: Any, kept: Path | None) -> Any:
    """The driver's miss-caching loader, made the first time over ``current``: the context
    class loader of the driver's threads, whose jars spark-submit fixed when it launched the
    JVM (the lake's jars for a cluster's driver, through ``spark.jars``). ``kept``: the folder
    of its class files (``kept_folder``), if any."""
    with _lock:
        made = _made.get(id(gateway))
        if made is None:
            jvm = gateway.jvm
            parent = (
                current if current is not None else jvm.java.lang.ClassLoader.getSystemClassLoader()
            )
            loader_class = _loader_class(gateway, parent, kept)
            arguments = gateway.new_array(jvm.java.lang.Object, 1)
            arguments[0] = parent
            made = loader_class.getConstructors()[0].newInstance(arguments)
            _made.clear()  # a driver started again: the old JVM's loader is gone with it
            _made[id(gateway)] = made
        return made


def _loader_class(gateway: Any, parent: Any, folder: Path | None) -> Any:
    """The loader's class: from the class files a driver kept in ``folder`` before, else
    compiled now by Janino over ``parent`` (and its files kept there)."""
    jvm = gateway.jvm
    if folder is not None and (folder / f"{LOADER_CLASS}.class").is_file():
        try:
            urls = gateway.new_array(jvm.java.net.URL, 1)
            urls[0] = jvm.java.io.File(str(folder)).toURI().toURL()
            # Over the JVM's own classes alone, which are all the class needs: through
            # ``parent`` its name would first be missed in each of the driver's jars.
            return jvm.java.net.URLClassLoader(urls, None).loadClass(LOADER_CLASS)
        except Exception as error:  # a damaged file: compiled again, and kept again
            log.debug("the kept class files in %s do not load: %s", folder, error)
    compiler = jvm.org.codehaus.janino.SimpleCompiler()
    compiler.setParentClassLoader(parent)
    compiler.cook(SOURCE)
    if folder is not None:
        _keep(
            folder, {f.getThisClassName(): bytes(f.toByteArray()) for f in compiler.getClassFiles()}
        )
    return compiler.getClassLoader().loadClass(LOADER_CLASS)


def _keep(folder: Path, classes: Mapping[str, bytes]) -> None:
    """Write the class files into ``folder`` whole or not at all (a read-only cache: not)."""
    with contextlib.suppress(OSError):
        made = Path(tempfile.mkdtemp(prefix=".class-lookups-", dir=folder.parent))
        try:
            for name, code in classes.items():
                (made / f"{name}.class").write_bytes(code)
            if folder.exists():  # damaged: the new ones replace them
                shutil.rmtree(folder)
            os.replace(made, folder)
        finally:
            shutil.rmtree(made, ignore_errors=True)  # what another driver's files replaced
