"""The template repository's noxfile: the default `nox` runs its slow single-core sessions side
by side (`side_by_side`), and says which of them failed."""

from __future__ import annotations

import subprocess
import sys

from bakery import TEMPLATE_DIR


def test_side_by_side_names_each_lanes_lines_and_every_lane_that_failed() -> None:
    """Two lanes that fail at once (a session nox does not know, a release check without its
    tag): each line says its lane, and the error names both, with exit 1."""
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(TEMPLATE_DIR / "noxfile.py"), "-s", "side_by_side",
         "--", "no_such_session", "release_check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "[no_such_session] nox > Sessions not found: no_such_session" in output, output
    assert "[release_check] nox > Session release_check aborted: give the tag" in output, output
    assert "failed: no_such_session, release_check (their lines above)" in output, output
