-- The checkout service re-exports an order on every status change: keep the latest version.
WITH latest_orders AS (
    SELECT
        order_id,
        customer_id,
        order_ts,
        order_date,
        status,
        channel,
        currency,
        total_amount,
        promo_code,
        ship_to_country,
        row_number() OVER (PARTITION BY order_id ORDER BY updated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.orders
)
SELECT
    o.order_id,
    o.customer_id,
    o.order_ts,
    o.order_date,
    o.status,
    o.channel,
    o.currency,
    o.total_amount,
    CASE WHEN o.currency = 'USD' THEN CAST(1 AS DECIMAL(18, 8)) ELSE fx.usd_per_unit END AS usd_rate,
    CAST(
        o.total_amount * CASE WHEN o.currency = 'USD' THEN CAST(1 AS DECIMAL(18, 8)) ELSE fx.usd_per_unit END
        AS DECIMAL(18, 2)
    ) AS total_amount_usd,
    o.promo_code,
    o.ship_to_country
FROM latest_orders AS o
LEFT JOIN bronze.fx_rates AS fx
    ON fx.currency = o.currency
    AND fx.rate_date = o.order_date
WHERE o.version_rank = 1
