"""The preflight checks, in the order a run meets what they check: jars, credentials, the
lake's storage, its catalog, the raw sources, the warehouse."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_assets.credentials import mask_credentials
from medallion_assets.errors import ResourceError
from medallion_assets.preflight import s3 as s3_probe
from medallion_assets.preflight.findings import Finding

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from medallion_assets.catalog import Catalog
    from medallion_assets.settings import MedallionSettings


def preflight(settings: MedallionSettings, catalog: Catalog) -> list[Finding]:
    """Every part checked, in order. A part whose checks need one that failed (S3 without
    credentials) is ``skipped``, not failed twice."""
    findings = _guarded("jars", lambda: [_jars(settings)])
    s3: S3Client | None = None
    if _needs_s3(settings):
        found = _guarded("credentials", lambda: [_credentials()])
        findings += found
        if not found[0].failed:
            s3 = s3_probe.client(settings.s3_endpoint, settings.aws_region)
    findings += _guarded("lake", lambda: list(_lake_storage(settings, s3)))
    findings += _guarded("catalog", lambda: [_catalog(settings)])
    if any(f.line.startswith("cannot reach the S3 endpoint") for f in findings):
        s3 = None  # said once: the raw buckets are on the same endpoint
    findings += _guarded("raw", lambda: list(_raw_sources(settings, catalog, s3)))
    if any(d.target is not None for d in catalog.datasets.values()):
        findings += _guarded("warehouse", lambda: [_warehouse(settings)])
    return findings


def _guarded(part: str, check: Callable[[], list[Finding]]) -> list[Finding]:
    """A check's findings; an error it did not foresee is one failed line, never a traceback."""
    try:
        return check()
    except Exception as error:  # a driver's, a client's: anything a probe may meet
        said = " ".join(mask_credentials(str(error)).split())[:300] or type(error).__name__
        return [Finding(part, "failed", f"the {part} could not be checked: {said}")]


def _needs_s3(settings: MedallionSettings) -> bool:
    lake = settings.lake or ""
    return settings.uses_s3_api or lake.startswith(("s3://", "s3a://"))


def _jars(settings: MedallionSettings) -> Finding:
    # Spark's jars: the folder's listing only, no JVM
    from medallion_assets.jvm.driver import spark_jars

    try:
        jars = spark_jars(settings)
    except ResourceError as error:
        return Finding("jars", "failed", str(error))
    if not jars:
        return Finding("jars", "ok", "Spark Connect: the server has its own jars")
    return Finding("jars", "ok", f"{len(jars)} Spark jars in {settings.jars_folder}")


def _credentials() -> Finding:
    try:
        source = s3_probe.credentials_source()
    except ValueError as error:
        return Finding("credentials", "failed", str(error))
    if source is None:
        return Finding("credentials", "failed", s3_probe.NO_CREDENTIALS)
    return Finding("credentials", "ok", f"AWS credentials from {source}")


def _endpoint(settings: MedallionSettings) -> str:
    return mask_credentials(settings.s3_endpoint) if settings.s3_endpoint else "AWS S3"


def _lake_storage(settings: MedallionSettings, s3: S3Client | None) -> Iterator[Finding]:
    folder = settings.lake_root
    if folder is not None:
        yield _lake_folder(folder.resolve())
        return
    location = settings.lake or ""
    bucket, _, prefix = location.split("://", 1)[1].partition("/")
    if s3 is None:
        yield Finding("lake", "skipped", f"the lake's bucket s3://{bucket}: no credentials")
        return
    where = f"the lake's bucket s3://{bucket} (MEDALLION_LAKE={location})"
    if _catalog_places_tables(settings):
        # A REST catalog or Glue owns its warehouse and hands out each table's location; an
        # S3 Tables bucket (SeaweedFS's, AWS's) may not even answer S3's HEAD, and takes writes
        # only there. The catalog's own check below is what counts.
        yield Finding("lake", "ok", f"{where}: the catalog places its tables in it")
        return
    found = s3_probe.bucket(s3, bucket)
    created = found.state == "missing" and settings.lake_create
    if created:
        found = s3_probe.create_bucket(s3, bucket, settings.aws_region)
    if found.state == "missing":
        yield Finding(
            "lake",
            "failed",
            f"{where} does not exist on {_endpoint(settings)}: create it (`aws s3 mb "
            f"s3://{bucket}`), or set MEDALLION_LAKE_CREATE=1 and the run creates it; "
            "MEDALLION_S3_ENDPOINT, when set, is the lake's endpoint too",
        )
        return
    if found.state != "there":
        yield Finding("lake", "failed", _bucket_problem(where, found, settings))
        return
    written = s3_probe.writable(s3, bucket, prefix)
    if written.state != "there":
        yield Finding("lake", "failed", _bucket_problem(where, written, settings, "write to"))
        return
    made = "was created (MEDALLION_LAKE_CREATE=1)" if created else "is there"
    yield Finding("lake", "ok", f"{where} {made} and takes writes")


def _catalog_places_tables(settings: MedallionSettings) -> bool:
    # the lake's catalog settings (no client made): loaded only when preflight runs
    from medallion_assets.lake.catalog import LakeCatalog

    try:
        return LakeCatalog.of(settings).kind in ("rest", "glue")
    except (ValueError, ResourceError):  # a catalog setting it cannot read: its own check says
        return False


def _bucket_problem(
    where: str, found: s3_probe.Probe, settings: MedallionSettings, verb: str = "read"
) -> str:
    endpoint = _endpoint(settings)
    if found.state == "denied":
        return (
            f"{where}: access denied ({found.detail}) on {endpoint}: these credentials may not "
            f"{verb} it; grant s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on it"
        )
    if found.state == "unreachable":
        return (
            f"cannot reach the S3 endpoint {endpoint} (MEDALLION_S3_ENDPOINT) for {where} "
            f"({found.detail}). Check that it is up and that MEDALLION_S3_ENDPOINT is its URL"
        )
    return f"{where} cannot be used on {endpoint}: {found.detail}"


def _lake_folder(folder: Path) -> Finding:
    """The lake's local folder: made when missing (as the first run makes it), then written."""
    why = _unwritable(folder)
    if why:
        return Finding(
            "lake",
            "failed",
            f"the lake's folder {folder} (MEDALLION_LAKE) cannot be written: {why}; make it "
            "writable by this user or point MEDALLION_LAKE at a folder that is",
        )
    return Finding("lake", "ok", f"the lake's folder {folder} takes writes")


def _unwritable(folder: Path) -> str:
    """Why a file cannot be made in ``folder`` (made when missing), or ""."""
    probe = folder / f".medallion-preflight-{uuid.uuid4().hex}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"preflight")
        probe.unlink()
    except OSError as error:
        return error.strerror or type(error).__name__
    return ""


def _catalog(settings: MedallionSettings) -> Finding:
    # pyiceberg: loaded only when the catalog is reached
    from medallion_assets.lake.catalog import LakeCatalog
    from medallion_assets.lake.versions import open_catalog

    try:
        lake = LakeCatalog.of(settings)
        lake.make_folder()  # the embedded catalog: made on the first run
        open_catalog(lake)
    except (ResourceError, OSError) as error:
        return Finding("catalog", "failed", mask_credentials(str(error), settings.secrets))
    shown = mask_credentials(settings.effective_lake_catalog, settings.secrets)
    return Finding("catalog", "ok", f"the lake's catalog {shown} answers")


def _raw_sources(
    settings: MedallionSettings, catalog: Catalog, s3: S3Client | None
) -> Iterator[Finding]:
    """Each raw bucket once. A missing one is a warning, not a stop: its sources are down, and
    the run routes their tables to a replica or leaves them not built, saying so."""
    if not settings.uses_s3_api:
        where = settings.s3_root.resolve()
        yield Finding("raw", "ok", f"raw objects from the local folder {where}")
        return
    if s3 is None:
        yield Finding("raw", "skipped", "raw sources on S3: not checked (see above)")
        return
    readers: dict[str, list[str]] = defaultdict(list)
    for name, source in sorted(catalog.sources.items()):
        readers[source.bucket].append(name)
        for replica in source.replicas:
            readers[replica.bucket].append(f"{name} (replica)")
    for bucket, names in sorted(readers.items()):
        found = s3_probe.bucket(s3, bucket)
        place = f"raw bucket s3://{bucket} (sources {', '.join(names)})"
        if found.state == "there":
            yield Finding("raw", "ok", f"{place} is there")
        elif found.state == "missing":
            yield Finding(
                "raw",
                "warning",
                f"{place} does not exist on {_endpoint(settings)}: their tables read a replica "
                "or are not built until it is there",
            )
        else:
            yield Finding("raw", "failed", _bucket_problem(place, found, settings))
            if found.state == "unreachable":
                return  # the other buckets are on the same endpoint: said once


def _warehouse(settings: MedallionSettings) -> Finding:
    # the warehouse drivers: loaded only when a project loads tables into one
    from medallion_assets.io.warehouse import warehouse_from_url

    url = settings.effective_warehouse_url
    shown = mask_credentials(url, settings.secrets)
    if settings.warehouse_kind == "duckdb":
        # A file, not a server: nothing to reach, and another run holding its write lock
        # (a run waiting for the run lock) is no fault. Its folder must take the file.
        folder = Path(url.removeprefix("duckdb:///")).expanduser().resolve().parent
        why = _unwritable(folder)
        if why:
            return Finding(
                "warehouse",
                "failed",
                f"the warehouse's folder {folder} (MEDALLION_WAREHOUSE_URL) cannot be written: "
                f"{why}; make it writable by this user or point the URL at a folder that is",
            )
        return Finding("warehouse", "ok", f"the warehouse {shown}: its folder takes writes")
    try:
        warehouse = warehouse_from_url(url)
    except (ResourceError, ValueError) as error:
        return Finding("warehouse", "failed", mask_credentials(str(error), settings.secrets))
    try:
        warehouse.reach()
    except (ConnectionError, OSError, ImportError) as error:
        said = " ".join(mask_credentials(str(error), settings.secrets).split())
        return Finding(
            "warehouse",
            "failed",
            f"cannot reach the warehouse (MEDALLION_WAREHOUSE_URL): {said}. Check that it is "
            "up and the URL is right",
        )
    finally:
        warehouse.close()
    return Finding("warehouse", "ok", f"the warehouse {shown} answers")
