-- Databricks' documented SQL example (silver with expectations, gold protected by fail), unchanged.
CREATE OR REFRESH STREAMING TABLE silver_orders (
  CONSTRAINT valid_order_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT valid_amount   EXPECT (amount >= 0)          ON VIOLATION DROP ROW,
  CONSTRAINT known_channel  EXPECT (channel IN ('web', 'store', 'app'))
) AS
SELECT * FROM STREAM(shop.bronze.orders_raw);

CREATE OR REFRESH MATERIALIZED VIEW gold_revenue (
  CONSTRAINT positive_revenue EXPECT (revenue >= 0) ON VIOLATION FAIL UPDATE
) AS
SELECT channel, SUM(amount) AS revenue
FROM silver_orders
GROUP BY channel;
