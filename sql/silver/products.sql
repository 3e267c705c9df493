WITH ranked AS (
    SELECT
        product_id,
        sku,
        product_name,
        category,
        unit_cost_usd,
        list_price_usd,
        is_active,
        weight_grams,
        updated_at,
        row_number() OVER (PARTITION BY product_id ORDER BY updated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.products
)
SELECT
    product_id,
    sku,
    product_name,
    coalesce(category, 'uncategorized') AS category,
    unit_cost_usd,
    list_price_usd,
    is_active,
    weight_grams,
    updated_at
FROM ranked
WHERE version_rank = 1
