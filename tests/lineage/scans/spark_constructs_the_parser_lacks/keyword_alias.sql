-- Spark reads "as" as a column alias; sqlglot takes it for a string and stops.
SELECT o.order_id, 1 "as"
FROM shop.orders o, shop.customers c
WHERE o.customer_id = c.id AND EXTRACT(YEAR FROM o.ordered_at) > 2020
