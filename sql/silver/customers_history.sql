-- Each customer's country, city and marketing consent over time, as the daily account exports
-- show them (kind scd2 in metadata/datasets.yaml: valid_from, valid_to and is_current are
-- added). An export that changes none of them opens no new version.
SELECT
    customer_id,
    -- Customers type 'UK'; ISO 3166-1 says 'GB'.
    CASE WHEN country_code = 'UK' THEN 'GB' ELSE country_code END AS country_code,
    city,
    marketing_opt_in,
    updated_at
FROM bronze.customers
