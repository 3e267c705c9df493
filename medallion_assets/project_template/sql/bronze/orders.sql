-- Orders as the checkout exported them, one row per record of raw.orders, with text cleaned
-- up. A bronze table reads one raw source; each run appends the rows of newly landed objects.
SELECT
    order_id,
    customer_id,
    order_ts,
    lower(trim(status)) AS status,
    upper(trim(country)) AS country,
    amount,
    updated_at,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.orders
