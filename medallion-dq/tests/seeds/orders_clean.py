# Databricks' documented example, unchanged: one dict of rules, one collective action.
from pyspark import pipelines as dp

valid_orders = {"valid_id": "order_id IS NOT NULL", "valid_qty": "quantity > 0"}


@dp.table
@dp.expect_all_or_drop(valid_orders)
def orders_clean():
    return spark.readStream.table("orders_bronze")
