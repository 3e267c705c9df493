CREATE TABLE gold.orders_copy AS SELECT id, amount FROM bronze.orders
