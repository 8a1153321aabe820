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

    from medallion_dq.local.failures import engine_error_text, explain

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


# The embedded server's log, whole, as `check --examples` left it when it judged
# `length(repeat(order_id, 200000000)) > 0` on the example 'O-00000001' with DQ_DRIVER_MEMORY=1g
# (before DQ032 refused such a rule): the JVM's own last word, nothing about the query.
OOM_LOG = (
    "WARNING: Using incubator modules: jdk.incubator.vector\n"
    "Terminating due to java.lang.OutOfMemoryError: Java heap space\n"
)


def _dead_server(tmp_path, log: str) -> spark.LocalSpark:
    (tmp_path / "spark-server.log").write_text(log)
    return spark.LocalSpark(spark=None, backend="embedded", work_dir=tmp_path, started_in=0.0)


def test_a_server_that_died_judging_examples_names_the_rule_and_why(tmp_path, monkeypatch):
    """A server that dies as `check --examples` judges says of what (its log's cause) and while
    judging what: the rule that builds the most, not "raise DQ_DRIVER_MEMORY". Rules that build
    nothing keep that advice."""
    from py4j.protocol import Py4JNetworkError

    from medallion_dq import rules
    from medallion_dq.tools import examples

    text = (
        "dataset: silver_orders\nrules:\n"
        "  - name: valid_id\n    constraint: order_id IS NOT NULL\n"
        "    examples: {pass: [{order_id: a}]}\n"
        "  - name: padded\n    constraint: lpad(order_id, 12, '0') <> ''\n"
        "    examples: {pass: [{order_id: a}]}\n"
    )
    monkeypatch.setenv("DQ_DRIVER_MEMORY", "2g")
    cases = examples.cases([rules.parse(text, "rules/silver/orders.yml")])
    local, gone = (
        _dead_server(tmp_path, OOM_LOG),
        Py4JNetworkError("Answer from Java side is empty"),
    )
    line = str(local.lost(gone, *examples.judging(cases)))
    assert line.startswith(
        "the Spark server died: out of memory (Java heap space) while judging the examples "
        "of 2 rules in one query; the one that builds the most is rule 'padded' "
        "(rules/silver/orders.yml): up to 14 characters or elements per row"
    ), line
    assert "raise DQ_DRIVER_MEMORY" not in line and "DQ032" in line
    alone = str(local.lost(gone, *examples.judging(cases[:1])))
    assert "while judging the examples of rule 'valid_id' (rules/silver/orders.yml)" in alone
    assert "fix: raise DQ_DRIVER_MEMORY, e.g. 4g" in alone


def test_a_server_that_died_in_an_update_names_the_flow_its_rule_and_why(tmp_path):
    """A server that dies in an update names the flows it was running, the rule of theirs that
    builds the most and its log's cause (an overflow is not memory's fault)."""
    from py4j.protocol import Py4JNetworkError

    from medallion_dq.local.expectations import Expectation
    from medallion_dq.local.failures import judging
    from medallion_dq.local.runner import ACTIVE_FLOW_STATES

    log = OOM_LOG.replace(
        "OutOfMemoryError: Java heap space", "ArithmeticException: integer overflow"
    )
    declared = {
        "spark_catalog.dev.silver_orders": [
            Expectation("huge", "length(repeat(order_id, 1000)) > 0", "warn"),
            Expectation("ok", "order_id IS NOT NULL", "drop"),
        ],
        "spark_catalog.dev.silver_customers": [Expectation("wide", "space(9000) <> ''", "warn")],
    }
    flows = {"bronze_orders": "COMPLETED", "silver_orders": "RUNNING"}
    during = judging("validation", flows, declared, ACTIVE_FLOW_STATES)
    line = str(_dead_server(tmp_path, log).lost(Py4JNetworkError("gone"), *during))
    assert line.startswith(
        "the Spark server died: an overflow (integer overflow) while updating silver_orders "
        "(pipeline validation); of the rules it judged, rule 'huge' of silver_orders builds the "
        "most: up to 1,000 characters or elements per row"
    ), line
    assert "raise DQ_DRIVER_MEMORY" not in line
    # an overflow the server logged and lived on after (a failed flow) is not why it died
    lived_on = log + "01:09:00 INFO later: the next update\n"
    line = str(_dead_server(tmp_path, lived_on).lost(Py4JNetworkError("gone"), *during))
    assert "stopped answering mid-run while updating silver_orders (pipeline validation)" in line


# What the embedded server logged (its stack frames left out) when the validation update's
# silver_orders flow judged `length(repeat(order_id, 1000000000)) > 0` (before DQ032 refused it).
OVERFLOW_LOG = """\
01:08:47 ERROR Utils: Aborting task
java.lang.ArithmeticException: integer overflow
01:08:47 ERROR DeltaFileFormatWriter: Job job_202612050108453160251504331563088_0054 aborted.
01:08:47 ERROR Executor: Exception in task 0.0 in stage 54.0 (TID 31)
org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to \
file:/tmp/h1/proj/.local/lake/dev/warehouse/acme_orders.db/silver_orders. SQLSTATE: 58030
Caused by: java.lang.ArithmeticException: integer overflow
01:08:48 ERROR PipelinesErrors: Flow 'spark_catalog.acme_orders.silver_orders' has FAILED more \
than 0 times and will not be restarted.
org.apache.spark.sql.streaming.StreamingQueryException: [TASK_WRITE_FAILED] Task failed while \
writing rows to file:/tmp/h1/proj/.local/lake/dev/warehouse/acme_orders.db/silver_orders. \
SQLSTATE: 58030
"""


def test_a_failed_flow_says_the_engines_error_from_the_server_log(tmp_path):
    """The engine's own words for a failed flow are only "Flow … has FAILED more than 0 times"
    (and a write's wrapper, with the I/O error state): the run's line says the cause the
    server logged, with its error class, not that the lake could not be written."""
    from medallion_dq.local.failures import explain

    text = (
        "Flow 'spark_catalog.acme_orders.silver_orders' has FAILED more than 0 times and will "
        "not be restarted.\n[TASK_WRITE_FAILED] Task failed while writing rows to "
        "file:/lake/silver_orders. SQLSTATE: 58030"
    )
    flows = {"bronze_orders": "COMPLETED", "silver_orders": "FAILED"}
    said = explain(text, {}, flows, [], tmp_path, {}, tmp_path, OVERFLOW_LOG)
    assert (said.kind, said.dataset) == ("ENGINE", "silver_orders")
    assert said.message == "flow silver_orders failed: integer overflow (ArithmeticException)"
    # the engine's error class and message, as the server logged them for the rule
    # `quantity * 2147483647 * 4 <> 0` (ANSI mode), its first lines
    logged = (
        "01:15:14 ERROR Utils: Aborting task\n"
        "org.apache.spark.SparkArithmeticException: [ARITHMETIC_OVERFLOW] overflow. Use "
        "'try_multiply' to tolerate overflow and return NULL instead. If necessary set "
        '"spark.sql.ansi.enabled" to "false" to bypass this error. SQLSTATE: 22003\n'
        "\tat org.apache.spark.sql.errors.ExecutionErrors.arithmeticOverflowError(Execution"
        "Errors.scala:140)\n"
    )
    said = explain(text, {}, flows, [], tmp_path, {}, tmp_path, logged)
    assert said.message.startswith(
        "flow silver_orders failed: [ARITHMETIC_OVERFLOW] overflow. Use 'try_multiply'"
    ), said.message
    assert "SQLSTATE" not in said.message
    # a server shared with another update logs its error too: the one after a line naming
    # the failed flow is this flow's
    other = "ERROR Utils: Aborting task\njava.lang.IllegalStateException: another update's\n"
    said = explain(text, {}, flows, [], tmp_path, {}, tmp_path, other + OVERFLOW_LOG)
    assert said.message == "flow silver_orders failed: integer overflow (ArithmeticException)"
    # the update can end before its flow's FAILED event (seen in CI): the flow the engine's
    # text names, else the only one still running, is the one that failed
    running = {"bronze_orders": "COMPLETED", "silver_orders": "RUNNING"}
    said = explain(text, {}, running, [], tmp_path, {}, tmp_path, OVERFLOW_LOG)
    assert said.message.startswith("flow silver_orders failed: "), said.message
    said = explain("", {}, running, [], tmp_path, {}, tmp_path, OVERFLOW_LOG)
    assert said.message.startswith("flow silver_orders failed: "), said.message
    # a disk's words still make it the lake's fault; no log: the text's first line, as before
    full = OVERFLOW_LOG.replace(
        "java.lang.ArithmeticException: integer overflow",
        "java.io.IOException: No space left on device",
    )
    assert explain(text, {}, flows, [], tmp_path, {}, tmp_path, full).kind == "IO"
    assert explain(text, {}, flows, [], tmp_path, {}, tmp_path).kind == "IO"
