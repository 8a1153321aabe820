"""The package's tests run against the sample project baked from the template (see sample.py)."""

import pytest

from sample import sample_project


@pytest.fixture(scope="session")
def medallion_project():
    """Overrides the plugin's fixture: the project under test is the baked sample."""
    return sample_project()


@pytest.fixture
def bare_machine(tmp_path, monkeypatch):
    """A machine with nothing installed: PATH with only `tmp_path/bin` on it (returned, for fake
    tools), no JAVA_HOME, an empty home (no ~/.m2) and an empty jar cache."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DQ_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "home").mkdir()
    return bin_dir
