SELECT order_id, amount, upper(country) AS country FROM bronze.orders WHERE amount >= 0
