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
