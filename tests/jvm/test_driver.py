"""The local Spark driver's launch: the jars on its classpath and the JIT it compiles with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from medallion_assets.jvm.driver import QUICK_JIT, QUICK_JIT_FLAGS, driver_java_options, jar_conf
from medallion_assets.settings import MedallionSettings


@pytest.mark.parametrize(
    ("env", "cores", "quick"),
    [
        ({}, 2, True),
        ({}, 4, True),
        ({}, 8, False),
        ({"MEDALLION_SPARK_MASTER": "spark://127.0.0.1:7077"}, 2, False),
        ({"MEDALLION_SPARK_JIT": "quick"}, 64, True),
        ({"MEDALLION_SPARK_JIT": "full"}, 2, False),
    ],
)
def test_a_local_driver_on_few_cores_compiles_with_c1_only(env, cores, quick, tmp_path: Path):
    settings = MedallionSettings.from_env({**env, "MEDALLION_SPARK_CLASS_ARCHIVE": "off"}, tmp_path)
    assert driver_java_options(settings, cores) == (QUICK_JIT if quick else "")


@pytest.mark.slow
def test_the_driver_jvm_runs_with_the_jit_its_settings_chose(spark):
    """The option reaches the JVM spark-submit launched (the test session's defaults)."""
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(bean.getInputArguments())
    chosen = driver_java_options(MedallionSettings.from_env({}))
    quick = all(flag in arguments for flag in QUICK_JIT_FLAGS)
    assert quick == chosen.startswith(QUICK_JIT)
    if (os.cpu_count() or 1) <= 4:
        assert quick  # this machine's default: the measured case (bench G)
    code_cache = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    pools = code_cache.getMemoryPoolMXBeans()
    reserved = sum(
        p.getUsage().getMax()
        for p in pools
        if "CodeHeap" in p.getName() or p.getName() == "CodeCache"
    )
    assert reserved >= 200 * 2**20  # not the 48 MB C1 alone gets, which Spark's code fills


def test_a_local_driver_has_the_jars_on_its_own_classpath_a_cluster_ships_them(tmp_path: Path):
    """Local: the JVM's classpath (its class-data archive covers them, and no task copies
    them); a cluster's executors get them through ``spark.jars``."""
    local = MedallionSettings.from_env({}, tmp_path)
    key, value = jar_conf(local)
    assert key == "spark.driver.extraClassPath"
    assert any("iceberg-spark-runtime" in p for p in value.split(os.pathsep))
    cluster = MedallionSettings.from_env({"MEDALLION_SPARK_MASTER": "spark://h:7077"}, tmp_path)
    key, value = jar_conf(cluster)
    assert key == "spark.jars"
    assert any("iceberg-spark-runtime" in p for p in value.split(","))
    # A resource's own jars under the same key join the lake's instead of replacing them.
    _, joined = jar_conf(local, {"spark.driver.extraClassPath": "/opt/mine.jar"})
    assert joined.endswith(f"{os.pathsep}/opt/mine.jar") and "iceberg-spark-runtime" in joined
    _, joined = jar_conf(cluster, {"spark.jars": "/opt/mine.jar", "spark.x": "y"})
    assert joined.endswith(",/opt/mine.jar") and "iceberg-spark-runtime" in joined


@pytest.mark.slow
def test_the_local_driver_loads_the_lake_from_its_classpath_and_copies_no_jar(spark):
    """Iceberg's classes come from the JVM's own class loader, and Spark was given no jar to
    copy into its temporary folder on the first task (~120 MB a run)."""
    context = spark.sparkContext
    assert context._jsc.sc().listJars().size() == 0
    jvm = context._jvm
    loaded = jvm.java.lang.Class.forName("org.apache.iceberg.spark.SparkCatalog")
    system = jvm.java.lang.ClassLoader.getSystemClassLoader()
    assert loaded.getClassLoader().equals(system)
