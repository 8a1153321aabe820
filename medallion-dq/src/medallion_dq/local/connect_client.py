"""The end of a Spark Connect client: its session released, its gRPC channel closed safely."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import traceback

logger = logging.getLogger(__name__)


def end(client, release: bool = True) -> None:
    """Release the client's server session (when `release`), then close its channel once no
    call is left on it."""
    _quiet_grpc_threads()
    if release:
        with contextlib.suppress(Exception):
            client.release_session()
    # A call a signal broke (the update's event stream) ends on gRPC's own thread once the
    # server has let it go; a channel closed before that crashed the process (SIGSEGV in
    # channel_spin, seen after a Ctrl-C mid-update; grpc/grpc#19235). Left open when it does
    # not end: the process is ending, or the server is gone.
    if calls_end(client._channel, timeout=10):
        with contextlib.suppress(Exception):
            client.close()


def calls_end(channel, timeout: float) -> bool:
    """True once no call of the channel is in flight on gRPC's own thread (it counts them:
    `_call_state.managed_calls`, behind any interceptor channel), within `timeout` seconds;
    True too where that count is not there to read."""
    while not hasattr(channel, "_call_state") and hasattr(channel, "_channel"):
        channel = channel._channel  # grpc.intercept_channel's wrapper
    state = getattr(channel, "_call_state", None)
    deadline = time.monotonic() + timeout
    while getattr(state, "managed_calls", 0) > 0:
        if time.monotonic() > deadline:
            logger.debug("a gRPC call still runs after %s s: its channel is left open", timeout)
            return False
        time.sleep(0.05)
    return True


def _quiet_grpc_threads() -> None:
    """A channel closed after a signal broke one of its calls can fail on gRPC's own thread
    ("'NoneType' object is not callable" in channel_spin): the client's cleanup, not the run's.
    Its traceback goes to the log (debug), not to the user; other threads' errors are kept."""
    if getattr(threading.excepthook, "quiet_grpc", False):
        return
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        frames = traceback.extract_tb(args.exc_traceback)
        if any(f"{os.sep}grpc{os.sep}" in frame.filename for frame in frames):
            logger.debug("gRPC's thread: %s", args.exc_value)
        else:
            previous(args)

    hook.quiet_grpc = True  # type: ignore[attr-defined]
    threading.excepthook = hook
