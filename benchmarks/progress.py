"""The benchmarks' progress: on stderr, and as the live status's detail on a terminal (a plain
line at most every few seconds in CI); their results go to stdout."""

from __future__ import annotations

from medallion_dq.tools import console


def say(line: str) -> None:
    """A section's heading (`\\n== ...`) or a step of it (`   repeat 2/3: ...`)."""
    if line.startswith("\n"):
        console.info("")
    console.step(line.lstrip("\n"))
