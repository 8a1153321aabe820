"""Silver: the CRM's change feed applied with AUTO CDC, into the current customers
(silver_customers, SCD type 1) and their history (silver_customers_history, SCD type 2).

The change events are typed and judged first, in the view silver_customer_changes: rules live in
rules/silver/customers.yml of the project package; `drop` rules keep a bad event out of both
tables (the view silver_customer_changes_quarantine shows it, customers_quarantine.sql), `warn`
rules only count. AUTO CDC orders the events by `changed_at`, whatever order they arrive in.
"""

from medallion_dq import rules
from pyspark import pipelines as dp
from pyspark.sql import functions as F

from {{ cookiecutter.package_name }} import RULES

CUSTOMERS = rules.load(RULES / "silver/customers.yml")


# customers_quarantine.sql types the rows with the same expressions, in SQL: change both.
@dp.temporary_view(name="silver_customer_changes", comment="Typed customer changes.")
@dp.expect_all_or_drop(CUSTOMERS.drop)
@dp.expect_all(CUSTOMERS.warn)
def silver_customer_changes():
    """Bronze rows with types; a value that does not parse becomes NULL for the rules to judge."""
    return spark.readStream.table("bronze_customers").select(  # noqa: F821 - injected
        "customer_id",
        F.trim("name").alias("name"),
        F.lower(F.trim("email")).alias("email"),
        F.upper(F.trim("country")).alias("country"),
        F.trim("city").alias("city"),
        F.lower(F.trim("segment")).alias("segment"),
        F.expr("try_cast(signup_date AS DATE)").alias("signup_date"),
        F.upper(F.trim("operation")).alias("operation"),
        F.expr("try_cast(changed_at AS TIMESTAMP)").alias("changed_at"),
        "_corrupt_record",  # bronze's mark of a record that did not parse: rule whole_record
        "_source_file",
        "_ingested_at",
    )


# Both tables apply the same events: the latest of each customer wins, a DELETE removes it.
CHANGES = dict(
    source="silver_customer_changes",
    keys=["customer_id"],
    sequence_by="changed_at",
    apply_as_deletes="operation = 'DELETE'",
    except_column_list=["operation", "_corrupt_record"],
)

dp.create_streaming_table("silver_customers", comment="Current customers, one row each.")
dp.create_auto_cdc_flow(target="silver_customers", stored_as_scd_type=1, **CHANGES)

# A new version (__START_AT, __END_AT: changed_at of the events that opened and closed it) when a
# customer moves or changes segment; another change updates the current version.
dp.create_streaming_table(
    "silver_customers_history", comment="Customers as they were: one row per version."
)
dp.create_auto_cdc_flow(
    target="silver_customers_history",
    stored_as_scd_type=2,
    track_history_column_list=["country", "city", "segment"],
    **CHANGES,
)
