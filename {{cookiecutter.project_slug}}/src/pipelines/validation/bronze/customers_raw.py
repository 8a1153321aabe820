"""Bronze: land the customer files as they come. No expectations here, by convention:
bronze keeps everything, so that silver can judge it and nothing is lost."""

from medallion_dq.sources import read_landing
from pyspark import pipelines as dp

# Every field as text: typing is silver's job, and a bad value must not fail ingestion.
CUSTOMERS_RAW_SCHEMA = (
    "customer_id STRING, name STRING, email STRING, country STRING, signup_date STRING"
)


# The same reader as bronze_orders (orders_raw.py): `_corrupt_record`, `_rescued_data`,
# `_source_file` and `_ingested_at` keep every record as it arrived.
@dp.table(name="bronze_customers", comment="Customer files as landed, one row per record.")
def bronze_customers():
    # `spark` is injected by the engine.
    return read_landing(spark, "customers", CUSTOMERS_RAW_SCHEMA)  # noqa: F821
