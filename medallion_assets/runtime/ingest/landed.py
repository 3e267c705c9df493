"""Whether anything landed since the last run: a raw object that no ingest manifest holds with
its current ETag (a new key, or a key whose content changed).

`medallion run` starts its Spark driver ahead of the first step only when the run will build:
a first run, a full refresh, or something landed. Otherwise the first step that needs Spark
starts it, and a run with nothing new starts none. A guess about timing only: a table whose
code changed still builds (its step starts Spark), and a rerouted source's replica is not
looked at.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.control.state import RuntimeState
    from medallion_assets.io.object_store import ObjectStore


def landed(catalog: Catalog, store: ObjectStore, state: RuntimeState) -> str | None:
    """The first raw object (``s3://bucket/key``) no manifest holds as it is now, else None."""
    for name, source in catalog.sources.items():
        known = state.known_etags(name)
        for found in store.list(source.bucket, source.prefix):
            if not found.key.endswith("/") and known.get(found.key) != found.etag:
                return found.uri
    return None
