-- Fallback producer of silver.addresses_validated when the vendor feed is missing or
-- unusable: the addresses customers typed themselves, marked UNVALIDATED. Same columns as the
-- primary; costlier because shipping then works from unverified addresses.
WITH ranked AS (
    SELECT
        customer_id,
        address_line1,
        address_line2,
        city,
        postal_code,
        country_code,
        updated_at,
        row_number() OVER (PARTITION BY customer_id ORDER BY updated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.customers
)
SELECT
    customer_id,
    address_line1,
    address_line2,
    city,
    postal_code,
    CASE WHEN country_code = 'UK' THEN 'GB' ELSE country_code END AS country_code,
    'UNVALIDATED' AS validation_status,
    CAST(NULL AS DOUBLE) AS match_confidence,
    updated_at AS validated_at,
    'customer_profile' AS address_source
FROM ranked
WHERE version_rank = 1
  AND country_code IS NOT NULL
