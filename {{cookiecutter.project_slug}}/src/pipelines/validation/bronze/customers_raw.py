"""Bronze: land the customer files as they come. No expectations here, by convention:
bronze keeps everything, so that silver can judge it and nothing is lost.

The CRM sends a change feed: one record per change of a customer, `operation` INSERT, UPDATE or
DELETE (with the whole record), `changed_at` when it happened; a file may list them in any order.
Silver applies them (customers.py)."""

from medallion_dq.sources import read_landing
from pyspark import pipelines as dp

# Every field as text: typing is silver's job, and a bad value must not fail ingestion.
CUSTOMERS_RAW_SCHEMA = (
    "customer_id STRING, name STRING, email STRING, country STRING, signup_date STRING, "
    "city STRING, segment STRING, operation STRING, changed_at STRING"
)


# The same reader as bronze_orders (orders_raw.py): `_corrupt_record`, `_rescued_data`,
# `_source_file` and `_ingested_at` keep every record as it arrived.
@dp.table(name="bronze_customers", comment="Customer change files as landed, one row per change.")
def bronze_customers():
    # `spark` is injected by the engine.
    return read_landing(spark, "customers", CUSTOMERS_RAW_SCHEMA)  # noqa: F821
