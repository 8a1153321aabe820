"""Bake the default project and run its own checks, as a user would after `cookiecutter`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bakery import bake


@pytest.mark.generated
def test_generated_project_lint_and_rules(tmp_path: Path, cookiecutter_config: Path) -> None:
    project = bake(tmp_path, cookiecutter_config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOX_", "VIRTUAL_ENV"))}
    result = subprocess.run(
        [sys.executable, "-m", "nox", "-s", "lint", "rules"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    output = (result.stdout + result.stderr)[-6000:]
    assert result.returncode == 0, f"nox -s lint rules failed in {project}:\n{output}"
