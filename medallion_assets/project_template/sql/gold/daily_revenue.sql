-- Revenue per day and shipping country of the orders not cancelled; loaded into the
-- warehouse as analytics.daily_revenue (targets.yaml) for the finance dashboard.
SELECT
    order_date,
    coalesce(country, 'ZZ') AS country,
    count(*) AS orders,
    CAST(sum(amount) AS DECIMAL(18, 2)) AS revenue
FROM silver.orders_clean
WHERE status <> 'cancelled'
GROUP BY order_date, coalesce(country, 'ZZ')
