-- Databricks' documented SQL example, unchanged.
CREATE OR REFRESH STREAMING TABLE orders_silver(
CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW,
CONSTRAINT valid_amount EXPECT (amount >= 0) ON VIOLATION FAIL UPDATE,
CONSTRAINT recent EXPECT (order_date >= '2020-01-01')
) AS SELECT * FROM STREAM(orders_bronze);
