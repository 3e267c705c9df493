SELECT order_id, count(*) AS line_count FROM orders_enriched GROUP BY 1
