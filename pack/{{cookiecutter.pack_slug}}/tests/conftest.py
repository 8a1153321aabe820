from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def medallion_project() -> Path:
    """The folder medallion-dq's plugin keeps its warm Spark server's state in (.local/): the
    pack's, which has no bundle."""
    return Path(__file__).resolve().parents[1]
