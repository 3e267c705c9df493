SELECT
    CAST(product_id AS BIGINT) AS product_id,
    upper(trim(sku)) AS sku,
    trim(product_name) AS product_name,
    lower(trim(category)) AS category,
    CAST(unit_cost_usd AS DECIMAL(12, 2)) AS unit_cost_usd,
    CAST(list_price_usd AS DECIMAL(12, 2)) AS list_price_usd,
    coalesce(is_active, true) AS is_active,
    CAST(weight_grams AS INT) AS weight_grams,
    CAST(updated_at AS TIMESTAMP) AS updated_at,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.products
