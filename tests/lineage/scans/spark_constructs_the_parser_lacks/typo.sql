SELECT (order_id FROM shop.orders
