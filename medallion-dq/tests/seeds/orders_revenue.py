# Databricks' documented Python example (silver with expectations, gold protected by fail), unchanged.
from pyspark import pipelines as dp
from pyspark.sql import functions as F

silver_rules = {
    "valid_order_id": "order_id IS NOT NULL",
    "valid_amount": "amount >= 0",
}

@dp.table(name="silver_orders")
@dp.expect_all_or_drop(silver_rules)
@dp.expect("known_channel", "channel IN ('web', 'store', 'app')")
def silver_orders():
    return spark.readStream.table("shop.bronze.orders_raw")

@dp.materialized_view(name="gold_revenue")
@dp.expect_or_fail("positive_revenue", "revenue >= 0")
def gold_revenue():
    return spark.read.table("silver_orders").groupBy("channel").agg(F.sum("amount").alias("revenue"))
