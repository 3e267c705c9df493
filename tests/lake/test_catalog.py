"""Where the lake lives: MEDALLION_LAKE and MEDALLION_LAKE_CATALOG, parsed without a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.lake.catalog import LakeCatalog, LakeCatalogError, S3Endpoint, warehouse_uri


def test_a_local_folder_is_a_file_uri_and_s3_goes_through_s3a(tmp_path: Path):
    assert warehouse_uri(str(tmp_path / "lake")) == f"file:{tmp_path / 'lake'}"
    assert warehouse_uri("s3://shop-lake/prod") == "s3a://shop-lake/prod"
    assert warehouse_uri("s3a://shop-lake") == "s3a://shop-lake"


@pytest.mark.parametrize("value", ["gs://bucket/lake", "hdfs://nn/lake", "s3://B/x", "s3://a/x"])
def test_any_other_location_is_refused_in_one_line(value: str):
    with pytest.raises(LakeCatalogError) as raised:
        warehouse_uri(value)
    message = str(raised.value)
    assert "\n" not in message and "MEDALLION_LAKE=" in message and "s3://BUCKET/PREFIX" in message


def test_the_embedded_catalog_is_jdbc_on_a_sqlite_file(tmp_path: Path):
    lake = LakeCatalog.parse(f"sqlite:///{tmp_path}/c.db", str(tmp_path / "w"))
    conf = lake.spark_conf()
    assert conf["spark.sql.catalog.lake"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf["spark.sql.catalog.lake.type"] == "jdbc"
    assert conf["spark.sql.catalog.lake.uri"] == f"jdbc:sqlite:{tmp_path}/c.db"
    assert lake.pyiceberg_properties()["uri"] == f"sqlite:///{tmp_path}/c.db"
    assert lake.sqlite_file == tmp_path / "c.db"


def test_postgresql_passes_its_password_as_a_driver_property_not_in_the_uri():
    lake = LakeCatalog.parse("postgresql://ice:s3cr%40t@db.internal:5433/lake", "s3://shop-lake/w")
    conf = lake.spark_conf()
    assert conf["spark.sql.catalog.lake.uri"] == "jdbc:postgresql://db.internal:5433/lake"
    assert conf["spark.sql.catalog.lake.jdbc.user"] == "ice"
    assert conf["spark.sql.catalog.lake.jdbc.password"] == "s3cr@t"
    assert not [v for k, v in conf.items() if "s3cr" in v and not k.endswith("password")]
    uri = lake.pyiceberg_properties()["uri"]
    assert uri == "postgresql+psycopg://ice:s3cr%40t@db.internal:5433/lake"


def test_rest_and_glue_are_configuration_only():
    rest = LakeCatalog.parse("https://catalog.example/api", "s3://shop-lake/w")
    assert rest.spark_conf()["spark.sql.catalog.lake.type"] == "rest"
    assert rest.pyiceberg_properties() == {
        "warehouse": "s3://shop-lake/w",  # as the catalog names it; Spark reads s3:// by s3a
        "type": "rest",
        "uri": "https://catalog.example/api",
        "s3.retry-strategy-impl": "medallion_assets.lake.s3_retries.PatientS3Retries",
    }
    assert rest.spark_conf()["spark.hadoop.fs.s3.impl"].endswith("S3AFileSystem")
    glue = LakeCatalog.parse("glue", "s3://shop-lake/w")
    assert glue.spark_conf()["spark.sql.catalog.lake.type"] == "glue"


def test_a_rest_catalogs_client_credentials_come_from_its_url_and_go_to_oauth2():
    rest = LakeCatalog.parse("https://shop:s%40cret@catalog.example:8181/api", "s3://lake/w")
    assert rest.uri == "https://catalog.example:8181/api"  # no credentials in the URI
    conf = rest.spark_conf()
    assert conf["spark.sql.catalog.lake.credential"] == "shop:s@cret"
    assert conf["spark.sql.catalog.lake.rest.auth.type"] == "oauth2"
    assert conf["spark.sql.catalog.lake.oauth2-server-uri"] == (
        "https://catalog.example:8181/api/v1/oauth/tokens"
    )
    assert rest.pyiceberg_properties()["credential"] == "shop:s@cret"
    with pytest.raises(LakeCatalogError, match=r"'https://shop:\*\*\*@/x'.*names its host"):
        LakeCatalog.parse("https://shop:s3cret@/x", "s3://lake/w")


def test_an_s3_endpoint_other_than_aws_is_addressed_by_path_with_credentials_from_the_chain():
    lake = LakeCatalog.parse("glue", "s3://shop-lake/w", S3Endpoint("http://127.0.0.1:9000", "eu"))
    conf = lake.spark_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert not [k for k in conf if "access.key" in k or "secret" in k]


def test_an_unknown_catalog_is_refused_without_its_password():
    with pytest.raises(LakeCatalogError) as raised:
        LakeCatalog.parse("mysql://admin:hunter2@db/lake", "/w")
    assert "hunter2" not in str(raised.value)
    assert "sqlite:///PATH, postgresql://USER@HOST:PORT/DB" in str(raised.value)


def test_an_unreachable_catalog_is_one_line_naming_it_without_its_password(tmp_path: Path):
    import socket

    from medallion_assets.lake.versions import open_catalog

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lake = LakeCatalog.parse(f"postgresql://ice:hunter2@127.0.0.1:{port}/lake", str(tmp_path))
    with pytest.raises(LakeCatalogError) as raised:
        open_catalog(lake)
    message = str(raised.value)
    assert "\n" not in message and "hunter2" not in message
    assert f"jdbc:postgresql://127.0.0.1:{port}/lake cannot be used" in message
    assert "MEDALLION_LAKE_CATALOG" in message


def test_a_catalog_spark_is_still_creating_reads_as_one_without_tables(tmp_path: Path):
    # Iceberg's JDBC catalog creates iceberg_tables, then adds iceberg_type (its V1 schema): a
    # reader in between (a sensor, `medallion table history`) sees no table, not an error.
    import sqlite3

    from medallion_assets.lake.versions import load, open_catalog

    database = tmp_path / "catalog.db"
    with sqlite3.connect(database) as connection:
        connection.execute(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace "
            "VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location "
            "VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
            "PRIMARY KEY (catalog_name, table_namespace, table_name))"
        )
    catalog = open_catalog(LakeCatalog.parse(f"sqlite:///{database}", str(tmp_path / "lake")))
    assert load(catalog, "bronze.orders") is None
