"""The unit tier: no Spark. A test here that asks for a Spark session fails at once, saying where
it belongs, instead of starting a server minutes into the tier that should fail first."""

import shutil
import sys
from pathlib import Path

import pytest

from medallion_dq import library


@pytest.fixture(scope="session")
def local_spark():
    pytest.fail("a unit test starts no Spark: move it to tests/engine (or tests/system)")


@pytest.fixture
def installed_pack(tmp_path, monkeypatch):
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
        monkeypatch.syspath_prepend(str(tmp_path))
        library.library.cache_clear()
        return package

    yield install
    library.library.cache_clear()
    sys.modules.pop("acme_conventions", None)
