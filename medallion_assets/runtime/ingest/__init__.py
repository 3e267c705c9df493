"""Bronze ingest: a raw source's new objects found (``source_objects``, ``landed``), inspected
and taken in (``raw_inspect``, ``raw_files``, ``intake``, ``schema_drift``), read where Spark
runs (``raw_open``, ``raw_read``), then appended to the bronze table (``bronze_ingest``)."""
