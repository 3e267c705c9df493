CREATE TABLE `proj.mart.order_days` AS
SELECT order_id, DATE(created_at) AS order_day FROM `proj.raw.orders`
