"""The pipeline event log's columns, read alike by the quality gate and the dataset checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from medallion_dq.text import short_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: Where a flow's status is in a flow_progress event's ``details``.
STATUS_PATH = "$.flow_progress.status"
#: Where the expectation metrics are in ``details``, and their Spark DDL type.
EXPECTATIONS_PATH = "$.flow_progress.data_quality.expectations"
EXPECTATIONS_SCHEMA = (
    "array<struct<name:string,dataset:string,passed_records:bigint,failed_records:bigint>>"
)


def details_json(events_df: DataFrame) -> Any:
    """The `details` column as JSON text: Databricks' event log holds a string, a Delta table
    written from Python may hold a struct."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    details_type = events_df.schema["details"].dataType
    column = F.col("details")
    return column if isinstance(details_type, StringType) else F.to_json(column)


def update_ids(updates: str | Sequence[str]) -> tuple[str, ...]:
    """One update id, or several judged together (oldest first), as a tuple."""
    return (updates,) if isinstance(updates, str) else tuple(updates)


@dataclass(frozen=True)
class UpdateEvents:
    """The events of the updates being judged, read in one Spark query: the gate then asks
    which flows completed, their expectation metrics and each update's times in Python (each
    question was a Spark job of its own, 0.15-0.25 s on a warm local server, six or more per
    gate). `events`: one dict per event, as `read_update_events` selects them."""

    events: tuple[dict[str, Any], ...]

    def _progress(self, updates: str | Sequence[str]) -> list[dict[str, Any]]:
        wanted = set(update_ids(updates))
        return [
            e
            for e in self.events
            if e["update_id"] in wanted and e["event_type"] == "flow_progress"
        ]

    def completed(self, updates: str | Sequence[str]) -> set[str]:
        """Datasets (short names) whose flow reported COMPLETED in these updates."""
        return {
            short_name(e["dataset_name"] or e["flow_name"])
            for e in self._progress(updates)
            if (e["status"] or "").upper() == "COMPLETED" and (e["dataset_name"] or e["flow_name"])
        }

    def metrics(self, updates: str | Sequence[str]) -> list[dict[str, Any]]:
        """Expectation metrics summed over these updates, by dataset and rule (sorted):
        `[{"dataset", "name", "passed", "failed"}, ...]`."""
        totals: dict[tuple[str, str], list[int]] = {}
        for event in self._progress(updates):
            for found in event["expectations"] or ():
                key = (found["dataset"] or event["dataset_name"], found["name"])
                counts = totals.setdefault(key, [0, 0])
                counts[0] += found["passed_records"] or 0
                counts[1] += found["failed_records"] or 0
        return [
            {"dataset": dataset, "name": name, "passed": passed, "failed": failed}
            for (dataset, name), (passed, failed) in sorted(
                totals.items(), key=lambda item: tuple(str(k) for k in item[0])
            )
        ]

    def time(self, update_id: str, first: bool = False) -> str:
        """When the update's last event (its first with `first`) happened, in the session's
        time zone: `yyyy-MM-dd HH:mm:ss`, or with microseconds for `first`."""
        times = [str(e["time"]) for e in self.events if e["update_id"] == update_id and e["time"]]
        if not times:
            raise ValueError(f"no events of update {update_id}")
        return min(times) if first else max(times)[:19]


def read_update_events(events_df: DataFrame, updates: str | Sequence[str]) -> UpdateEvents:
    """The events of these updates (one or several), in one Spark query."""
    from pyspark.sql import functions as F

    details = details_json(events_df)
    expectations = F.from_json(F.get_json_object(details, EXPECTATIONS_PATH), EXPECTATIONS_SCHEMA)
    rows = (
        events_df.filter(F.col("origin.update_id").isin(*update_ids(updates)))
        .select(
            F.col("origin.update_id").alias("update_id"),
            F.col("event_type"),
            # Text in one fixed width: its order is the time's, min and max need no Spark.
            F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSSSSS").alias("time"),
            F.col("origin.dataset_name").alias("dataset_name"),
            F.col("origin.flow_name").alias("flow_name"),
            F.get_json_object(details, STATUS_PATH).alias("status"),
            # Only a flow's progress carries metrics: others would parse `details` for nothing.
            F.when(F.col("event_type") == "flow_progress", expectations).alias("expectations"),
        )
        .collect()
    )
    return UpdateEvents(tuple(row.asDict(recursive=True) for row in rows))
