"""A local pipeline event log in the shape of Databricks' `event_log()`.

A `flow_definition` event per dataset an update defines (details: `output_dataset`, and its
`dataset_type` as Databricks shows it: STREAMING_TABLE for an AUTO CDC target, which the engine
computes as a materialized view here), and one `flow_progress` event per completed flow and
update, with `details` a JSON string holding
`flow_progress.data_quality.expectations` = [{name, dataset, passed_records, failed_records}] and
`dropped_records`, so the same metrics query and quality gate read both. A view is defined by a
flow of its own name too (`pyspark.pipelines` registers one), but the engine reports progress
only for flows that write: a view whose expectations judged rows in the update gets its
`flow_progress` event here, each entry's `dataset` naming the view, as Databricks' data
quality query groups them ("Pipeline event log", docs.databricks.com/en/ldp/monitor-event-logs).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

SCHEMA = (
    "id STRING, timestamp TIMESTAMP, event_type STRING, level STRING, message STRING, "
    "origin STRUCT<pipeline_id: STRING, pipeline_name: STRING, update_id: STRING, flow_name: STRING, dataset_name: STRING>, "
    "details STRING"
)


CHECK_EVENT = "data_quality_check"  # the gate's dataset-level checks, recorded after it ran


def _schema():
    """SCHEMA as a StructType, built here: a DDL string would cost a round trip to the server
    (Spark Connect parses it there) at every append."""
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    text = StringType()
    origin = StructType(
        [
            StructField(name, text)
            for name in ("pipeline_id", "pipeline_name", "update_id", "flow_name", "dataset_name")
        ]
    )
    return StructType(
        [
            StructField("id", text),
            StructField("timestamp", TimestampType()),
            StructField("event_type", text),
            StructField("level", text),
            StructField("message", text),
            StructField("origin", origin),
            StructField("details", text),
        ]
    )


def flow_progress_details(status: str, output_rows: int | None, metrics) -> dict:
    progress: dict = {"status": status}
    if output_rows is not None:
        progress["metrics"] = {"num_output_rows": output_rows}
    if metrics is not None:
        progress["data_quality"] = {
            "dropped_records": metrics.dropped_records,
            "expectations": metrics.expectations,
        }
    return {"flow_progress": progress}


# A dataset's kind as the runner records it, and as the local event log says it.
_DATASET_TYPES = {"MaterializedView": "MATERIALIZED_VIEW", "StreamingTable": "STREAMING_TABLE"}


def _definition(
    pipeline: str, update_id: str, dataset: str, flow: str | None, kind: str, now
) -> tuple:
    """A `flow_definition` event: which dataset a flow fills and how, with the dataset's kind
    as Databricks shows it (an AUTO CDC target is a streaming table)."""
    details = {
        "flow_definition": {
            "output_dataset": dataset,
            "dataset_type": _DATASET_TYPES[kind],
        }
    }
    origin = (pipeline, pipeline, update_id, flow, dataset)
    message = f"Dataset '{dataset}' is defined as {_DATASET_TYPES[kind]}."
    return (uuid.uuid4().hex, now, "flow_definition", "INFO", message, origin, json.dumps(details))


class EventLog:
    def __init__(self, spark, path: Path):
        self.spark = spark
        self.path = Path(path)

    def append(self, pipeline: str, result) -> None:
        now = datetime.now(timezone.utc)
        # When the update began, as Databricks' event log says it: the gate reads the rows
        # bronze ingested since then (landing drift).
        rows = [
            (
                uuid.uuid4().hex,
                now - timedelta(seconds=result.seconds),
                "create_update",
                "INFO",
                f"Update {result.update_id} started.",
                (pipeline, pipeline, result.update_id, None, None),
                # As the update was asked for (the Pipelines API's start-update fields).
                json.dumps({"create_update": {"full_refresh": bool(result.full_refresh)}}),
            )
        ]
        for dataset, kind in sorted(getattr(result, "kinds", {}).items()):
            if kind in _DATASET_TYPES:
                flow = dataset if dataset in result.flows else None  # else its flows' names
                rows.append(_definition(pipeline, result.update_id, dataset, flow, kind, now))
        for flow, state in sorted(result.flows.items()):
            if state not in ("COMPLETED", "FAILED", "SKIPPED", "CANCELED"):
                continue
            metrics = result.metrics.get(flow) if state == "COMPLETED" else None
            details = flow_progress_details(state, result.output_rows.get(flow), metrics)
            origin = (pipeline, pipeline, result.update_id, flow, flow)
            level = "INFO" if state == "COMPLETED" else "ERROR"
            rows.append(
                (
                    uuid.uuid4().hex,
                    now,
                    "flow_progress",
                    level,
                    f"Flow '{flow}' has {state}.",
                    origin,
                    json.dumps(details),
                )
            )
        for view, metrics in sorted(result.metrics.items()):
            # A view: its rules judged rows where it was read. One that judged none has no
            # event: a change feed's view without changes today is no empty delivery.
            if view not in result.flows and metrics.input_records:
                details = flow_progress_details("COMPLETED", None, metrics)
                origin = (pipeline, pipeline, result.update_id, view, view)
                message = f"Flow '{view}' has COMPLETED."
                event = ("flow_progress", "INFO", message, origin, json.dumps(details))
                rows.append((uuid.uuid4().hex, now, *event))
        if len(rows) > 1:
            # One commit per update, whatever the number of flows.
            self.spark.createDataFrame(rows, _schema()).write.format("delta").mode("append").save(
                str(self.path)
            )

    def append_checks(self, pipeline: str, update_id: str, results) -> None:
        """The quality gate's dataset-level checks of an update, one `data_quality_check` event
        each (details: {"data_quality_check": {name, dataset, kind, value, bound, passed, ...}}),
        so the report shows them beside the expectation metrics."""
        now = datetime.now(timezone.utc)
        rows = [
            (
                uuid.uuid4().hex,
                now,
                CHECK_EVENT,
                "INFO" if result.passed else "ERROR",
                str(result),
                (pipeline, pipeline, update_id, None, result.dataset),
                json.dumps({CHECK_EVENT: result.to_dict()}),
            )
            for result in results
        ]
        if rows:
            self.spark.createDataFrame(rows, _schema()).write.format("delta").mode("append").save(
                str(self.path)
            )

    def read(self):
        """The event log as a DataFrame (empty when nothing was run yet)."""
        if not (self.path / "_delta_log").exists():
            return self.spark.createDataFrame([], _schema())
        return self.spark.read.format("delta").load(str(self.path))
