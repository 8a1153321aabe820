"""Fault injection for the package's own tests: kill a run mid-update, find a process's JVMs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path


def run_cli_and_kill_server(
    root: Path,
    args: list[str],
    kill: Callable[[subprocess.Popen], None],
    *,
    env: dict | None = None,
) -> tuple[int, str, float]:
    """Run `medallion-dq <args>` in the project `root`, call `kill(process)` 3 s into its first
    update, and return the exit code, the output and the seconds from the kill to the exit."""
    cli = subprocess.Popen(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=root,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(cli.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 600
        while not any(re.search(r"\] update \w+: \d+ pipeline files", line) for line in output):
            assert cli.poll() is None, f"the run ended before its update:\n{''.join(output)}"
            assert time.monotonic() < deadline, "the update did not start within 10 minutes"
            time.sleep(0.2)
        time.sleep(3)  # into the update: files registered, the engine running
        kill(cli)
        killed = time.monotonic()
        code = cli.wait(timeout=300)
        ended_in = time.monotonic() - killed
    finally:
        if cli.poll() is None:
            cli.kill()
    reader.join(timeout=10)
    return code, "".join(output), ended_in


def child_processes(pid: int, name: str) -> list[int]:
    """Process ids of `pid`'s children called `name` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            command, rest = stat.read_text().rsplit(")", 1)
        except OSError:  # the process ended meanwhile
            continue
        if int(rest.split()[1]) == pid and command.split("(", 1)[1] == name:
            found.append(int(stat.parent.name))
    return found
