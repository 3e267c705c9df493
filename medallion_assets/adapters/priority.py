"""``dagster/priority`` and ``medallion/profile`` on every run request the project makes,
read from the control store when the request is made (``profiles.priority`` decides)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.priority import RunPriority, request_priority

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.control_plane import ControlPlane


def priority_of(
    catalog: Catalog, plane: ControlPlane, tables: Collection[str], pipeline: str | None
) -> RunPriority:
    """The priority of a request for ``tables`` (of ``pipeline``, if it belongs to one), with
    the profile overrides in the control store now."""
    overrides = ProfileOverrides(plane.store()).names() if catalog.profiles is not None else {}
    return request_priority(catalog, tables, pipeline, overrides)


def priority_tags(
    catalog: Catalog, plane: ControlPlane, tables: Collection[str], pipeline: str | None
) -> dict[str, str]:
    """The tags that carry ``priority_of``."""
    return priority_of(catalog, plane, tables, pipeline).tags()
