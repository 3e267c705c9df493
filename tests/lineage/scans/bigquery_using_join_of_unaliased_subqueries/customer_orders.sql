CREATE TABLE `proj.mart.customer_orders` AS
SELECT customer_id, order_count
FROM (SELECT customer_id, count(*) AS order_count FROM `proj.raw.orders` GROUP BY customer_id)
JOIN (SELECT customer_id FROM `proj.raw.customers`) USING (customer_id)
