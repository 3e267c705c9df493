"""medallion_assets: a metadata-driven medallion ETL as a Dagster code location on Spark.

The pure core (``catalog``, ``lineage`` and the operator features' decisions) imports neither
Dagster nor Spark; ``docs/layout.md`` walks the folders from the bottom up. The one name at the
top, ``MedallionProject``, is the Dagster component (``type: medallion_assets.MedallionProject``
in a defs.yaml); it is imported when first asked for, so the core stays free of Dagster.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["MedallionProject"]


def __getattr__(name: str) -> Any:
    if name == "MedallionProject":
        # Dagster: only when the component is asked for (a defs.yaml's type, dg's registry)
        from medallion_assets.adapters.component import MedallionProject

        return MedallionProject
    raise AttributeError(f"module 'medallion_assets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "MedallionProject"])
