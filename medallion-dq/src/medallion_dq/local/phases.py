"""Where an update's time goes (UpdateResult.timings), split into phases."""

from __future__ import annotations

import time

# Where an update's time goes, in order (UpdateResult.timings):
PHASES = (
    "registration",  # the pipeline's files loaded and its graph registered (client side)
    "definitions",  # inside the engine, before any flow is queued: graph analysis, table commits
    "flows",  # from the first flow queued to the last one finished
    "idle",  # inside the engine, after the last flow finished, until the update returns
    "bookkeeping",  # the runner's own: Delta versions before and after, journal, metrics, rows
    "event_log",  # the event-log append
)


class Phases:
    """Splits an update's wall time into PHASES: the runner's parts by its own clock, the
    engine's by the timestamps of its events (the same clock: the server runs on this host or
    in a container on it)."""

    def __init__(self):
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._mark = time.perf_counter()
        self.started = self._mark
        self.engine_start = self.first_queued = self.last_finished = None

    def lap(self, phase: str) -> None:
        """Book the time since the last lap to `phase`."""
        now = time.perf_counter()
        self.seconds[phase] += now - self._mark
        self._mark = now

    def event(self, state: str, timestamp: float | None) -> None:
        """A flow event of the engine, with its server timestamp (epoch seconds)."""
        if timestamp is None:
            return
        if state == "QUEUED" and self.first_queued is None:
            self.first_queued = timestamp
        if state in ("COMPLETED", "FAILED", "SKIPPED"):
            self.last_finished = max(self.last_finished or timestamp, timestamp)

    def engine(self, started_at: float) -> None:
        """The engine's run returned; it had started at `started_at` (epoch seconds)."""
        ended_at = time.time()
        queued = min(max(self.first_queued or ended_at, started_at), ended_at)
        finished = min(max(self.last_finished or queued, queued), ended_at)
        self.seconds["definitions"] += queued - started_at
        self.seconds["flows"] += finished - queued
        self.seconds["idle"] += ended_at - finished
        self._mark = time.perf_counter()

    def result(self) -> dict[str, float]:
        return {**self.seconds, "total": time.perf_counter() - self.started}
