SELECT
    CAST(customer_id AS BIGINT) AS customer_id,
    lower(trim(email)) AS email,
    nullif(regexp_replace(phone, '[^0-9+]', ''), '') AS phone,
    trim(first_name) AS first_name,
    trim(last_name) AS last_name,
    trim(address_line1) AS address_line1,
    nullif(trim(address_line2), '') AS address_line2,
    initcap(trim(city)) AS city,
    upper(trim(postal_code)) AS postal_code,
    upper(trim(country_code)) AS country_code,
    CAST(signup_ts AS TIMESTAMP) AS signup_ts,
    coalesce(marketing_opt_in, false) AS marketing_opt_in,
    CAST(updated_at AS TIMESTAMP) AS updated_at,
    _ingested_at,
    _source_file,
    _batch_id
FROM raw.customers
