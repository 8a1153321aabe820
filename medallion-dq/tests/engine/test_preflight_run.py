"""A mistake only loading a pipeline file shows: one block naming the file and line, from a real
run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sample import sample_project

SILVER = Path("src/pipelines/validation/silver/orders.py")


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the sample project, to break."""
    copy = tmp_path / "project"
    shutil.copytree(sample_project(), copy, ignore=shutil.ignore_patterns(".local"))
    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), start=1) if needle in ln)


def cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.spark
def test_cli_misused_decorator_is_one_block_and_exit_2(project):
    """Only loading the file shows it: the grouped decorator given two strings (DQ015)."""
    edit(
        project / SILVER,
        "@dp.expect_all_or_drop(ORDERS.drop)",
        '@dp.expect_all_or_drop("valid_amount", "amount >= 0")',
    )
    try:
        done = cli(project, "run", "--pipeline", "validation")
    finally:  # the copy's lake server: not left up for the rest of the suite
        cli(project, "spark", "stop")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    line = line_of(project / SILVER, "@dp.expect_all_or_drop(")
    assert f"{SILVER.as_posix()}:{line}" in output and "DQ015" in output, output
    assert "Traceback" not in output and "at org.apache" not in output
