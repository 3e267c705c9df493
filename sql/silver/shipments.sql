-- Carrier updates arrive one per status change: the latest status wins.
WITH ranked AS (
    SELECT
        shipment_id,
        order_id,
        carrier,
        service_level,
        tracking_number,
        status,
        status_ts,
        shipped_ts,
        delivered_ts,
        promised_delivery_date,
        destination_country,
        row_number() OVER (PARTITION BY shipment_id ORDER BY status_ts DESC, _ingested_at DESC) AS version_rank
    FROM bronze.shipments
)
SELECT
    shipment_id,
    order_id,
    carrier,
    service_level,
    tracking_number,
    status,
    status_ts,
    shipped_ts,
    delivered_ts,
    promised_delivery_date,
    destination_country,
    datediff(to_date(delivered_ts), to_date(shipped_ts)) AS transit_days
FROM ranked
WHERE version_rank = 1
