INSERT INTO mart.events
SELECT n.id FROM raw.events AS n
WHERE NOT EXISTS (SELECT 1 FROM mart.events AS e WHERE e.id = n.id)
