-- One feature row per order for the fraud model. Every feature must be known at order time,
-- so clickstream counts look only at the 24 hours before the order.
WITH orders AS (
    SELECT
        order_id,
        customer_id,
        order_ts,
        order_date,
        channel,
        promo_code,
        ship_to_country,
        total_amount_usd
    FROM silver.orders_usd
),
payment_attempts AS (
    SELECT
        order_id,
        count(*) AS payment_attempts,
        sum(CASE WHEN status = 'declined' THEN 1 ELSE 0 END) AS declined_attempts,
        count(DISTINCT card_bin) AS distinct_cards,
        max(card_country) AS card_country,
        max(processor_risk_score) AS max_processor_risk_score
    FROM silver.payments
    GROUP BY order_id
),
-- Grouped by every order column the window uses, so the run counts it in one sorted pass over
-- the clickstream instead of pairing each order with each event (docs/project.md, band joins).
recent_activity AS (
    SELECT
        o.order_id,
        count(e.event_id) AS events_24h,
        count(DISTINCT e.session_id) AS sessions_24h,
        sum(CASE WHEN e.event_type = 'login_failed' THEN 1 ELSE 0 END) AS failed_logins_24h
    FROM orders AS o
    JOIN silver.user_events AS e
        ON e.customer_id = o.customer_id
        AND e.event_ts BETWEEN o.order_ts - INTERVAL 24 HOURS AND o.order_ts
    GROUP BY o.order_id, o.customer_id, o.order_ts
)
SELECT
    o.order_id,
    o.customer_id,
    o.order_ts,
    o.order_date,
    o.channel,
    o.total_amount_usd,
    o.promo_code IS NOT NULL AS used_promo_code,
    datediff(o.order_date, u.signup_date) AS account_age_days,
    u.email_domain,
    coalesce(p.payment_attempts, 0) AS payment_attempts,
    coalesce(p.declined_attempts, 0) AS declined_attempts,
    coalesce(p.distinct_cards, 0) AS distinct_cards,
    p.max_processor_risk_score,
    coalesce(p.card_country <> o.ship_to_country, false) AS card_country_mismatch,
    coalesce(a.validation_status, 'MISSING') AS address_validation_status,
    coalesce(a.validation_status = 'INVALID', false) AS address_invalid,
    coalesce(r.events_24h, 0) AS events_24h,
    coalesce(r.sessions_24h, 0) AS sessions_24h,
    coalesce(r.failed_logins_24h, 0) AS failed_logins_24h
FROM orders AS o
LEFT JOIN silver.users_masked AS u
    ON u.customer_id = o.customer_id
LEFT JOIN payment_attempts AS p
    ON p.order_id = o.order_id
LEFT JOIN recent_activity AS r
    ON r.order_id = o.order_id
LEFT JOIN silver.addresses_validated AS a
    ON a.customer_id = o.customer_id
