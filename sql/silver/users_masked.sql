-- The PII-free view of customers that every gold table reads: hashed email (still joinable
-- for CRM audiences), last four phone digits, no street address or names.
SELECT
    customer_id,
    sha2(email, 256) AS email_sha256,
    -- Only the part after '@'; a malformed email without '@' must not leak whole.
    nullif(regexp_extract(email, '@([^@]+)$', 1), '') AS email_domain,
    CASE
        WHEN phone IS NULL THEN NULL
        ELSE concat(repeat('*', greatest(length(phone) - 4, 0)), substring(phone, -4, 4))
    END AS phone_masked,
    city,
    country_code,
    signup_ts,
    signup_date,
    marketing_opt_in
FROM silver.customers_clean
