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
every Spark driver has, so nothing is built or shipped beside the package.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
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


def launch_driver(options: Mapping[str, object]) -> None:
    """Launch the local driver JVM with a session builder's ``options`` when no SparkContext
    runs, and cache class lookups on the calling thread before the context is made there:
    the local executor's task threads take their class loader from that thread. The
    builder's ``getOrCreate`` then finds the JVM up and makes the context with the same
    options."""
    if SparkContext._active_spark_context is None:
        conf = SparkConf()
        for key, value in options.items():
            conf.set(key, str(value))
        SparkContext._ensure_initialized(conf=conf)
    use_on_this_thread()


def use_on_this_thread() -> None:
    """Make the driver's miss-caching loader the calling thread's context class loader (made
    the first time, once per driver JVM). Never fails a step: without it Spark only looks
    names up the slow way."""
    gateway = SparkContext._gateway
    if gateway is None or getattr(_threads, "gateway", None) == id(gateway):
        return
    try:
        thread = gateway.jvm.java.lang.Thread.currentThread()
        current = thread.getContextClassLoader()
        loader = _loader(gateway, current)
        # Only over the loader it caches for: a thread given another one (a session's jars)
        # keeps it.
        if current is not None and current.equals(loader.getParent()):
            thread.setContextClassLoader(loader)
    except Exception as error:  # an older Janino, a JVM going away: Spark works without it
        log.debug("class lookups are not cached on this thread: %s", error)
        return
    _threads.gateway = id(gateway)


def _loader(gateway: Any, current: Any) -> Any:
    """The driver's miss-caching loader, made the first time over ``current``: the context
    class loader of the driver's threads, whose jars spark-submit fixed when it launched the
    JVM (the lake's jars for a cluster's driver, through ``spark.jars``)."""
    with _lock:
        made = _made.get(id(gateway))
        if made is None:
            jvm = gateway.jvm
            parent = (
                current if current is not None else jvm.java.lang.ClassLoader.getSystemClassLoader()
            )
            compiler = jvm.org.codehaus.janino.SimpleCompiler()
            compiler.setParentClassLoader(parent)
            compiler.cook(SOURCE)
            loader_class = compiler.getClassLoader().loadClass(LOADER_CLASS)
            arguments = gateway.new_array(jvm.java.lang.Object, 1)
            arguments[0] = parent
            made = loader_class.getConstructors()[0].newInstance(arguments)
            _made.clear()  # a driver started again: the old JVM's loader is gone with it
            _made[id(gateway)] = made
        return made
