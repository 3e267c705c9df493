SELECT order_id, amount, country, _ingested_at, _source_file, _batch_id FROM raw.orders
