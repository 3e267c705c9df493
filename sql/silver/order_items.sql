-- Lines come from the latest version of each order; product cost is in USD, prices in the
-- order currency (gold.product_sales converts them with the order's rate).
WITH latest_orders AS (
    SELECT
        order_id,
        order_date,
        currency,
        items,
        row_number() OVER (PARTITION BY order_id ORDER BY updated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.orders
),
order_lines AS (
    SELECT
        lo.order_id,
        lo.order_date,
        lo.currency,
        li.product_id,
        li.quantity,
        li.unit_price
    FROM latest_orders AS lo
    LATERAL VIEW inline(lo.items) li AS product_id, quantity, unit_price
    WHERE lo.version_rank = 1
)
SELECT
    l.order_id,
    row_number() OVER (PARTITION BY l.order_id ORDER BY l.product_id, l.quantity, l.unit_price) AS line_number,
    l.order_date,
    l.product_id,
    p.sku,
    p.category,
    l.quantity,
    l.unit_price,
    l.currency,
    CAST(l.quantity * l.unit_price AS DECIMAL(18, 2)) AS line_amount,
    CAST(l.quantity * p.unit_cost_usd AS DECIMAL(18, 2)) AS line_cost_usd
FROM order_lines AS l
LEFT JOIN silver.products AS p
    ON p.product_id = l.product_id
