"""Rows brought from Spark into Python, whose types hold less than Spark's.

Spark holds dates and times from year -290308 to 294247; Python's from 1 to 9999. A row with a
date of year 12000 (a zip code read as a year, a typo in a feed) reaches silver as data, but its
`collect()` ends in "OverflowError: date value out of range". What is only shown (a diff's
example rows, a failing rule's records) is brought as text, `shown_columns`; what a test
asserts on keeps its types, and a value Python cannot hold is said in one line naming its
column, `collected`. Decimals (Python's hold any precision), NaN and infinities need neither.
"""

from __future__ import annotations

from typing import Any

from medallion_dq.problems import MedallionDQError
from medallion_dq.text import sql_name

#: Spark types whose values Python may not hold (as they start in DataFrame.dtypes); a nested
#: type holding one is shown as JSON.
_TIMES = ("date", "timestamp")


class ValueOutOfRange(MedallionDQError, ValueError):
    """Rows hold a date or time Python cannot hold; the message names the column and value."""


def _holds_times(kind: str) -> bool:
    return any(t in kind for t in _TIMES)


def shown_columns(frame, columns: list[str] | None = None) -> list:
    """`columns` of `frame` (default all) as select columns: dates and times as their text (a
    nested one as JSON), the rest as they are."""
    from pyspark.sql import functions as F

    kinds = dict(frame.dtypes)
    out = []
    for name in columns if columns is not None else frame.columns:
        kind, column = kinds[name], F.col(sql_name(name))
        if kind.startswith(_TIMES):
            column = column.cast("string")
        elif _holds_times(kind):
            column = F.to_json(column)
        out.append(column.alias(name))
    return out


def collected(frame, what: str) -> list[Any]:
    """`frame.collect()`; a date or time Python cannot hold is ValueOutOfRange, naming `what`
    (the table), the column and the value, instead of an OverflowError from the conversion."""
    try:
        return frame.collect()
    except OverflowError:
        pass
    from pyspark.sql import functions as F

    for name, kind in frame.dtypes:
        if not _holds_times(kind):
            continue
        text = F.col(sql_name(name)).cast("string") if kind.startswith(_TIMES) else None
        if text is None:
            text = F.to_json(F.col(sql_name(name)))
        # A year of 5 digits or more, or before year 1 (Spark writes it with a '-' or '+').
        outside = frame.select(text.alias("v")).where(
            F.col("v").rlike(r'(^|")([+-]\d|0000-)|\d{5}-')
        )
        found = outside.limit(1).collect()
        if found:
            raise ValueOutOfRange(
                f"{what}: column {name} holds {found[0]['v']}, a date or time Python cannot hold"
                f" (years 1 to 9999): read it as text, CAST({sql_name(name)} AS STRING)"
            )
    raise ValueOutOfRange(f"{what}: a value Python cannot hold (years 1 to 9999)")
