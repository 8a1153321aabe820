-- Databricks' documented quarantine by inverted expectation, unchanged.
CREATE OR REFRESH STREAMING TABLE silver_orders_quarantine (
  CONSTRAINT is_invalid EXPECT (NOT (order_id IS NOT NULL AND amount >= 0)) ON VIOLATION DROP ROW
) AS SELECT * FROM STREAM(shop.bronze.orders_raw);
