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
