"""The planner is pure: importing every module of it loads no Dagster, Spark or SQLAlchemy, so
its decisions are testable without a server and ``medallion plan`` stays quick."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import importlib, pkgutil, sys
import medallion_assets.planner as planner
for module in pkgutil.iter_modules(planner.__path__):
    importlib.import_module(f"medallion_assets.planner.{module.name}")
heavy = ("dagster", "pyspark", "py4j", "sqlalchemy")
print(sorted({name.split(".")[0] for name in sys.modules} & set(heavy)))
"""


def test_no_planner_module_imports_dagster_spark_or_a_database():
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
