-- One row per payment attempt in its latest state (authorized -> captured -> refunded).
WITH ranked AS (
    SELECT
        payment_id,
        order_id,
        attempt_ts,
        method,
        status,
        amount,
        currency,
        card_bin,
        card_country,
        processor_risk_score,
        decline_code,
        row_number() OVER (PARTITION BY payment_id ORDER BY updated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.payments
)
SELECT
    p.payment_id,
    p.order_id,
    p.attempt_ts,
    to_date(p.attempt_ts) AS payment_date,
    p.method,
    p.status,
    p.amount,
    p.currency,
    CAST(
        p.amount * CASE WHEN p.currency = 'USD' THEN CAST(1 AS DECIMAL(18, 8)) ELSE fx.usd_per_unit END
        AS DECIMAL(18, 2)
    ) AS amount_usd,
    p.card_bin,
    p.card_country,
    p.processor_risk_score,
    p.decline_code
FROM ranked AS p
LEFT JOIN bronze.fx_rates AS fx
    ON fx.currency = p.currency
    AND fx.rate_date = to_date(p.attempt_ts)
WHERE p.version_rank = 1
