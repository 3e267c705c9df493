-- The accounts export is a full snapshot each day: keep the latest row per customer.
WITH ranked AS (
    SELECT
        customer_id,
        email,
        phone,
        first_name,
        last_name,
        address_line1,
        address_line2,
        city,
        postal_code,
        country_code,
        signup_ts,
        marketing_opt_in,
        updated_at,
        row_number() OVER (PARTITION BY customer_id ORDER BY updated_at DESC, _ingested_at DESC) AS version_rank
    FROM bronze.customers
)
SELECT
    customer_id,
    email,
    phone,
    first_name,
    last_name,
    address_line1,
    address_line2,
    city,
    postal_code,
    -- Customers type 'UK'; ISO 3166-1 says 'GB'.
    CASE WHEN country_code = 'UK' THEN 'GB' ELSE country_code END AS country_code,
    signup_ts,
    to_date(signup_ts) AS signup_date,
    marketing_opt_in,
    updated_at
FROM ranked
WHERE version_rank = 1
