"""The package's tests run against the sample project baked from the template (see sample.py)."""

import contextlib
import importlib
import shutil
import sys
from pathlib import Path

import pytest

from medallion_dq import library
from sample import sample_project

# The slowest test files, slowest first (`--durations` of a CI run, per file): given out
# first, so the two workers end together (a file is one worker's, `--dist=loadfile`) and
# no file of 5-13 minutes starts when the rest is done. Other files keep their order.
SLOWEST_FIRST = [
    "system/test_lake_faults.py",
    "engine/test_auto_cdc.py",
    "engine/test_add_source_jobs.py",
    "engine/test_dataset_checks.py",
    "system/test_lake.py",
    "system/test_upgrade.py",
    "system/test_server.py",
    "engine/test_pack_loop.py",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        found = [at for at, file in enumerate(SLOWEST_FIRST) if path.endswith(file)]
        return found[0] if found else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: within a file, and among the rest, the order is kept


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


@pytest.fixture
def installed_pack(tmp_path):
    """A conventions pack installed as a wheel installs it: its package (library.yml, and
    policy.yml when given) and its distribution's metadata naming it in the entry point group
    medallion_dq.packs (found by importlib.metadata)."""

    def install(library_yml: str, policy_yml: str | None = None, version: str = "1.0.0") -> Path:
        package = tmp_path / "acme_conventions"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text("")
        (package / "library.yml").write_text(library_yml, encoding="utf-8")
        if policy_yml is not None:
            (package / "policy.yml").write_text(policy_yml, encoding="utf-8")
        for old in tmp_path.glob("acme_conventions-*.dist-info"):
            shutil.rmtree(old)
        info = tmp_path / f"acme_conventions-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: acme-conventions\nVersion: {version}\n"
        )
        (info / "entry_points.txt").write_text("[medallion_dq.packs]\nacme = acme_conventions\n")
        if str(tmp_path) not in sys.path:
            # Not monkeypatch.syspath_prepend: its undo puts back all of sys.path as it was,
            # dropping what the test added since (the sample's src, on its first bake).
            sys.path.insert(0, str(tmp_path))
        importlib.invalidate_caches()
        library.library.cache_clear()
        library.pack_thresholds.cache_clear()
        return package

    yield install
    with contextlib.suppress(ValueError):
        sys.path.remove(str(tmp_path))
    library.library.cache_clear()
    library.pack_thresholds.cache_clear()
    sys.modules.pop("acme_conventions", None)
