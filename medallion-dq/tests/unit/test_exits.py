"""Every command's exit code is decided in one place (tools/exits.py): an error of the library's
one root is one line and exit 2, a lost server 3, a signal 128 + N, anything else a bug."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from medallion_dq.problems import DataQualityError, MedallionDQError
from medallion_dq.project.config import ProjectNotFound
from medallion_dq.tools import exits


class Interrupted(BaseException):  # the engine's, as the code is read: a signal's number
    signum = 15


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ProjectNotFound("no databricks.yml"), exits.NOT_STARTED),
        (DataQualityError([]), exits.NOT_STARTED),
        (MedallionDQError("any of the library's own"), exits.NOT_STARTED),
        (OSError(errno.ENOSPC, "No space left on device", "/x"), exits.NOT_STARTED),
        (ModuleNotFoundError("no pyspark", name="pyspark"), exits.NOT_STARTED),
        (TimeoutError("the server did not answer"), exits.FAILED),
        (KeyboardInterrupt(), exits.SIGINT),
        (Interrupted(), 143),
        (RuntimeError("a bug"), None),
        (ModuleNotFoundError("no yaml", name="yaml"), None),
        (OSError(errno.EBADF, "Bad file descriptor"), None),
    ],
)
def test_each_error_has_its_exit_code_or_is_a_bug(error, code):
    assert exits.of(error) == code


def test_no_project_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "medallion_dq", "check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
