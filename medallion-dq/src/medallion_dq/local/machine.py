"""This machine as the backends need it: its Java, the cache folder, what a JVM's log says,
and the error when a backend cannot start here."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from medallion_dq.problems import MedallionDQError
from medallion_dq.project import settings

# A Java stack frame ("\tat org.apache...", "\t... 12 more"): it would push a log's own words
# (the error, its "Caused by:") out of the few lines an error message shows.
_FRAME = re.compile(r"^\s+(at |\.\.\.)")


_activity: list[str] = []  # what this process is, innermost last (`named`)


@contextlib.contextmanager
def named(what: str) -> Iterator[None]:
    """While inside, this process is `what` (`medallion-dq run`, a pytest session): a lock it
    holds names it to the process it keeps waiting (the lake's, a server's lease)."""
    _activity.append(what)
    try:
        yield
    finally:
        _activity.pop()


def activity() -> str:
    """What this process is, as a lock it holds says it: what it was `named`, else its program
    (never its arguments: they may hold a secret)."""
    if _activity:
        return _activity[-1]
    path = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    program = path.parent.name if path.name == "__main__.py" else path.name  # python -m pytest
    if program in ("", "-c", "-m"):
        return "a Python process"
    return f"`{program}`"


def sign(handle: IO[str]) -> None:
    """Write who holds the lock of `handle` into its file (`<pid> <activity>`), for `holder`."""
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()} {activity()}")
    handle.flush()


def holder(handle: IO[str], unknown: str = "another process") -> str:
    """Who holds the lock of `handle`, as its file says (`sign`): "`medallion-dq run` (process
    4242)"; `unknown` where it says nothing (a lock of an older version)."""
    handle.seek(0)
    pid, _, what = handle.read().strip().partition(" ")
    return f"{what or unknown} (process {pid or '?'})"


class BackendUnavailable(MedallionDQError, RuntimeError):
    """A backend cannot start here; the message says what is missing and how to fix it."""


def cache_dir() -> Path:
    path = settings.CACHE_DIR.get()
    path.mkdir(parents=True, exist_ok=True)
    return path


def java_tool(name: str) -> str | None:
    """A JDK tool (java, javac, jar): $JAVA_HOME's when set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / name) if home else shutil.which(name)


def java_binary() -> str:
    """Which Java a new server would run (no JVM started to find out)."""
    java = java_tool("java")
    return os.path.realpath(java) if java else ""


def check_java() -> str:
    """Return the Java version, or raise with the fix when no usable Java 17+ is found."""
    java = java_tool("java")
    fix = "install Java 17 or 21 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME; or use --backend container, which needs only Docker"
    if not java or not Path(java).exists():
        raise BackendUnavailable(f"no Java found for the embedded Spark backend: {fix}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BackendUnavailable(f"{java} -version failed ({error}): {fix}") from None
    match = re.search(r'version "(\d+)', out)
    if not match or int(match.group(1)) < 17:
        raise BackendUnavailable(
            f"Java 17 or newer is needed, found: {out.splitlines()[0] if out else java}: {fix}"
        )
    return match.group(1)


def last_words(text: str, lines: int = 12) -> str:
    """The last lines of a JVM's output that say something: no blank lines, no stack frames."""
    said = [line for line in text.splitlines() if line.strip() and not _FRAME.match(line)]
    return "\n".join(said[-lines:])


# Why a JVM ended, in its own words: (pattern, what it means). The first found is the cause.
# Out of memory is said anywhere in the log's tail (the JVM exits on it at once); the others
# only as its last line: a flow that overflowed is logged too, and the server lives on.
_DEATHS = (
    (
        r"OutOfMemoryError: Requested array size exceeds VM limit",
        "a value larger than Java can hold (Requested array size exceeds VM limit)",
    ),
    (r"OutOfMemoryError: ([^\n]+)", "out of memory ({0})"),
    (
        r"(?:ARITHMETIC_OVERFLOW|integer overflow|NegativeArraySizeException)[^\n]*\Z",
        "an overflow ({0})",
    ),
    (r"StackOverflowError[^\n]*\Z", "a stack overflow (an expression nested too deeply)"),
)


def death_cause(text: str) -> str | None:
    """What ended a JVM, from its log's last words (out of memory, an overflow...); None:
    unsaid."""
    text = text.rstrip()
    for pattern, meaning in _DEATHS:
        if found := re.search(pattern, text):
            return meaning.format(found[found.lastindex or 0].strip()[:200])
    return None


def log_tail(log: Path, lines: int = 12) -> str:
    """`last_words` of a server's log file."""
    try:
        return last_words(log.read_text(errors="replace"), lines)
    except OSError:
        return "(no server log)"


@contextlib.contextmanager
def exclusive(path: Path, busy: Callable[[IO[str]], None] = lambda _: None) -> Iterator[IO[str]]:
    """An exclusive lock on file `path` (made if missing) while inside, released however the
    block ends. When another process holds it, `busy(file)` is called before waiting: it says
    so, or raises instead of waiting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except BlockingIOError:
            held = False
        if not held:  # outside the except: an error busy() raises carries no BlockingIOError
            busy(handle)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_PLAIN = re.compile(r"[A-Za-z0-9/._~-]+")


def plain_path(folder: Path) -> Path:
    """`folder`, made if missing, by a path of plain characters only. The pipeline engine
    writes its storage root's URI text as a path (a space becomes a folder named `%20`, far
    from the lake) and misses its own checkpoints in a full refresh; a folder whose path needs
    escaping is reached through a link in this user's cache, named by the folder's digest."""
    folder.mkdir(parents=True, exist_ok=True)
    if _PLAIN.fullmatch(str(folder)):
        return folder
    links = cache_dir() / "links"
    if not _PLAIN.fullmatch(str(links)):
        return folder  # nothing plainer here: the engine's own handling
    links.mkdir(parents=True, exist_ok=True)
    link = links / hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    if not (link.is_symlink() and os.readlink(link) == str(folder)):
        partial = links / f"{link.name}.{os.getpid()}"
        partial.unlink(missing_ok=True)
        partial.symlink_to(folder)
        partial.replace(link)  # whole or not at all, when two runs make it at once
    return link
