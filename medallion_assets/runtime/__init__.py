"""One table's execution: the Spark session, bronze ingest, silver and gold builds, MERGE, the
versioned lake with atomic publish, build locks and crash points."""
