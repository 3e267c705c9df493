SELECT
    event_id,
    CAST(event_ts AS TIMESTAMP) AS event_ts,
    to_date(event_ts) AS event_date,
    lower(trim(event_type)) AS event_type,
    session_id,
    CAST(customer_id AS BIGINT) AS customer_id,
    CAST(product_id AS BIGINT) AS product_id,
    page_url,
    coalesce(lower(trim(device_type)), 'unknown') AS device_type,
    ip_address,
    upper(trim(country_code)) AS country_code,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.user_events
