-- * over JOIN ... USING holds the USING column once: 3 columns, as the other branch
CREATE TABLE mart.daily_clients AS
WITH enrolled AS (SELECT client_id FROM exp.enrollments),
daily AS (
  SELECT * FROM enrolled LEFT JOIN (SELECT submission_date, client_id, country FROM tel.metrics) USING (client_id)
  UNION ALL
  SELECT client_id, submission_date, country FROM tel.metrics_mobile
)
SELECT * FROM daily
