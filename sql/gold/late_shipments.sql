-- Open shipments past their promised date, for the carrier escalation tool.
SELECT *
FROM gold.shipping_dashboard_feed
WHERE is_late
  AND shipment_status NOT IN ('delivered', 'returned')
