-- Operations' shipping dashboard: every shipment with the vendor-validated destination.
-- Built on the address-validation feed, so a bad vendor delivery shows up here first.
SELECT
    s.shipment_id,
    s.order_id,
    o.customer_id,
    o.order_date,
    s.carrier,
    s.service_level,
    s.tracking_number,
    s.status AS shipment_status,
    s.status_ts,
    s.shipped_ts,
    s.delivered_ts,
    s.promised_delivery_date,
    s.transit_days,
    coalesce(to_date(s.delivered_ts), current_date()) > s.promised_delivery_date AS is_late,
    coalesce(a.country_code, s.destination_country) AS destination_country,
    a.city AS destination_city,
    a.postal_code AS destination_postal_code,
    coalesce(a.validation_status, 'MISSING') AS address_validation_status,
    a.address_source
FROM silver.shipments AS s
JOIN silver.orders_usd AS o
    ON o.order_id = s.order_id
LEFT JOIN silver.addresses_validated AS a
    ON a.customer_id = o.customer_id
