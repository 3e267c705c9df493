CREATE TABLE gold.pairs AS
SELECT s.id, s.amount FROM bronze.orders s JOIN bronze.refunds s ON s.id = s.id
