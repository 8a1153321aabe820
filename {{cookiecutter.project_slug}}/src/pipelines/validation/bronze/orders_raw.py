"""Bronze: land the order files as they come. No expectations here, by convention:
bronze keeps everything, so that silver can judge it and nothing is lost."""

from medallion_dq.sources import read_landing
from pyspark import pipelines as dp

# Every field as text: typing is silver's job, and a bad value must not fail ingestion.
ORDERS_RAW_SCHEMA = (
    "order_id STRING, customer_id STRING, order_ts STRING, channel STRING, "
    "currency STRING, amount STRING, quantity STRING"
)


# read_landing keeps every record as it arrived: `_corrupt_record` (a record that does not parse),
# `_rescued_data` (fields the schema does not name), `_source_file`, `_ingested_at`.
@dp.table(name="bronze_orders", comment="Order files as landed, one row per record.")
def bronze_orders():
    return read_landing(spark, "orders", ORDERS_RAW_SCHEMA)  # noqa: F821 - injected by the engine
