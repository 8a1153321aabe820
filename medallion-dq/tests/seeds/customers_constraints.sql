-- Databricks' documented Delta constraints on a table written by regular jobs, unchanged.
CREATE TABLE shop.silver.customers (
  customer_id BIGINT NOT NULL,
  email STRING,
  created_at DATE
);

ALTER TABLE shop.silver.customers
  ADD CONSTRAINT valid_email CHECK (email LIKE '%@%');

ALTER TABLE shop.silver.customers
  ALTER COLUMN email SET NOT NULL;
