SELECT
    shipment_id,
    CAST(order_id AS BIGINT) AS order_id,
    upper(trim(carrier)) AS carrier,
    lower(trim(service_level)) AS service_level,
    trim(tracking_number) AS tracking_number,
    lower(trim(status)) AS status,
    CAST(status_ts AS TIMESTAMP) AS status_ts,
    CAST(shipped_ts AS TIMESTAMP) AS shipped_ts,
    CAST(delivered_ts AS TIMESTAMP) AS delivered_ts,
    CAST(promised_delivery_date AS DATE) AS promised_delivery_date,
    upper(trim(destination_country)) AS destination_country,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.shipments
