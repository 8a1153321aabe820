-- The customers silver_customers drops, with the rules they broke: a view, so nothing is stored;
-- it computes them from bronze_customers when queried (rules/silver/customers.yml says
-- quarantine: view). The SELECT in FROM types the rows as silver_customers does (customers.py):
-- change both; `_raw` keeps the text of the typed fields (a signup_date that is not a date). Written by medallion_dq.quarantine.view_sql(name, source, CUSTOMERS.drop): write
-- it again after a change to the drop rules (medallion-dq check reports the stale file: DQC008),
-- and locally drop the old view once (CONVENTIONS.md).
CREATE VIEW silver_customers_quarantine
COMMENT 'Customers dropped from silver_customers, with the rules they broke.'
AS SELECT
  *,
  array_except(array(CASE WHEN NOT coalesce((_corrupt_record IS NULL), false) THEN 'whole_record' END, CASE WHEN NOT coalesce((customer_id IS NOT NULL), false) THEN 'valid_customer_id' END, CASE WHEN NOT coalesce((email RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$'), false) THEN 'valid_email' END, CASE WHEN NOT coalesce((country IN ('DE', 'ES', 'FR', 'GB', 'IE', 'IT', 'NL', 'US')), false) THEN 'known_country' END), array(CAST(NULL AS STRING)))
    AS _dq_failed_rules
FROM (
  SELECT
    customer_id,
    trim(name) AS name,
    lower(trim(email)) AS email,
    upper(trim(country)) AS country,
    try_cast(signup_date AS DATE) AS signup_date,
    _corrupt_record,
    _source_file,
    _ingested_at,
    named_struct('signup_date', signup_date) AS _raw
  FROM bronze_customers
) AS quarantine_source
WHERE NOT coalesce((_corrupt_record IS NULL) AND (customer_id IS NOT NULL) AND (email RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$') AND (country IN ('DE', 'ES', 'FR', 'GB', 'IE', 'IT', 'NL', 'US')), false);
