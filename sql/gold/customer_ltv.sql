-- One row per customer for the CRM sync; identity is the hashed email, never the address.
WITH customer_orders AS (
    SELECT
        u.customer_id,
        u.email_sha256,
        u.country_code,
        u.signup_date,
        u.marketing_opt_in,
        o.order_id,
        o.order_date,
        o.total_amount_usd
    FROM silver.users_masked AS u
    LEFT JOIN silver.orders_usd AS o
        ON o.customer_id = u.customer_id
        AND o.status NOT IN ('cancelled', 'returned')
)
SELECT
    customer_id,
    email_sha256,
    country_code,
    signup_date,
    marketing_opt_in,
    min(order_date) AS first_order_date,
    max(order_date) AS last_order_date,
    count(order_id) AS order_count,
    CAST(coalesce(sum(total_amount_usd), 0) AS DECIMAL(18, 2)) AS lifetime_revenue_usd,
    CAST(avg(total_amount_usd) AS DECIMAL(18, 2)) AS avg_order_value_usd,
    CASE
        WHEN coalesce(sum(total_amount_usd), 0) >= 1000 THEN 'vip'
        WHEN count(order_id) >= 2 THEN 'repeat'
        WHEN count(order_id) = 1 THEN 'one_time'
        ELSE 'prospect'
    END AS ltv_segment
FROM customer_orders
GROUP BY customer_id, email_sha256, country_code, signup_date, marketing_opt_in
