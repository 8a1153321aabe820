"""The unit tier: no Spark. A test here that asks for a Spark session fails at once, saying where
it belongs, instead of starting a server minutes into the tier that should fail first."""

import pytest


@pytest.fixture(scope="session")
def local_spark():
    pytest.fail("a unit test starts no Spark: move it to tests/engine (or tests/system)")
