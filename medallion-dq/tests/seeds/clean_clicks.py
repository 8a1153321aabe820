# Databricks' documented example, unchanged: warn, drop and fail on one streaming table.
from pyspark import pipelines as dp


@dp.table
@dp.expect("valid_timestamp", "timestamp > '2012-01-01'")
@dp.expect_or_drop("valid_current_page", "current_page_id IS NOT NULL AND current_page_title IS NOT NULL")
@dp.expect_or_fail("valid_count", "count > 0")
def clean_clicks():
    return spark.readStream.table("raw_clicks")
