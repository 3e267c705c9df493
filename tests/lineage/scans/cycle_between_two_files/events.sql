CREATE TABLE mart.events AS SELECT id FROM raw.events
