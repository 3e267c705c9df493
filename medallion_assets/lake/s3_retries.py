"""How pyiceberg's S3 reads and writes (pyarrow's S3 file system) ride out throttling: S3
answers ``503 SlowDown`` while a prefix scales up, sometimes several times in a row, and
pyarrow's default gives up after 3 attempts: a table's ``metadata.json`` read then failed the
whole run. pyiceberg instantiates the class its ``s3.retry-strategy-impl`` property names,
without arguments (``LakeCatalog.pyiceberg_properties``)."""

from __future__ import annotations

from pyarrow.fs import AwsStandardS3RetryStrategy

# AWS's standard strategy backs off exponentially with jitter (up to 20 s between attempts):
# 10 attempts ride out a minute of throttling.
ATTEMPTS = 10


class PatientS3Retries(AwsStandardS3RetryStrategy):
    """AWS's standard retry strategy with ``ATTEMPTS`` attempts."""

    def __init__(self) -> None:
        super().__init__(max_attempts=ATTEMPTS)
