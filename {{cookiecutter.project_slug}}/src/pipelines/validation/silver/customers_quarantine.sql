-- The customer changes silver_customer_changes drops (customers.py), with the rules they broke:
-- a view, so nothing is stored; it computes them from bronze_customers, which keeps every change
-- event, when queried (rules/silver/customers.yml says quarantine: view). The SELECT in FROM types
-- the rows as silver_customer_changes does: change both; `_raw` keeps the text of the typed fields
-- (a signup_date that is not a date). Written by medallion_dq.quarantine.view_sql(name, source,
-- CUSTOMERS.drop): write it again after a change to the drop rules (medallion-dq check reports the
-- stale file: DQC008), and locally drop the old view once (CONVENTIONS.md).
CREATE VIEW silver_customer_changes_quarantine
COMMENT 'Customer changes dropped from silver_customer_changes, with the rules they broke.'
AS SELECT
  *,
  array_except(array(CASE WHEN NOT coalesce((_corrupt_record IS NULL), false) THEN 'whole_record' END, CASE WHEN NOT coalesce((customer_id IS NOT NULL), false) THEN 'valid_customer_id' END, CASE WHEN NOT coalesce((email RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$'), false) THEN 'valid_email' END, CASE WHEN NOT coalesce((country IN ('DE', 'ES', 'FR', 'GB', 'IE', 'IT', 'NL', 'US')), false) THEN 'known_country' END, CASE WHEN NOT coalesce((operation IN ('INSERT', 'UPDATE', 'DELETE')), false) THEN 'known_operation' END, CASE WHEN NOT coalesce((changed_at IS NOT NULL), false) THEN 'valid_changed_at' END), array(CAST(NULL AS STRING)))
    AS _dq_failed_rules
FROM (
  SELECT
    customer_id,
    trim(name) AS name,
    lower(trim(email)) AS email,
    upper(trim(country)) AS country,
    trim(city) AS city,
    lower(trim(segment)) AS segment,
    try_cast(signup_date AS DATE) AS signup_date,
    upper(trim(operation)) AS operation,
    try_cast(changed_at AS TIMESTAMP) AS changed_at,
    _corrupt_record,
    _source_file,
    _ingested_at,
    named_struct('signup_date', signup_date, 'changed_at', changed_at) AS _raw
  FROM bronze_customers
) AS quarantine_source
WHERE NOT coalesce((_corrupt_record IS NULL) AND (customer_id IS NOT NULL) AND (email RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$') AND (country IN ('DE', 'ES', 'FR', 'GB', 'IE', 'IT', 'NL', 'US')) AND (operation IN ('INSERT', 'UPDATE', 'DELETE')) AND (changed_at IS NOT NULL), false);
