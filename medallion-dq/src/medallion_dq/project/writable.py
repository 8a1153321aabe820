"""Where a command may write: checked before it changes anything or starts Spark.

A project copied read-only, a lake of another user, a read-only file system or a full disk is
said in one line naming the path and what the command needed there (exit 2), not found by the
first write half-way through a run. `refused` turns an OSError that still reaches the command
line (a race, a place nobody checked) into the same line.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from medallion_dq.problems import MedallionDQError

#: What a write refused by the machine, not by the command, fails with.
REFUSALS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "a read-only file system",
    errno.ENOSPC: "the disk is full",
}


class CannotWrite(MedallionDQError, PermissionError):
    """A folder or file the command must write cannot be written; the message is the line."""


def problem(path: Path) -> tuple[Path, str] | None:
    """(the folder or file refusing, why) when `path` (made if missing) cannot be written."""
    probe = Path(path).absolute()
    while not probe.exists() and probe != probe.parent:  # the nearest one there: made below it
        probe = probe.parent
    try:
        disk = os.statvfs(probe)
    except OSError:
        return None  # not there after all: the write says what it is
    if disk.f_flag & os.ST_RDONLY:
        return probe, REFUSALS[errno.EROFS]
    folder = probe.is_dir()
    # The process's own rights (its effective user and capabilities), as its writes will have.
    effective = os.access in os.supports_effective_ids
    if not os.access(probe, os.W_OK | (os.X_OK if folder else 0), effective_ids=effective):
        return probe, REFUSALS[errno.EACCES]
    if disk.f_bavail == 0 and os.geteuid() != 0:  # root's reserve is not the user's
        return probe, REFUSALS[errno.ENOSPC]
    return None


def check(path: Path, what: str, root: Path | None = None, fix: str | None = None) -> None:
    """Raise CannotWrite when `path` cannot be written: `what` says what the command keeps there
    (e.g. "run keeps the lake there"); `root` shortens the paths said; `fix` replaces the usual
    one (another user's or a read-only folder: run as its owner, or on a copy)."""
    found = problem(path)
    if found is not None:
        at, why = found
        raise CannotWrite(_line(path, at, why, what, root, fix))


def check_all(paths: list[Path], what: str, root: Path | None = None) -> None:
    """`check` for every one of `paths`: a command that writes several files writes none of
    them when one cannot be written."""
    for path in paths:
        check(path, what, root)


@contextlib.contextmanager
def writing(path: Path, what: str, root: Path | None = None, fix: str | None = None) -> Iterator:
    """Writes of `path` inside: the machine's refusal (a full disk found only as the bytes go)
    is CannotWrite naming `path`, not the OSError that names no file."""
    try:
        yield
    except CannotWrite:
        raise
    except OSError as error:
        why = REFUSALS.get(error.errno or 0)
        if why is None:
            raise
        at = Path(error.filename) if error.filename else Path(path)
        raise CannotWrite(_line(Path(path), at, why, what, root, fix)) from None


def refused(error: OSError) -> str | None:
    """The line for an OSError of the machine's refusal (REFUSALS), else None."""
    why = REFUSALS.get(error.errno or 0)
    if why is None:
        return None
    where = error.filename or "a file"
    fix = (
        "free space on that disk" if error.errno == errno.ENOSPC else "give a folder you can write"
    )
    return f"cannot write {where} ({why}); fix: {fix}"


def _line(path: Path, at: Path, why: str, what: str, root: Path | None, fix: str | None) -> str:
    shown, refusing = _short(path, root), _short(at, root)
    because = f"({why})" if refusing == shown else f"({refusing}: {why})"
    if why == REFUSALS[errno.ENOSPC]:
        fix = "free space on that disk"
    fix = fix or "run it as a user who may write there, or on a copy of the project you own"
    return f"cannot write {shown} {because}: {what}; fix: {fix}"


def _short(path: Path, root: Path | None) -> str:
    path = Path(path).absolute()
    if root is not None and path != Path(root).absolute():  # the project folder: in full
        try:
            return str(path.relative_to(Path(root).absolute()))
        except ValueError:
            pass
    return str(path)
