"""A command run as a user runs it in a terminal: its stdout and stderr a pseudo-terminal of a
given width, read as it writes (each piece with the time it came)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# What a terminal acts on and a reader does not see: colours, cursor moves, erasing a line.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@dataclass
class Seen:
    returncode: int
    #: (seconds since the start, text) as the terminal received it.
    pieces: list[tuple[float, str]] = field(default_factory=list)
    #: stdout when it was a pipe (``stdout_pipe``).
    stdout: str = ""

    @property
    def raw(self) -> str:
        return "".join(text for _, text in self.pieces)

    @property
    def lines(self) -> list[str]:
        """The text between line breaks, without control sequences (for output with no live
        status: a redrawn status would join its drawings in one line)."""
        return [_CONTROL.sub("", line) for line in self.raw.split("\n")]

    @property
    def drawn(self) -> list[str]:
        """Each run of text the terminal drew: between line breaks, carriage returns and
        cursor moves (a live status redrawn in place is one run per drawing)."""
        return [run for run in re.split(r"\n|" + _CONTROL.pattern, self.raw) if run]


def plain(text: str) -> str:
    """`text` without what only a terminal acts on (colours, cursor moves, carriage returns)."""
    return _CONTROL.sub("", text)


def run(
    command: list[str],
    *,
    cwd: Path | None = None,
    columns: int = 80,
    env: dict[str, str] | None = None,
    stdout_pipe: bool = False,
    timeout: float = 900,
) -> Seen:
    """`command` with a terminal of `columns` as stderr (and stdout, unless `stdout_pipe`). $COLUMNS, $LINES and $CI are not passed on: the terminal's size is its own,
    and this is no CI."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    drop = {"COLUMNS", "LINES", "CI", "NO_COLOR", "TERM"}
    environment = {k: v for k, v in (env or os.environ).items() if k not in drop}
    environment["TERM"] = "xterm-256color"
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout_pipe else follower,
        stderr=follower,
    )
    os.close(follower)
    seen = Seen(returncode=-1)
    piped: list[bytes] = []
    reader = None
    if stdout_pipe:  # read as it comes: a full pipe would stop the command
        reader = threading.Thread(target=lambda: piped.append(process.stdout.read()))
        reader.start()
    while True:
        if time.monotonic() - started > timeout:
            process.kill()
            break
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the last writer closed it
                data = b""
            if not data:
                break
            seen.pieces.append((time.monotonic() - started, data.decode(errors="replace")))
    seen.returncode = process.wait()
    if reader is not None:
        reader.join()
    os.close(leader)
    seen.stdout = b"".join(piped).decode(errors="replace")
    return seen


def cli(args: list[str], **options) -> Seen:
    """`python -m medallion_dq <args>` in a terminal (`run`'s options)."""
    return run([sys.executable, "-m", "medallion_dq", *args], **options)
