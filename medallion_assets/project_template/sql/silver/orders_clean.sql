-- One row per order, its latest version: the checkout re-exports an order when its status
-- changes. The order's day is derived here for the daily marts.
WITH versions AS (
    SELECT
        *,
        row_number() OVER (
            PARTITION BY order_id ORDER BY updated_at DESC, _ingested_at DESC
        ) AS version_rank
    FROM bronze.orders
)
SELECT
    order_id,
    customer_id,
    order_ts,
    to_date(order_ts) AS order_date,
    status,
    country,
    amount
FROM versions
WHERE version_rank = 1
