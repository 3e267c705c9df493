SELECT
    event_date,
    event_type,
    device_type,
    country_code,
    count(*) AS event_count,
    count(DISTINCT session_id) AS session_count,
    count(DISTINCT customer_id) AS known_customer_count
FROM silver.user_events
GROUP BY event_date, event_type, device_type, country_code
