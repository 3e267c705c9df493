SELECT
    CAST(rate_date AS DATE) AS rate_date,
    upper(trim(currency)) AS currency,
    CAST(usd_per_unit AS DECIMAL(18, 8)) AS usd_per_unit,
    provider,
    CAST(published_at AS TIMESTAMP) AS published_at,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.fx_rates
