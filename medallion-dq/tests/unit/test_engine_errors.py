"""The local engine's errors: one root for callers that catch them all, their built-in base kept
for callers that catch that."""

import pytest

from medallion_dq import settings
from medallion_dq.local import container, lake, machine, server, spark
from medallion_dq.problems import MedallionDQError


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
