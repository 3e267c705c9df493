-- * over UNNEST of an array of structs: a column per field
CREATE TABLE mart.bucket_meta AS
WITH meta AS (
  SELECT * FROM UNNEST([STRUCT("a" AS metric, 50 AS bucket_count), STRUCT("b" AS metric, 20 AS bucket_count)])
  UNION ALL
  SELECT metric, bucket_count FROM glam.metrics
)
SELECT * FROM meta
