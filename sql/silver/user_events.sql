-- The collector delivers at least once: drop redelivered events; the IP address stays in bronze.
WITH ranked AS (
    SELECT
        event_id,
        event_ts,
        event_date,
        event_type,
        session_id,
        customer_id,
        product_id,
        device_type,
        country_code,
        row_number() OVER (PARTITION BY event_id ORDER BY _ingested_at) AS copy_rank
    FROM bronze.user_events
)
SELECT
    event_id,
    event_ts,
    event_date,
    event_type,
    session_id,
    customer_id,
    product_id,
    device_type,
    coalesce(country_code, 'ZZ') AS country_code
FROM ranked
WHERE copy_rank = 1
