SELECT id
FROM (SELECT customer_id AS id FROM shop.orders)
JOIN (SELECT id FROM shop.customers) USING (id)
