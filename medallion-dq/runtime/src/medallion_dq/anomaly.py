"""The `anomaly` check's judgment: a value against a robust band learned from its source's own
history. Pure Python (no Spark): the gate's check (checks.anomaly) and the benchmark call it alike.

The baseline is the median of the earlier values and their median absolute deviation (MAD),
scaled by 1.4826 so that it estimates a standard deviation for normal data; the band is
`median ± sensitivity × 1.4826 × MAD`. A robust baseline: one bad day in the history moves
neither. With `by_weekday`, the baseline is the delivery's weekday's alone once the history holds
`WEEKS` (2) deliveries of that weekday: a Sunday is compared with Sundays. Before, all days.

A flat history (MAD 0) would flag every wobble: the band's half-width is at least `min_width`
(a fraction of the median, default 10 %) and at least the metric's floor (a row, an hour of
lag, one percentage point of failure rate).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

MAD_SCALE = 1.4826
WEEKS = 2  # earlier deliveries of the same weekday before the baseline is the weekday's
MIN_POINTS = 3  # earlier deliveries before there is a baseline at all
DEFAULT_SENSITIVITY = 3.5
DEFAULT_HISTORY = 28
DEFAULT_MIN_WIDTH = 0.1
METRICS = ("rows", "lag", "failure_rate")
FLOOR = {"rows": 1.0, "lag": 1.0, "failure_rate": 0.01}  # least half-width: a row, an hour, 1 %
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Point:
    """One earlier delivery: its business date and the metric's value."""

    day: date
    value: float


@dataclass(frozen=True)
class Band:
    median: float
    low: float
    high: float
    points: int  # the deliveries the baseline was learned from
    weekday: int | None  # the weekday it is of (date.weekday()), None: all days
    days: int = 0  # the days those deliveries are of (weeks, of a weekday's)

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


def band(
    history: Sequence[Point],
    day: date,
    *,
    metric: str = "rows",
    sensitivity: float = DEFAULT_SENSITIVITY,
    size: int = DEFAULT_HISTORY,
    by_weekday: bool = True,
    min_width: float = DEFAULT_MIN_WIDTH,
) -> Band | None:
    """The expected band of the delivery of `day`, from the last `size` deliveries before it
    (None: fewer than MIN_POINTS of them, no baseline yet)."""
    earlier = sorted((p for p in history if p.day < day), key=lambda p: p.day)[-size:]
    weekday = day.weekday() if by_weekday else None
    chosen = [p for p in earlier if p.day.weekday() == weekday]
    if weekday is None or len({p.day for p in chosen}) < WEEKS:  # two updates of a day: 1 week
        weekday, chosen = None, earlier
    if len(chosen) < (WEEKS if weekday is not None else MIN_POINTS):
        return None
    same = [p.value for p in chosen]
    median = statistics.median(same)
    mad = statistics.median(abs(v - median) for v in same)
    half = max(sensitivity * MAD_SCALE * mad, min_width * abs(median), FLOOR[metric])
    days = len({p.day for p in chosen})
    return Band(median, max(0.0, median - half), median + half, len(same), weekday, days)


def missing(history: Sequence[Point], day: date, unit: str, hint: str = "") -> str:
    """Why there is no baseline for the delivery of `day` (band gave None), true to what band
    counts: the deliveries of the days before it. The others (several updates a day, a replay
    landed at once) are said apart, with `hint`, e.g. how to date rows by their data."""
    usable = sum(p.day < day for p in history)
    if usable == len(history):
        return f"no baseline yet: {usable} earlier {_plural(unit, usable)}, {MIN_POINTS} needed"
    shown = f"{DAYS[day.weekday()][:3]} {day:%Y-%m-%d}"
    said = f"no baseline yet: {usable} {_plural(unit, usable)} of the days before {shown}"
    said += f", {MIN_POINTS} needed"
    same = sum(p.day == day for p in history)
    later = len(history) - usable - same
    if same:
        counts = "it counts" if same == 1 else "they count"
        said += (
            f"; {same} more {'is' if same == 1 else 'are'} of {shown}: {counts} from the next day"
        )
    if later:
        said += f"; {later} {'is' if later == 1 else 'are'} of a later day"
    return said + (f" ({hint})" if hint else "")


def _plural(unit: str, n: int) -> str:
    """`updates`, `days` or `deliveries` as many as `n`."""
    if n == 1:
        return unit[:-3] + "y" if unit.endswith("ies") else unit.removesuffix("s")
    return unit


def describe(found: Band, metric: str, unit: str) -> str:
    """`expected 68–92 (Wednesday median 80 over 2 weeks)`; `unit`: days or updates."""
    low, high, median = (show(v, metric) for v in (found.low, found.high, found.median))
    if found.weekday is not None:
        basis = f"{DAYS[found.weekday]} median {median} over {found.days} weeks"
    else:
        basis = f"median {median} over the last {found.points} {unit}"
    return f"expected {low}–{high} ({basis})"


def show(value: float, metric: str) -> str:
    if metric == "failure_rate":
        return f"{value:.2%}"
    return f"{value:,.1f} h" if metric == "lag" else f"{value:,.0f}"
