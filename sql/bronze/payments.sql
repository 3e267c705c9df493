SELECT
    payment_id,
    CAST(order_id AS BIGINT) AS order_id,
    CAST(attempt_ts AS TIMESTAMP) AS attempt_ts,
    lower(trim(method)) AS method,
    lower(trim(status)) AS status,
    CAST(amount AS DECIMAL(18, 2)) AS amount,
    upper(trim(currency)) AS currency,
    card_bin,
    upper(trim(card_country)) AS card_country,
    CAST(processor_risk_score AS DOUBLE) AS processor_risk_score,
    decline_code,
    CAST(updated_at AS TIMESTAMP) AS updated_at,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.payments
