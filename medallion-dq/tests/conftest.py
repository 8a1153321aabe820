"""The package's tests run against the sample project baked from the template (see sample.py)."""

import pytest

from sample import sample_project


@pytest.fixture(scope="session")
def medallion_project():
    """Overrides the plugin's fixture: the project under test is the baked sample."""
    return sample_project()
