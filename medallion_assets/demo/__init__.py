"""TheWorldShop's raw data for the demo and the tests, generated deterministically from a seed.

No Spark and no Dagster here: generating is pure Python (pyarrow for parquet) and returns the
files; writing them to a folder standing in for S3 or to an S3 endpoint is a separate step.
"""

from medallion_assets.demo.generate import GeneratedFile, generate, write_files
from medallion_assets.demo.world import DemoSettings

__all__ = ["DemoSettings", "GeneratedFile", "generate", "write_files"]
