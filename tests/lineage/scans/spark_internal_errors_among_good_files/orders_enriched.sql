SELECT o.order_id, c.name AS customer_name
FROM shop.orders AS o JOIN shop.customers AS c ON c.id = o.customer_id
