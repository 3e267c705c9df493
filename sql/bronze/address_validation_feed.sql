-- Country codes are kept exactly as the vendor sent them (only trimmed and upper-cased): the
-- ISO check on silver.addresses_validated must see the vendor's mistakes, not hide them.
SELECT
    CAST(customer_id AS BIGINT) AS customer_id,
    trim(address_line1) AS address_line1,
    nullif(trim(address_line2), '') AS address_line2,
    initcap(trim(city)) AS city,
    upper(trim(postal_code)) AS postal_code,
    upper(trim(country_code)) AS country_code,
    upper(trim(validation_status)) AS validation_status,
    CAST(match_confidence AS DOUBLE) AS match_confidence,
    CAST(validated_at AS TIMESTAMP) AS validated_at,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.address_validation_feed
