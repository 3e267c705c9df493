"""Where the lake lives: an Iceberg catalog and a warehouse, and how Spark and pyiceberg reach
them. Pure: no Spark, no JVM.

The catalog is one of

- ``sqlite:///PATH``: Iceberg's JDBC catalog on a SQLite file (the embedded default, under
  ``$MEDALLION_HOME``), no server;
- ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB``: the JDBC catalog on PostgreSQL;
- ``http://…`` or ``https://…``: an Iceberg REST catalog (``https://CLIENT:SECRET@HOST/…``: its
  OAuth2 client credentials, exchanged for a token at ``<uri>/v1/oauth/tokens``);
- ``glue``: AWS Glue, in the account and region of the AWS credential chain.

The warehouse is a local folder or ``s3://BUCKET/PREFIX``; Spark writes the latter through
``s3a://`` (hadoop-aws), with credentials from the AWS chain, never from a setting, so no
configuration value holds a secret except a catalog password, which goes to the JDBC driver as a
property of its own.

>>> lake = LakeCatalog.parse("sqlite:////srv/state/lake_catalog.db", "/srv/state/lake")
>>> lake.kind, lake.warehouse
('jdbc', 'file:/srv/state/lake')
>>> LakeCatalog.parse("sqlite:///c.db", "s3://bucket/lake").warehouse
's3a://bucket/lake'
>>> LakeCatalog.parse("mysql://h/db", "/w")  # doctest: +ELLIPSIS
Traceback (most recent call last):
medallion_assets.lake.catalog.LakeCatalogError: MEDALLION_LAKE_CATALOG='mysql://h/db' is not ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

from medallion_assets.errors import ResourceError
from medallion_assets.settings import EMBEDDED_CATALOG, MedallionSettings
from medallion_assets.settings_fields import lake_location

SPARK_CATALOG = "lake"  # the Spark catalog name: tables are lake.<layer>.<table>
__all__ = ["EMBEDDED_CATALOG", "SPARK_CATALOG", "LakeCatalog", "LakeCatalogError", "S3Endpoint"]


class LakeCatalogError(ResourceError):
    """A lake setting names no catalog or warehouse this runtime can use."""


@dataclass(frozen=True)
class S3Endpoint:
    """An S3 API other than AWS's (moto, MinIO, SeaweedFS): its URL and region."""

    url: str
    region: str


@dataclass(frozen=True)
class LakeCatalog:
    """The Iceberg catalog and warehouse of a project's lake."""

    kind: Literal["jdbc", "rest", "glue"]
    uri: str  # jdbc:sqlite:/…, jdbc:postgresql://…, the REST URL, or "" for Glue
    warehouse: str  # file:/abs/folder or s3a://bucket/prefix
    user: str = ""
    password: str = ""
    s3: S3Endpoint | None = None

    @classmethod
    def of(cls, settings: MedallionSettings) -> LakeCatalog:
        """The lake's Iceberg catalog and warehouse (``MEDALLION_LAKE_CATALOG``,
        ``MEDALLION_LAKE``), reached through the S3 endpoint when one is set."""
        warehouse = settings.lake or str(settings.state_home / "lake")
        s3 = settings.s3_endpoint
        endpoint = S3Endpoint(s3, settings.aws_region) if s3 else None
        return cls.parse(settings.effective_lake_catalog, warehouse, endpoint)

    @classmethod
    def parse(cls, catalog: str, warehouse: str, s3: S3Endpoint | None = None) -> LakeCatalog:
        """The lake ``MEDALLION_LAKE_CATALOG`` and ``MEDALLION_LAKE`` name (both required)."""
        return _parse_catalog(catalog, warehouse_uri(warehouse), s3)

    @property
    def on_s3(self) -> bool:
        return self.warehouse.startswith("s3a://")

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite file of an embedded catalog (its folder must exist before Spark opens it)."""
        return Path(self.uri.removeprefix("jdbc:sqlite:")) if "sqlite" in self.uri else None

    def make_folder(self) -> None:
        """Create the embedded catalog's folder (a first run has none); no-op for a server."""
        if self.sqlite_file is not None:
            self.sqlite_file.parent.mkdir(parents=True, exist_ok=True)

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that register the lake as catalog ``lake``, and s3a for the warehouse
        and raw objects. No Iceberg SQL extensions: Spark 4's own SQL runs Iceberg's ``CALL``
        procedures and MERGE, and the extensions' parser breaks SQL functions (``lake.tables``
        makes branches and tags through Iceberg's Java API instead)."""
        prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
        conf = {
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.warehouse": self.warehouse,
            # HadoopFileIO reads and writes through Hadoop's file systems: file:/ and s3a://.
            f"{prefix}.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO",
            # A new table reads its own commits: no stale cached metadata between a run's steps.
            f"{prefix}.cache-enabled": "false",
        }
        if self.kind == "jdbc":
            conf |= {f"{prefix}.type": "jdbc", f"{prefix}.uri": self.uri}
            # Views and the newer catalog schema; V1 also adds the columns views need.
            conf[f"{prefix}.jdbc.schema-version"] = "V1"
            if self.user:
                conf[f"{prefix}.jdbc.user"] = self.user
            if self.password:
                conf[f"{prefix}.jdbc.password"] = self.password
        elif self.kind == "rest":
            conf |= {f"{prefix}.type": "rest", f"{prefix}.uri": self.uri}
            conf |= {f"{prefix}.{k}": v for k, v in self._rest_auth().items()}
            # A REST catalog names its warehouse as the user does (s3://…), and hands out
            # s3:// locations: Hadoop reads those through s3a too.
            conf[f"{prefix}.warehouse"] = self.rest_warehouse
            conf["spark.hadoop.fs.s3.impl"] = "org.apache.hadoop.fs.s3a.S3AFileSystem"
        else:
            conf[f"{prefix}.type"] = "glue"
        return conf | s3a_conf(self.s3)

    @property
    def rest_warehouse(self) -> str:
        """The warehouse as a REST catalog is told it: ``s3://…``, or the local folder."""
        return re.sub(r"^s3a://", "s3://", self.warehouse)

    def _rest_auth(self) -> dict[str, str]:
        """A REST catalog's OAuth2 client credentials, when the URL gave them."""
        if not self.user:
            return {}
        return {
            "rest.auth.type": "oauth2",
            "credential": f"{self.user}:{self.password}",
            "oauth2-server-uri": self.uri.rstrip("/") + "/v1/oauth/tokens",
        }

    def pyiceberg_properties(self) -> dict[str, str]:
        """Properties for ``pyiceberg.catalog.load_catalog("lake", **properties)``: the same
        catalog, read without a JVM."""
        props: dict[str, str] = {"warehouse": self.warehouse}
        if self.kind == "jdbc":
            props["type"] = "sql"
            props["uri"] = _sqlalchemy_url(self)
            # Spark's JDBC catalog makes its own tables (with a column pyiceberg's lack).
            props["init_catalog_tables"] = "false"
        elif self.kind == "rest":
            props |= {"type": "rest", "uri": self.uri, "warehouse": self.rest_warehouse}
            props |= self._rest_auth()
        else:
            props["type"] = "glue"
        # Throttling (503 SlowDown) retried with backoff, as s3a and boto3 do.
        props["s3.retry-strategy-impl"] = "medallion_assets.lake.s3_retries.PatientS3Retries"
        if self.s3 is not None:
            props |= {
                "s3.endpoint": self.s3.url,
                "s3.region": self.s3.region,
                "s3.force-virtual-addressing": "false",
            }
        return props


def warehouse_uri(value: str) -> str:
    """``MEDALLION_LAKE`` as the warehouse location Spark writes to
    (``settings_fields.lake_location``), or LakeCatalogError saying what to set.

    >>> warehouse_uri("s3://shop-lake/prod/")
    's3a://shop-lake/prod'
    """
    try:
        return lake_location(value)
    except ValueError:
        raise LakeCatalogError(
            f"MEDALLION_LAKE={value!r} is not a folder or an S3 location: set a local folder "
            "(e.g. /srv/lake) or s3://BUCKET/PREFIX"
        ) from None


def s3a_conf(s3: S3Endpoint | None) -> dict[str, str]:
    """Hadoop's s3a settings: credentials from the AWS chain (environment, profile, instance
    role); an endpoint other than AWS's is addressed by path (``host/bucket``)."""
    conf = {
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.aws.credentials.provider": (
            "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
        ),
    }
    if s3 is not None:
        conf |= {
            "spark.hadoop.fs.s3a.endpoint": s3.url,
            "spark.hadoop.fs.s3a.endpoint.region": s3.region,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(
                s3.url.startswith("https://")
            ).lower(),
        }
    return conf


def _parse_catalog(catalog: str, warehouse: str, s3: S3Endpoint | None) -> LakeCatalog:
    text = catalog.strip()
    if text == "glue":
        return LakeCatalog("glue", "", warehouse, s3=s3)
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        if not parts.hostname:
            raise _refused(catalog, "a REST catalog URL names its host")
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        port = f":{parts.port}" if parts.port else ""
        uri = parts._replace(netloc=f"{parts.hostname}{port}").geturl()
        return LakeCatalog("rest", uri, warehouse, user, password, s3)
    if text.startswith("sqlite:///"):
        path = Path(text.removeprefix("sqlite:///")).expanduser()
        absolute = path if text.startswith("sqlite:////") else path.resolve()
        return LakeCatalog("jdbc", f"jdbc:sqlite:{absolute}", warehouse, s3=s3)
    if text.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(text)
        if not parts.hostname or not parts.path.strip("/"):
            raise _refused(catalog, "a PostgreSQL URL names its host and database")
        port = f":{parts.port}" if parts.port else ""
        uri = f"jdbc:postgresql://{parts.hostname}{port}{parts.path}"
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        return LakeCatalog("jdbc", uri, warehouse, user, password, s3)
    raise _refused(catalog, "")


def _refused(catalog: str, why: str) -> LakeCatalogError:
    shown = re.sub(r"//([^:/@]+):[^@/]*@", r"//\1:***@", catalog)
    reason = f" ({why})" if why else ""
    return LakeCatalogError(
        f"MEDALLION_LAKE_CATALOG={shown!r} is not a catalog this runtime knows{reason}: set "
        "sqlite:///PATH, postgresql://USER@HOST:PORT/DB, an Iceberg REST URL (https://…) or glue"
    )


def _sqlalchemy_url(lake: LakeCatalog) -> str:
    if lake.sqlite_file is not None:
        return f"sqlite:///{lake.sqlite_file}"

    credentials = quote(lake.user, safe="")
    if lake.password:
        credentials += ":" + quote(lake.password, safe="")
    at = f"{credentials}@" if credentials else ""
    return "postgresql+psycopg://" + at + lake.uri.removeprefix("jdbc:postgresql://")
