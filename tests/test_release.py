"""The release check (`nox -s release_check -- medallion-dq-vX.Y.Z`) that gates the release
workflow, and the template repository's own workflows (actionlint, the GitHub schema)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bakery import TEMPLATE_DIR
from test_ci_files import tool

WORKFLOWS = sorted((TEMPLATE_DIR / ".github" / "workflows").glob("*.yml"))


def package(folder: Path, version: str, changelog: str) -> Path:
    """A package folder as the check reads it: __version__ and CHANGELOG.md."""
    init = folder / "runtime" / "src" / "medallion_dq" / "__init__.py"
    init.parent.mkdir(parents=True)
    init.write_text(f'"""medallion-dq."""\n\n__version__ = "{version}"\n', encoding="utf-8")
    (folder / "CHANGELOG.md").write_text(f"# Changelog\n\n{changelog}", encoding="utf-8")
    return folder


def release_check(tag: str, folder: Path) -> subprocess.CompletedProcess[str]:
    noxfile = str(TEMPLATE_DIR / "noxfile.py")
    return subprocess.run(
        [sys.executable, "-m", "nox", "-f", noxfile, "-s", "release_check", "--", tag, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


RELEASED = "## 0.5.0 — 2026-12-01\n\n- a change\n\n## 0.4.2 — 2026-11-30\n\n- a fix\n"


def test_a_tag_of_the_version_with_its_changelog_section_passes(tmp_path: Path) -> None:
    done = release_check("medallion-dq-v0.5.0", package(tmp_path, "0.5.0", RELEASED))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "medallion-dq-v0.5.0: __version__ and CHANGELOG.md agree" in done.stderr


def test_a_tag_that_is_not_the_version_fails(tmp_path: Path) -> None:
    done = release_check("medallion-dq-v0.5.1", package(tmp_path, "0.5.0", RELEASED))
    assert done.returncode == 1
    assert "__version__ = '0.5.0'; bump it to '0.5.1' or tag medallion-dq-v0.5.0" in done.stderr


@pytest.mark.parametrize(
    ("changelog", "why"),
    [
        ("## 0.4.2 — 2026-11-30\n\n- a fix\n", "no '## 0.5.0' section"),
        ("## 0.5.0 (unreleased)\n\n- a change\n", "is still unreleased"),
        ("## 0.5.01 — 2026-12-01\n\n- not this version\n", "no '## 0.5.0' section"),
    ],
    ids=["missing", "unreleased", "another-version"],
)
def test_a_version_without_a_dated_changelog_section_fails(
    changelog: str, why: str, tmp_path: Path
) -> None:
    done = release_check("medallion-dq-v0.5.0", package(tmp_path, "0.5.0", changelog))
    assert done.returncode == 1
    assert why in done.stderr


def test_a_tag_of_another_form_fails(tmp_path: Path) -> None:
    done = release_check("v0.5.0", package(tmp_path, "0.5.0", RELEASED))
    assert done.returncode == 1
    assert "is not medallion-dq-vX.Y.Z; for this version: medallion-dq-v0.5.0" in done.stderr


def test_there_are_ci_and_release_workflows() -> None:
    assert [path.name for path in WORKFLOWS] == ["ci.yml", "release.yml"]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_the_workflow_passes_actionlint_and_the_schema(workflow: Path) -> None:
    lint = subprocess.run(
        [tool("actionlint"), "-no-color", str(workflow.relative_to(TEMPLATE_DIR))],
        cwd=TEMPLATE_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    schema = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
