SELECT country, sum(amount) AS revenue FROM silver.orders_clean GROUP BY country
