-- two UNNESTs without an alias in one FROM
CREATE TABLE mart.pairs AS
SELECT source, x FROM UNNEST([STRUCT("a" AS source, 1 AS x)]) CROSS JOIN UNNEST([1, 2])
