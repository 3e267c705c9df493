-- Per customer: orders placed, the amount spent on those not cancelled, and when they first
-- and last ordered.
SELECT
    customer_id,
    count(*) AS orders,
    CAST(sum(CASE WHEN status <> 'cancelled' THEN amount ELSE 0 END) AS DECIMAL(18, 2)) AS spent,
    min(order_ts) AS first_order_ts,
    max(order_ts) AS last_order_ts
FROM silver.orders_clean
GROUP BY customer_id
