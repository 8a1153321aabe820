"""The pipeline event log's columns, read alike by the quality gate and the dataset checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

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
