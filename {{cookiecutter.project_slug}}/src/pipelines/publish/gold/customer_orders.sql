-- Each order with its customer as they were when it was placed: the version of
-- silver_customers_history (SCD type 2) whose [__START_AT, __END_AT) holds the order's time. A
-- customer who moved shows the old city on the orders before the move; an order of a customer
-- silver has no version of keeps NULLs (the gate's known_customer check counts those).
CREATE MATERIALIZED VIEW gold_customer_orders
COMMENT 'Orders with the customer''s country, city and segment at the time of the order.'
AS SELECT
  o.order_id, o.order_ts, o.channel, o.currency, o.amount,
  o.customer_id, c.country, c.city, c.segment
FROM silver_orders AS o
LEFT JOIN silver_customers_history AS c
  ON c.customer_id = o.customer_id
  AND o.order_ts >= c.__START_AT
  AND (c.__END_AT IS NULL OR o.order_ts < c.__END_AT);
