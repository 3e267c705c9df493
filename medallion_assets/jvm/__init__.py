"""Spark's JVM packages (Iceberg, s3a, JDBC drivers): fetched once per machine from Maven
Central by ``medallion jars``, then named on every Spark session's classpath."""
