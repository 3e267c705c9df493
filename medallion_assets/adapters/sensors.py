"""Sensors that notice new objects under a raw source's S3 prefix and request its bronze table.

The bronze step itself decides what is new from its manifest (in the control store); the sensor
compares the listing with the same manifest, so it requests a run only when there is something
to ingest. A bronze table switched off by the kill switch (its dataset, layer or source) is not
requested.
"""

import hashlib
from collections.abc import Collection
from typing import Any

import dagster as dg

from medallion_assets.adapters.priority import priority_tags
from medallion_assets.adapters.resources import ControlResource, S3Resource
from medallion_assets.adapters.translator import DEFAULT_NAMES, Names
from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.runtime.ingest.source_objects import partition_of, source_of


def build_sensors(
    catalog: Catalog, names: Names = DEFAULT_NAMES, executes: Collection[str] | None = None
) -> list[dg.SensorDefinition]:
    """A new-objects sensor per bronze table the code location executes (None: all)."""
    return [
        _source_sensor(catalog, dataset, names)
        for dataset in catalog.datasets.values()
        if dataset.layer == "bronze" and (executes is None or dataset.name in executes)
    ]


def _source_sensor(catalog: Catalog, dataset: Dataset, names: Names) -> dg.SensorDefinition:
    name, source = source_of(catalog, dataset)
    partitioned = dataset.settings.partitions is not None and source.partition is not None

    @dg.sensor(
        name=names.name(f"new_objects__{name}"),
        asset_selection=[names.key(dataset.name)],
        required_resource_keys={names.resource("s3"), names.resource("control")},
        minimum_interval_seconds=60,
        # Stopped until an operator starts it: opening the UI launches no run by itself.
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=f"Requests {dataset.name} when s3://{source.bucket}/{source.prefix} "
        "has objects not yet ingested (start it in the UI: Automation).",
    )
    # ``**_``: a direct call (a test's) passes the required resources as keywords too.
    def _sensor(context: dg.SensorEvaluationContext, **_: Any) -> dg.SensorResult:
        resources = names.resources_of(context)
        s3: S3Resource = resources.s3
        control: ControlResource = resources.control
        plane = control.plane()
        off = plane.disabled(catalog, [dataset.name])
        if off:
            return dg.SensorResult(skip_reason=off[dataset.name].describe())
        store = s3.store(dataset.system)
        fresh: dict[str | None, list[str]] = {}
        manifests: dict[str | None, dict[str, Any]] = {}  # one read per partition, not per object
        try:
            listed = store.list(source.bucket, source.prefix)
        except FileNotFoundError as missing:  # nothing delivered yet: not an error of the tick
            return dg.SensorResult(skip_reason=f"no raw data yet: {missing}")
        for obj in listed:
            partition = partition_of(source, obj.key) if partitioned else None
            if partitioned and partition is None:
                continue
            if partition not in manifests:
                manifests[partition] = plane.state().manifest(name, partition)
            if manifests[partition].get(obj.key, {}).get("etag") != obj.etag:
                fresh.setdefault(partition, []).append(f"{obj.key}@{obj.etag}")
        priority = priority_tags(catalog, plane, [dataset.name], None)
        requests = [
            dg.RunRequest(
                run_key=hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:24],
                partition_key=partition,
                asset_selection=[names.key(dataset.name)],
                tags={"trigger": names.name(f"new_objects__{name}"), **priority},
            )
            for partition, keys in sorted(fresh.items(), key=lambda kv: kv[0] or "")
        ]
        return dg.SensorResult(run_requests=requests)

    return _sensor
