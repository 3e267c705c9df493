SELECT
    CAST(order_id AS BIGINT) AS order_id,
    CAST(customer_id AS BIGINT) AS customer_id,
    CAST(order_ts AS TIMESTAMP) AS order_ts,
    to_date(order_ts) AS order_date,
    lower(trim(status)) AS status,
    lower(trim(channel)) AS channel,
    upper(trim(currency)) AS currency,
    CAST(subtotal_amount AS DECIMAL(18, 2)) AS subtotal_amount,
    CAST(coalesce(shipping_amount, 0) AS DECIMAL(18, 2)) AS shipping_amount,
    CAST(coalesce(tax_amount, 0) AS DECIMAL(18, 2)) AS tax_amount,
    CAST(total_amount AS DECIMAL(18, 2)) AS total_amount,
    nullif(upper(trim(promo_code)), '') AS promo_code,
    upper(trim(ship_to_country)) AS ship_to_country,
    items,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.orders
