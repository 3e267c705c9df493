"""Benchmark G's side ``sdp-iceberg``: Spark Declarative Pipelines writing its materialized views
into the lake's own Iceberg catalog (a JDBC catalog on a SQLite file), as `medallion run` does.

Per repetition, off the clock: a copy of the template's ``catalog.db`` (its bronze tables point
at the template's metadata and data files, which nothing writes; the copy's warehouse is the
repetition's own folder, so repetitions never see each other's outputs), a namespace ``sdp``
in it, and an SDP project: every bronze table a ``CREATE TEMPORARY VIEW`` over the Iceberg
table ``lake.bronze.<table>`` (its main branch: the published data), every silver and gold
table the same ``CREATE MATERIALIZED VIEW`` as the ``sdp`` side's, which the spec's
``catalog: lake`` / ``database: sdp`` place in the Iceberg catalog (``lake.sdp.<flat name>``).

How Spark reaches the catalog: the spec's ``configuration`` registers catalog ``lake`` with the
settings our own session uses (``LakeCatalog.spark_conf``); `spark-pipelines` hands
spark-submit's own options to the Spark Connect server it starts, so the lake's jars go on that
server's classpath with the same ``--conf`` our local driver gets (``jvm.driver.jar_conf``).

Outputs for the checker: each view's Iceberg table's current data files (read through
pyiceberg; a table with delete files would not be its data files alone, and is refused).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

NAMESPACE = "sdp"


def lake_catalog(folder: Path) -> Any:
    """The repetition's Iceberg catalog: ``folder/lake/catalog.db``, warehouse ``folder/lake``."""
    from medallion_assets.lake.catalog import LakeCatalog

    lake = folder / "lake"
    return LakeCatalog.parse(f"sqlite:///{(lake / 'catalog.db').resolve()}", str(lake.resolve()))


def _pyiceberg(folder: Path) -> Any:
    from pyiceberg.catalog import load_catalog as load_iceberg

    return load_iceberg("lake", **lake_catalog(folder).pyiceberg_properties())


def project(project: Path, template_lake: Path, folder: Path, settings: dict[str, str]) -> Path:
    """Write the repetition's catalog copy and SDP project; the spec's path."""
    from bench.silver_gold import flat, materialized_views, sdp_spec
    from medallion_assets.catalog import load_catalog
    from medallion_assets.lake.catalog import SPARK_CATALOG

    (folder / "lake").mkdir(parents=True)
    shutil.copy2(template_lake / "catalog.db", folder / "lake" / "catalog.db")
    _pyiceberg(folder).create_namespace(NAMESPACE)
    catalog = load_catalog(project)
    transformations = folder / "transformations"
    transformations.mkdir()
    for name, dataset in catalog.datasets.items():
        if dataset.layer == "bronze":
            text = f"CREATE TEMPORARY VIEW {flat(name)} AS SELECT * FROM {SPARK_CATALOG}.{name}\n"
            (transformations / f"{flat(name)}.sql").write_text(text, encoding="utf-8")
    materialized_views(catalog, transformations)
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
    lake_conf = {k: v for k, v in lake_catalog(folder).spark_conf().items() if k.startswith(prefix)}
    target = f"catalog: {SPARK_CATALOG}\ndatabase: {NAMESPACE}\n"
    return sdp_spec(folder, "medallion_bench_iceberg", settings | lake_conf, target)


def server_options(env: dict[str, str]) -> list[str]:
    """spark-submit options for the Spark Connect server `spark-pipelines` starts: the lake's
    jars as our own local driver gets them (``MissingJars`` when `medallion jars` has not
    fetched them)."""
    from medallion_assets.jvm.driver import jar_conf
    from medallion_assets.settings import MedallionSettings

    key, value = jar_conf(MedallionSettings.from_env(env))
    return ["--conf", f"{key}={value}"]


def outputs(folder: Path, catalog: Any) -> dict[str, list[str]]:
    """Silver/gold table -> its materialized view's current Iceberg data files."""
    from bench.silver_gold import flat

    iceberg = _pyiceberg(folder)
    found: dict[str, list[str]] = {}
    for name, dataset in catalog.datasets.items():
        if dataset.layer == "bronze":
            continue
        try:
            table = iceberg.load_table(f"{NAMESPACE}.{flat(name)}")
        except Exception:  # no such table: the checker reports it missing
            found[name] = []
            continue
        tasks = list(table.scan().plan_files())
        if any(task.delete_files for task in tasks):
            raise RuntimeError(f"{NAMESPACE}.{flat(name)} has delete files: not its data files")
        found[name] = [task.file.file_path for task in tasks]
    return found
