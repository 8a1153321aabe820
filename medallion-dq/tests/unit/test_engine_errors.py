"""The local engine's errors: one root for callers that catch them all, their built-in base kept
for callers that catch that."""

import pytest

from medallion_dq.local import container, lake, machine, server, spark
from medallion_dq.problems import MedallionDQError
from medallion_dq.project import settings


@pytest.mark.parametrize(
    ("error", "base"),
    [
        (settings.SettingError, ValueError),
        (machine.BackendUnavailable, RuntimeError),
        (spark.ServerLost, RuntimeError),
        (server.ServerNotStarted, RuntimeError),
        (server.ServerInUse, RuntimeError),
        (container.ContainerBackendUnavailable, RuntimeError),
        (container.ContainerBackendError, RuntimeError),
        (lake.LakeBusy, RuntimeError),
        (lake.PutBackFailed, RuntimeError),
    ],
)
def test_an_engine_error_has_the_package_root_and_its_base(error, base):
    assert issubclass(error, MedallionDQError) and issubclass(error, base)


def test_a_jvm_gateway_that_refuses_means_the_server_is_gone():
    """An embedded server's JVM is reached through py4j too: its refusal is the server's loss
    (one line, exit 3), not an error of whatever was being judged (e.g. DQ020 for an example)."""
    from py4j.protocol import Py4JError, Py4JNetworkError

    gone = [Py4JNetworkError("An error occurred while trying to connect"), ConnectionRefusedError()]
    assert all(spark._unreachable(error) for error in gone)
    assert not spark._unreachable(Py4JError("An error occurred while calling o1.sql"))
    assert not spark._unreachable(ValueError("invalid literal for int()"))


def test_a_violation_that_outruns_its_flow_event_is_still_named(tmp_path):
    """Under load the update's error can arrive before the failed flow's event: its message is
    only the write's wrapper, and the violated rule and its record are in the server's causes.
    The run names the rule, not a failed write."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    from medallion_dq.local.failures import explain
    from medallion_dq.local.runner import engine_error_text

    payload = (
        '{"dataset": "gold_order_keys", "expectation": "unique_order_id", "constraint":'
        ' "orders = 1", "record": {"order_id": "o1", "orders": 2}}'
    )
    error = SparkConnectGrpcException(
        "[TASK_WRITE_FAILED] Task failed while writing rows to file:/lake/gold_order_keys.",
        server_stacktrace=(
            "org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing\n"
            "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRows\n"
            f"Caused by: org.apache.spark.SparkRuntimeException: EXPECTATION_VIOLATION {payload}\n"
        ),
    )
    said = explain(engine_error_text(error), {}, {}, [], tmp_path, {}, tmp_path)
    assert (said.kind, said.dataset, said.expectation) == (
        "EXPECTATION_VIOLATION",
        "gold_order_keys",
        "unique_order_id",
    )
    assert said.record == {"order_id": "o1", "orders": 2}
    assert engine_error_text(ValueError("plain")) == "plain"


# The engine's text when a 0.5 quarantine view applied the rule whole_record without selecting
# its column (its plan cut to the nodes read; the suggestions stop at five columns).
UNSELECTED = """\
Failed to resolve flow: 'spark_catalog.acme_orders.silver_customers_quarantine'.
Error: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name \
`_corrupt_record` cannot be resolved. Did you mean one of the following? [`country`, \
`customer_id`, `_source_file`, `signup_date`, `_raw`]. SQLSTATE: 42703; line 25 pos 20;
'Project [*, 'array_except('array(CASE WHEN NOT 'coalesce(isnull('_corrupt_record), false) \
THEN whole_record END), array(cast(null as string))) AS _dq_failed_rules#80]
+- 'Filter NOT 'coalesce((isnull('_corrupt_record) AND isnotnull(customer_id#159)), false)
   +- SubqueryAlias quarantine_source
      +- Project [customer_id#159, trim(name#160, None) AS name#75, lower(trim(email#161, \
None)) AS email#76, upper(trim(country#162, None)) AS country#77, try_cast(signup_date#163 as \
date) AS signup_date#78, _source_file#166, _ingested_at#167, named_struct(signup_date, \
signup_date#163) AS _raw#79]
         +- SubqueryAlias spark_catalog.acme_orders.bronze_customers
            +- LocalRelation <empty>, [customer_id#159, name#160, email#161, _corrupt_record#164]
"""


def test_an_unknown_column_names_the_dataset_whose_file_reads_it_and_all_its_columns(tmp_path):
    """DQ011 names the quarantine view and its file, not the silver dataset whose rule file has
    the rule, and lists every column the view's query gives (the engine lists five)."""
    from medallion_dq.local.expectations import Expectation
    from medallion_dq.local.failures import explain

    view = tmp_path / "customers_quarantine.sql"
    view.write_text("CREATE VIEW silver_customers_quarantine AS SELECT 1\n", encoding="utf-8")
    declared = {
        "silver_customers": [
            Expectation("valid_email", "email IS NOT NULL", "drop"),
            Expectation("whole_record", "_corrupt_record IS NULL", "drop"),
        ]
    }
    said = explain(UNSELECTED, declared, {}, [view], tmp_path, {}, tmp_path)
    assert (said.kind, said.dataset, said.expectation) == (
        "UNKNOWN_COLUMN",
        "silver_customers_quarantine",
        "whole_record",
    )
    assert said.message == (
        "DQ011 silver_customers_quarantine (customers_quarantine.sql): rule 'whole_record':"
        " unknown column `_corrupt_record` in constraint '_corrupt_record IS NULL'; fix: the"
        " dataset has customer_id, name, email, country, signup_date, _source_file,"
        " _ingested_at, _raw"
    )
