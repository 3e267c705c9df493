"""The models of ``metadata/sources.yaml``: each raw source (its bucket, prefix, format, columns
and replicas) and the file that lists them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from medallion_assets.catalog.base import (
    Model,
    _is_spark_type,
    check_bucket,
    check_encoding,
    check_identifier,
    check_partition,
    check_prefix,
    example,
    java_charset,
)
from medallion_assets.catalog.names import (
    check_owners,
)


class Column(Model):
    model_config = example(name="id", type="bigint", nullable=False)

    name: str
    """The column's name in the raw records (lower-case letters, digits and _)."""
    type: str = "string"
    """Spark SQL type, e.g. bigint or decimal(18,2); a value that does not fit is quarantined."""
    nullable: bool = True
    """false: a record with no value here is quarantined (a whole object: see on_contract_break)."""
    description: str = ""
    """What the column holds, in words."""
    allow_nan: bool = False
    (
        "true: a double or float column takes NaN, Infinity and -Infinity; otherwise a record "
        "holding one is quarantined with the reason."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_identifier(value)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        if not _is_spark_type(value.lower()):
            raise ValueError(
                f"{value!r} is not a Spark SQL type; use e.g. string, bigint, double, "
                "decimal(18,2), date, timestamp"
            )
        return value.lower()

    @model_validator(mode="after")
    def _allow_nan(self) -> Column:
        if self.allow_nan and self.type not in FLOATING_TYPES:
            raise ValueError(
                f"allow_nan applies to double and float columns; {self.name} is {self.type}: "
                "remove allow_nan"
            )
        return self


FLOATING_TYPES = ("double", "float", "real")


class Replica(Model):
    model_config = example(
        name="sales_replica",
        system="s3_replica",
        bucket="my-bucket-replica",
        prefix="sales/",
        cost=2.5,
    )

    name: str
    """The replica's name: its route's name, and `replica:<name>` to mark it down."""
    system: str
    """The system (systems.yaml) holding the replica's bucket; its limits pace reads of it."""
    bucket: str
    """The S3 bucket holding the copy."""
    prefix: str
    """Its folder in that bucket, e.g. customers/ (ending in / if the source is partitioned)."""
    cost: float = Field(default=1.0, gt=0)
    """Its cost relative to the primary's 1; recovery takes the cheapest available path."""

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        return check_bucket(value)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        return check_prefix(value)


class Source(Model):
    model_config = example(
        system="s3_raw",
        bucket="my-bucket",
        prefix="sales/",
        format="jsonl",
        partition="dt={date}",
        columns=[{"name": "id", "type": "bigint", "nullable": False}],
    )

    system: str
    """The system (systems.yaml) holding the bucket; its limits pace the ingest."""
    bucket: str
    """The S3 bucket the raw objects land in."""
    prefix: str
    """The source's folder in the bucket, e.g. orders/ (relative: no leading /)."""
    format: Literal["jsonl", "csv", "parquet"]
    """How the objects are written: JSON lines, CSV (RFC 4180) or Parquet."""
    partition: str | None = None
    """Daily folders under the prefix, e.g. dt={date} ({date}: YYYY-MM-DD); none: no days."""
    description: str = ""
    """What the source holds, in words; its raw asset's description in Dagster."""
    owners: tuple[str, ...] = ()
    """Who owns the source (`team:<name>` or an e-mail); shown on its raw asset."""
    columns: tuple[Column, ...]
    """The declared schema: records are read with exactly these columns, plus the ingestion ones."""
    pii_columns: tuple[str, ...] = ()
    """Columns holding personal data: masked in check samples here and in every table they
    reach unmasked by column lineage; traced by `medallion trace-pii`."""
    csv_header: bool = True
    """true: each CSV object starts with a header row, read by name; false: in declared order."""
    encoding: str = "utf-8"
    (
        "Text encoding of csv and jsonl objects (e.g. utf-8, utf-16, latin-1); an object not valid "
        "in it is set aside."
    )
    replicas: tuple[Replica, ...] = ()
    """Copies of the source in other buckets, read when the primary one is down."""
    on_contract_break: Literal["set_aside", "quarantine_rows"] = "set_aside"
    (
        "An object lacking a column declared nullable: false, or holding no value in it: set aside "
        "whole (set_aside), or read and its rows quarantined (quarantine_rows)."
    )
    on_excess_scale: Literal["quarantine", "round"] = "quarantine"
    """A value with more decimal places than its decimal(p,s) column: quarantined, or rounded."""
    deletes: Literal["keep", "propagate"] = "keep"
    (
        "An object ingested before and gone from the source: its rows stay in bronze (keep), or "
        "are removed from it as an audited change of their own (propagate)."
    )

    _bucket = field_validator("bucket")(classmethod(lambda cls, v: check_bucket(v)))
    _prefix = field_validator("prefix")(classmethod(lambda cls, v: check_prefix(v)))
    _owners = field_validator("owners")(classmethod(lambda cls, v: check_owners(v)))

    @field_validator("partition")
    @classmethod
    def _partition(cls, value: str | None) -> str | None:
        return check_partition(value) if value is not None else None

    @model_validator(mode="after")
    def _partition_folder(self) -> Source:
        # The runtime lists <prefix><partition>/: without the '/' the date folder would be glued
        # to the prefix's last name ('eventsdt=2026-01-01/').
        if self.partition is None:
            return self
        for where, prefix in [("prefix", self.prefix)] + [
            (f"replicas[{i}].prefix", r.prefix) for i, r in enumerate(self.replicas)
        ]:
            if prefix and not prefix.endswith("/"):
                raise ValueError(
                    f"{where} {prefix!r} must end with '/' when the source has a partition "
                    f"pattern; write {prefix + '/'!r}"
                )
        return self

    @field_validator("encoding")
    @classmethod
    def _encoding(cls, value: str) -> str:
        check_encoding(value)
        return value

    @model_validator(mode="after")
    def _columns(self) -> Source:
        names = [c.name for c in self.columns]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"column(s) declared twice: {', '.join(duplicates)}")
        if self.format == "parquet" and check_encoding(self.encoding) != "utf-8":
            raise ValueError(
                f"encoding {self.encoding!r} applies to csv and jsonl sources only; Parquet "
                "stores its own encoding: remove the encoding key"
            )
        if self.format == "csv" and java_charset(self.encoding) is None:
            raise ValueError(
                f"Spark cannot read CSV in encoding {self.encoding!r}: declare one of utf-8, "
                "utf-16, latin-1, cp1252 (any ISO-8859-n, cp125n, Shift_JIS, GBK, Big5, KOI8-R), "
                "or have the feed converted"
            )
        unknown = [c for c in self.pii_columns if c not in names]
        if unknown:
            raise ValueError(
                f"pii_columns names unknown column(s) {', '.join(unknown)}; "
                f"declared columns are: {', '.join(names)}"
            )
        return self


class SourcesFile(Model):
    sources: dict[str, Source]
    """The raw S3 sources by name; SQL reads one as raw.<name>."""

    @field_validator("sources")
    @classmethod
    def _names(cls, value: dict[str, Source]) -> dict[str, Source]:
        for name in value:
            check_identifier(name)
        return value
