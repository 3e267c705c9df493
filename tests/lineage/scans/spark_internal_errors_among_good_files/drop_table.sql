DROP TABLE shop.orders
