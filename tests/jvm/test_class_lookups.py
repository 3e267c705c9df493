"""The local driver's class lookups: a name its class path lacks is answered from memory after
its first miss, on the threads that plan queries and on the executor's task threads."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError

from medallion_assets.jvm import class_lookups
from medallion_assets.runtime.spark_jobs import beside
from medallion_assets.runtime.spark_session import step_session
from medallion_assets.settings import MedallionSettings

pytestmark = pytest.mark.slow


def _chain(loader: Any) -> list[str]:
    names = []
    while loader is not None:
        names.append(loader.getClass().getName())
        loader = loader.getParent()
    return names


def _chain_of_class(error: Py4JJavaError) -> list[str]:
    kind, names = error.java_exception.getClass(), []
    while kind is not None:
        names.append(kind.getName())
        kind = kind.getSuperclass()
    return names


def _this_threads_loader(spark: Any) -> Any:
    return spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()


def test_a_missing_name_is_remembered_and_a_present_class_still_loads(spark):
    loader = _this_threads_loader(spark)
    assert loader.getClass().getName() == class_lookups.LOADER_CLASS
    jvm = spark._jvm
    missing = f"medallion.no_such_package.Missing{uuid.uuid4().hex}"
    assert not loader.remembers(missing)
    for _ in range(2):  # the second answer comes from memory, and is the same answer
        with pytest.raises(Py4JJavaError) as raised:
            jvm.java.lang.Class.forName(missing, False, loader)
        assert "java.lang.ClassNotFoundException" in _chain_of_class(raised.value)
        assert loader.remembers(missing)
    found = jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSession", False, loader)
    application = jvm.java.lang.ClassLoader.getSystemClassLoader()
    assert found.equals(application.loadClass("org.apache.spark.sql.SparkSession"))


def test_task_threads_and_step_threads_look_classes_up_through_it(spark, tmp_path: Path):
    # A query whose code Spark compiles now (a literal no earlier query had).
    literal = uuid.uuid4().int % 1_000_003
    rows = spark.range(50).selectExpr(f"id * {literal} AS x").groupBy("x").count().collect()
    assert len(rows) == 50
    assert _this_threads_loader(spark).remembered() > 0  # Janino's misses went through it
    workers = [
        t
        for t in spark._jvm.java.lang.Thread.getAllStackTraces().keySet()
        if t.getName().startswith("Executor task launch")
    ]
    assert workers, "the query ran no task on the local executor"
    for worker in workers:  # the executor's loader asks it before its own jars
        assert class_lookups.LOADER_CLASS in _chain(worker.getContextClassLoader())

    settings = MedallionSettings.from_env({}, tmp_path)
    seen: dict[str, str] = {}

    def step() -> None:
        session = step_session(spark, settings, "normal", label="gold.a_table")
        seen["step"] = _this_threads_loader(session).getClass().getName()
        work = beside(session, lambda: _this_threads_loader(session).getClass().getName())
        seen["beside"] = work.result(timeout=60)

    thread = threading.Thread(target=step)
    thread.start()
    thread.join(60)
    assert seen == {"step": class_lookups.LOADER_CLASS, "beside": class_lookups.LOADER_CLASS}


def test_a_loader_that_cannot_be_made_leaves_the_thread_as_it_was(spark, monkeypatch):
    def fails(*_: Any) -> Any:
        raise RuntimeError("this Janino cannot compile it")

    monkeypatch.setattr(class_lookups, "_loader", fails)
    seen: dict[str, Any] = {}

    def other_thread() -> None:
        class_lookups.use_on_this_thread()  # no error reaches the step
        seen["loader"] = _chain(_this_threads_loader(spark))

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(60)
    assert seen["loader"] and class_lookups.LOADER_CLASS not in seen["loader"]


def test_a_thread_given_another_loader_keeps_it(spark):
    """The cache wraps the driver's own loader only: a thread whose context class loader is
    another one (a session's jars, say) is left with it."""
    jvm, seen = spark._jvm, {}

    def other_thread() -> None:
        thread = jvm.java.lang.Thread.currentThread()
        urls = spark.sparkContext._gateway.new_array(jvm.java.net.URL, 0)
        own = jvm.java.net.URLClassLoader(urls, thread.getContextClassLoader())
        thread.setContextClassLoader(own)
        class_lookups.use_on_this_thread()
        seen["kept"] = thread.getContextClassLoader().equals(own)

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(60)
    assert seen == {"kept": True}


def test_the_loader_is_compiled_once_and_its_class_files_kept(spark, tmp_path):
    """The driver's start compiled the loader with Janino each time (~0.4 s, Janino cold): its
    class files are kept beside Spark's jars and the next driver loads them; a damaged file is
    compiled again and replaced."""
    gateway, jvm = spark.sparkContext._gateway, spark._jvm
    parent = jvm.java.lang.ClassLoader.getSystemClassLoader()
    folder = tmp_path / "jars" / "class-lookups-0"
    folder.parent.mkdir()
    url_loader = "java.net.URLClassLoader"

    compiled = class_lookups._loader_class(gateway, parent, folder)
    assert compiled.getClassLoader().getClass().getName() != url_loader  # Janino's
    assert sorted(p.name for p in folder.iterdir()) == [
        "MissCachingClassLoader.class",
        "MissingClass.class",
    ]
    kept = class_lookups._loader_class(gateway, parent, folder)
    assert kept.getClassLoader().getClass().getName() == url_loader  # from the files
    arguments = gateway.new_array(jvm.java.lang.Object, 1)
    arguments[0] = parent
    loader = kept.getConstructors()[0].newInstance(arguments)
    missing = f"medallion.no_such_package.Missing{uuid.uuid4().hex}"
    thrown = []
    for _ in range(2):  # py4j knows the class's methods by its name, the compiled one's
        with pytest.raises(Py4JJavaError) as raised:
            jvm.java.lang.Class.forName(missing, False, loader)
        thrown.append(_chain_of_class(raised.value)[0])
    assert thrown == ["java.lang.ClassNotFoundException", "MissingClass"]  # then remembered
    assert loader.getParent().equals(parent)

    (folder / "MissCachingClassLoader.class").write_bytes(b"not a class file")
    again = class_lookups._loader_class(gateway, parent, folder)
    assert again.getClassLoader().getClass().getName() != url_loader
    assert (folder / "MissCachingClassLoader.class").read_bytes()[:4] == b"\xca\xfe\xba\xbe"
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no scratch left


def test_a_run_keeps_the_loader_beside_the_jars(spark):
    jars = MedallionSettings.from_env({}).jars_folder
    kept = class_lookups.kept_folder(jars)
    assert (kept / f"{class_lookups.LOADER_CLASS}.class").is_file()
