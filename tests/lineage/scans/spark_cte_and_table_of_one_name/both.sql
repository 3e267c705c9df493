CREATE TABLE gold.both AS
WITH wtab1 AS (SELECT id FROM schema1.tab1)
SELECT * FROM wtab1 CROSS JOIN db.wtab1
