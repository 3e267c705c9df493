-- a * of unknown schema beside a listed column takes the other branch's names
CREATE TABLE mart.combined AS
SELECT id, * FROM raw.unknown_t
UNION ALL
SELECT a, b, c FROM raw.t
