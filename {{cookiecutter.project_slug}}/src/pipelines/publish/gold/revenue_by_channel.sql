-- Gold in SQL: the same expectations as the Python decorators, Databricks' syntax.
-- Locally the CONSTRAINT clauses are lifted out before the open-source engine sees them.
CREATE MATERIALIZED VIEW gold_revenue_by_channel (
  CONSTRAINT positive_revenue EXPECT (revenue >= 0) ON VIOLATION FAIL UPDATE,
  CONSTRAINT has_orders EXPECT (orders > 0) ON VIOLATION FAIL UPDATE
)
COMMENT 'Revenue per channel, all days.'
AS SELECT channel, SUM(amount) AS revenue, COUNT(*) AS orders
FROM silver_orders
GROUP BY channel;
