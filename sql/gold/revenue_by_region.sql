-- Daily revenue per destination country for the finance dashboard; the country falls back to
-- the customer's home country for digital orders that have no shipping address.
WITH billable_orders AS (
    SELECT
        o.order_id,
        o.customer_id,
        o.order_date,
        coalesce(o.ship_to_country, u.country_code, 'ZZ') AS country_code,
        o.total_amount_usd
    FROM silver.orders_usd AS o
    LEFT JOIN silver.users_masked AS u
        ON u.customer_id = o.customer_id
    WHERE o.status <> 'cancelled'
),
with_region AS (
    SELECT
        order_id,
        customer_id,
        order_date,
        country_code,
        CASE
            WHEN country_code IN ('US', 'CA', 'MX', 'BR') THEN 'AMER'
            WHEN country_code IN ('GB', 'IE', 'FR', 'DE', 'ES', 'IT', 'NL', 'BE', 'AT', 'CH', 'SE',
                                  'DK', 'NO', 'FI', 'PL', 'PT', 'AE', 'ZA') THEN 'EMEA'
            WHEN country_code IN ('AU', 'NZ', 'JP', 'SG', 'IN', 'KR', 'HK') THEN 'APAC'
            ELSE 'UNKNOWN'
        END AS region,
        total_amount_usd
    FROM billable_orders
)
SELECT
    order_date,
    region,
    country_code,
    count(DISTINCT order_id) AS order_count,
    count(DISTINCT customer_id) AS customer_count,
    CAST(sum(total_amount_usd) AS DECIMAL(18, 2)) AS revenue_usd,
    CAST(avg(total_amount_usd) AS DECIMAL(18, 2)) AS avg_order_value_usd
FROM with_region
GROUP BY order_date, region, country_code
