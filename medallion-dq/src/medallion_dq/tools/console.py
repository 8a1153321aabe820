"""What the user reads: the one place the tools write a line for a person.

Levels, each on the stream it has always had:

- `result`: what the command was asked for (a table, a rule file, `check: 0 error(s)`) on
  stdout, always;
- `progress`: what a long command is doing, on stdout (`run`'s update lines, which a pipe reads
  as they come); `info`: the same on stderr (`medallion-dq: run ... (checking it first)`);
  quiet mode (`medallion-dq -q`) drops both;
- `warning` and `error`: on stderr, always.

Every line is flushed as it is written, with a control character from the data shown as its
escape (`text.shown`), and a reader that has gone (`run ... | head`) drops the rest instead of
raising BrokenPipeError in the middle of an update. `opened` sets this up for a command: it also
wraps sys.stdout and sys.stderr (what argparse, warnings or another module still write) and shows
the library's `logging` lines: INFO and above as `medallion-dq: <line>` on stderr (DEBUG too with
`-v`), and the local engine's update lines (logger `UPDATES`) bare, on stdout or stderr.

Debugging output is `logging`'s, never this module's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import IO, Any, Literal

from medallion_dq.text import shown

#: The local engine's logger of what an update does, a line per step (medallion_dq.local.runner
#: and .project log to it): shown bare, where the command that started the update reads it.
UPDATES = "medallion_dq.local.updates"
LIBRARY = "medallion_dq"
PREFIX = "medallion-dq: "

_quiet = False


def set_quiet(quiet: bool) -> None:
    """Quiet mode: progress and info dropped; results, warnings and errors kept."""
    global _quiet
    _quiet = quiet


def quiet() -> bool:
    return _quiet


def result(line: str = "", end: str = "\n") -> None:
    _write(sys.stdout, line, end)


def progress(line: str) -> None:
    if not _quiet:
        _write(sys.stdout, line)


def info(line: str) -> None:
    if not _quiet:
        _write(sys.stderr, line)


def warning(line: str) -> None:
    _write(sys.stderr, line)


def error(line: str) -> None:
    _write(sys.stderr, line)


def _write(stream: IO[str], line: str, end: str = "\n") -> None:
    out = stream if isinstance(stream, Stream) else Stream(stream)
    out.write(f"{line}{end}")
    out.flush()


class Stream:
    """Standard output or error as the tools write them. A control character from the data (a
    landing value, a file name, a rule file) is shown as its escape (`\\x1b[31m` as text):
    it cannot colour, move or overwrite what a terminal or a CI log shows (`text.shown`). And
    a reader that has gone (`run ... | head` closed the pipe) drops the rest: the update, its
    put-back and its records are not cut short by a BrokenPipeError in the middle of a line."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            self._stream.write(shown(text))
        except BrokenPipeError:
            self._drop()
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # what is buffered goes nowhere, not to stderr
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Py4jOnRoot(logging.Filter):
    """Drops what py4j logs on the root logger (a gateway that stopped answering)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


class _Lines(logging.Handler):
    """A `logging` handler that hands each formatted line to `say`."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 - logging's own way: a bad record is no crash
            self.handleError(record)
            return
        self.say(record, line)

    def say(self, record: logging.LogRecord, line: str) -> None:
        raise NotImplementedError


class _LibraryLines(_Lines):
    """The library's `logging` lines (loggers under "medallion_dq") as `medallion-dq: <line>` on
    stderr, as it is at each line (a test may have replaced it); INFO is progress."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(f"{PREFIX}%(message)s"))

    def say(self, record: logging.LogRecord, line: str) -> None:
        (info if record.levelno < logging.WARNING else warning)(line)


class _UpdateLines(_Lines):
    """The engine's update lines (logger `UPDATES`), bare, on the stream `to` names."""

    def __init__(self, to: Literal["stdout", "stderr"]) -> None:
        super().__init__()
        self.to = to

    def say(self, record: logging.LogRecord, line: str) -> None:
        if record.levelno >= logging.WARNING:
            _write(sys.stdout if self.to == "stdout" else sys.stderr, line)
        else:
            (progress if self.to == "stdout" else info)(line)


def show_update_lines(to: Literal["stdout", "stderr"] = "stdout") -> None:
    """Show the engine's update lines on `to` from now on (the pytest plugin: in a test's
    output; a command: stdout, as `run` shows them)."""
    _update_lines().to = to


@contextlib.contextmanager
def update_lines_on(to: Literal["stdout", "stderr"]) -> Iterator[None]:
    """The engine's update lines on `to` for a while (`diff`: stderr, its report being stdout)."""
    handler = _update_lines()
    before, handler.to = handler.to, to
    try:
        yield
    finally:
        handler.to = before


def _update_lines() -> _UpdateLines:
    updates = logging.getLogger(UPDATES)
    handler = next((h for h in updates.handlers if isinstance(h, _UpdateLines)), None)
    if handler is None:
        handler = _UpdateLines("stdout")
        updates.addHandler(handler)
        updates.propagate = False  # not again as a library line
        if updates.level == logging.NOTSET:
            updates.setLevel(logging.INFO)
    return handler


@contextlib.contextmanager
def opened(*, quiet: bool = False, verbose: bool = False) -> Iterator[None]:
    """A command's console: sys.stdout and sys.stderr wrapped (`Stream`), the library's lines
    and the engine's update lines shown, quiet mode as asked; all put back after it."""
    library = logging.getLogger(LIBRARY)
    if not any(isinstance(handler, _LibraryLines) for handler in library.handlers):
        library.addHandler(_LibraryLines())
    level = library.level
    library.setLevel(logging.DEBUG if verbose else logging.INFO)
    # py4j logs a JVM gateway that stopped answering with its whole stack, on its loggers and,
    # when it gives up, on the root logger (`logging.exception`, which then prints to stderr);
    # the command reports the server's loss itself, in one line.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if not any(isinstance(f, _Py4jOnRoot) for f in logging.root.filters):
        logging.root.addFilter(_Py4jOnRoot())
    show_update_lines("stdout")
    was_quiet = _quiet
    set_quiet(quiet)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream(stdout), Stream(stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        set_quiet(was_quiet)
        library.setLevel(level)
