"""Spark's own report of lineage: OpenLineage's Spark listener on the local driver sends, for
each write, the datasets and the column lineage of the plan Spark executed, beside the events
the steps send from the SQL (``events.py``), with the Dagster run as parent.

It is on when OpenLineage is configured (``io.openlineage.configured``) and the lake's catalog
is one the listener can name: an Iceberg REST catalog or Glue. openlineage-spark 1.53.0, the
newest on Maven Central, takes Iceberg's JDBC catalog (the embedded default, and PostgreSQL)
for a Hive metastore and drops every dataset of it (fixed upstream after 1.53: OpenLineage
issue 4677), so with a JDBC catalog the listener stays off rather than send empty events.
Pure: settings in, Spark settings out.

>>> conf = listener_conf({"OPENLINEAGE_URL": "http://ol:5000"}, "rest", "medallion",
...                      Parent("medallion", "daily", "0193a4b2-1111-7222-8333-444455556666"))
>>> conf["spark.extraListeners"], conf["spark.openlineage.parentJobName"]
('io.openlineage.spark.agent.OpenLineageSparkListener', 'daily')
>>> listener_conf({"OPENLINEAGE_URL": "http://ol:5000"}, "jdbc", "medallion", None)
{}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from medallion_assets.io.openlineage import configured

LISTENER = "io.openlineage.spark.agent.OpenLineageSparkListener"
NAMED_CATALOGS = frozenset({"rest", "glue"})  # those openlineage-spark 1.53 can name
_PREFIX = "spark.openlineage."


@dataclass(frozen=True)
class Parent:
    """The Dagster run whose driver this is: the parent of Spark's runs."""

    namespace: str
    job: str
    run_id: str


def listener_conf(
    env: Mapping[str, str], catalog_kind: str, namespace: str, parent: Parent | None
) -> dict[str, str]:
    """Spark settings that put the listener on the driver, or none (see the module)."""
    if catalog_kind not in NAMED_CATALOGS or not configured(env):
        return {}
    conf = {"spark.extraListeners": LISTENER, f"{_PREFIX}namespace": namespace}
    url = env.get("OPENLINEAGE_URL")
    if url:  # else the listener reads OPENLINEAGE__TRANSPORT__* or openlineage.yml itself
        conf |= {f"{_PREFIX}transport.type": "http", f"{_PREFIX}transport.url": url}
        if env.get("OPENLINEAGE_ENDPOINT"):
            conf[f"{_PREFIX}transport.endpoint"] = env["OPENLINEAGE_ENDPOINT"]
        if env.get("OPENLINEAGE_API_KEY"):
            conf[f"{_PREFIX}transport.auth.type"] = "api_key"
            conf[f"{_PREFIX}transport.auth.apiKey"] = env["OPENLINEAGE_API_KEY"]
    if parent is not None:
        for kind in ("parent", "rootParent"):
            conf[f"{_PREFIX}{kind}JobNamespace"] = parent.namespace
            conf[f"{_PREFIX}{kind}JobName"] = parent.job
            conf[f"{_PREFIX}{kind}RunId"] = parent.run_id
    return conf
