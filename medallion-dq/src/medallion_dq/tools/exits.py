"""Every command's exit code, decided here.

- 0: done, and what it judged passed;
- 1: done, and it failed: an update (a full disk included), the quality gate stopped the job,
  `check` or `lake check` found errors, `contract check` found drift;
- 2: not started, or stopped before it changed anything: a mistake to fix first (no project, a
  wrong option, an error in pipeline code, no Java or Docker, invalid rules, bundle or data
  contract, a folder it may not write, the lake busy, another landing folder or a damaged table
  in the lake, a publish of rows the quality gate failed);
- 3: the Spark server was lost mid-command (the line says why, from the server's log);
- 128 + N: signal N ended it (130: SIGINT, 143: SIGTERM), what it had started put back.
"""

from __future__ import annotations

import sys

OK = 0
FAILED = 1
NOT_STARTED = 2
SERVER_LOST = 3
SIGINT = 128 + 2  # Ctrl-C


def of(error: BaseException) -> int | None:
    """The exit code of a command `error` ended, a user being told why in one line; None when
    it is no error of a user's (a bug: its traceback is shown). A `MedallionDQError` (the
    library's one error root) is a user's, and so is a folder the system refused."""
    from medallion_dq.problems import MedallionDQError
    from medallion_dq.project import writable

    if isinstance(error, KeyboardInterrupt):
        return SIGINT
    signum = getattr(error, "signum", None)  # the engine's Interrupted, a BaseException
    if isinstance(signum, int):
        return 128 + signum
    # A lost server or a failed put-back come from the engine alone: no import of Spark here.
    engine, lake = (sys.modules.get(f"medallion_dq.local.{m}") for m in ("spark", "lake"))
    if engine is not None and isinstance(error, engine.ServerLost):
        return SERVER_LOST
    if lake is not None and isinstance(error, lake.PutBackFailed):
        return FAILED
    if isinstance(error, TimeoutError):  # a server or container that did not answer in time
        return FAILED
    if isinstance(error, MedallionDQError):
        return NOT_STARTED
    if isinstance(error, ModuleNotFoundError):  # an install without Spark
        return NOT_STARTED if error.name == "pyspark" else None
    if isinstance(error, OSError) and writable.refused(error) is not None:
        return NOT_STARTED  # a read-only project, lake or cache, a full disk
    return None
