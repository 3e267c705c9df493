-- Lines are priced in the order currency; the order's own rate (from silver.orders_usd)
-- converts them so product revenue adds up to the order revenue in gold.revenue_by_region.
SELECT
    o.order_date,
    i.product_id,
    i.sku,
    i.category,
    count(DISTINCT i.order_id) AS order_count,
    CAST(sum(i.quantity) AS BIGINT) AS units_sold,
    CAST(sum(i.line_amount * o.usd_rate) AS DECIMAL(18, 2)) AS revenue_usd,
    CAST(sum(i.line_cost_usd) AS DECIMAL(18, 2)) AS cost_usd,
    CAST(sum(i.line_amount * o.usd_rate) - sum(i.line_cost_usd) AS DECIMAL(18, 2)) AS gross_margin_usd
FROM silver.order_items AS i
JOIN silver.orders_usd AS o
    ON o.order_id = i.order_id
WHERE o.status <> 'cancelled'
GROUP BY o.order_date, i.product_id, i.sku, i.category
