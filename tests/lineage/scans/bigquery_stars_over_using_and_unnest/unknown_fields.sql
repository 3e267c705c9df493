-- * EXCEPT over the unknown fields of an UNNEST's elements, in a UNION with 4 columns
CREATE TABLE mart.scalars AS
WITH ua AS (SELECT client_id, os, scalar_aggregates FROM tel.clients),
b AS (SELECT * EXCEPT (scalar_aggregates) FROM ua CROSS JOIN UNNEST(scalar_aggregates))
SELECT * FROM b
UNION ALL
SELECT client_id, os, metric, key FROM tel.other
