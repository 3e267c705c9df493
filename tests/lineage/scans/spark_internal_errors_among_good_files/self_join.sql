-- the same table twice, no aliases: Spark itself rejects the ambiguous order_id
SELECT order_id FROM shop.orders JOIN shop.orders ON 1 = 1
