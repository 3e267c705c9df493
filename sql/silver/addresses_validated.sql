-- The vendor's latest verdict per customer. Country codes are not repaired here on purpose:
-- the ISO country check blocks publishing when the vendor mislabels them, so the vendor fixes
-- the feed instead of us silently patching it.
WITH ranked AS (
    SELECT
        customer_id,
        address_line1,
        address_line2,
        city,
        postal_code,
        country_code,
        validation_status,
        match_confidence,
        validated_at,
        row_number() OVER (PARTITION BY customer_id ORDER BY validated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.address_validation_feed
)
SELECT
    customer_id,
    address_line1,
    address_line2,
    city,
    postal_code,
    country_code,
    validation_status,
    match_confidence,
    validated_at,
    'vendor' AS address_source
FROM ranked
WHERE version_rank = 1
