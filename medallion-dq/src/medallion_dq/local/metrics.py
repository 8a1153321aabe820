"""An update's expectation metrics, from the metrics listener's file: what each dataset's rules
judged, summed over the update's micro-batches and refreshes."""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from dataclasses import dataclass

from medallion_dq.local import expectations
from medallion_dq.text import short_name

updates = logging.getLogger("medallion_dq.local.updates")


@dataclass
class DatasetMetrics:
    dataset: str
    input_records: int
    dropped_records: int
    expectations: list[dict]  # [{name, dataset, passed_records, failed_records}]


def drain_listener(local, offset: int, timeout: float = 10.0) -> str:
    """What the metrics listener wrote since `offset`, once it has handled every query of
    the update. It runs on Spark's listener bus, after each query ends, and the engine can
    return first: a flow's observation was missing from the file (seen with pollingInterval
    0). The bus hands events on in order, so once a marker query's own observation is in the
    file, theirs are too."""
    from pyspark.sql import functions as F

    def written() -> str:
        with contextlib.suppress(OSError), local.metrics_file.open() as lines:
            lines.seek(offset)  # only what this update's flows wrote
            return lines.read()
        return ""

    marker = f"dq:drain:{uuid.uuid4().hex}"
    try:
        local.spark.range(1).observe(marker, F.count(F.lit(1)).alias("n")).collect()
    except Exception:  # noqa: BLE001 - a lost server is reported by the update itself
        return written()
    needle, deadline = f'"observation":"{marker}"', time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in (text := written()):
            return text
        time.sleep(0.02)
    updates.warning(f"metrics listener: no word from it in {timeout:.0f} s; metrics may be missing")
    return written()


def dataset_metrics(
    update_id: str, declared: dict, flows: dict[str, str], observed: str
) -> dict[str, DatasetMetrics]:
    """Sum the listener's observations of this update (one per MV refresh or micro-batch),
    from `observed`, the lines it wrote during the update."""
    totals: dict[str, dict[str, int]] = {}
    prefix = expectations.observation_name(update_id, "")
    seen = set()
    for line in observed.splitlines():
        record = json.loads(line)
        key = (
            record["observation"],
            record.get("root_execution_id", record["execution_id"]),
        )
        if record["observation"].startswith(prefix) and key not in seen:
            seen.add(key)
            dataset = record["observation"][len(prefix) :]
            bucket = totals.setdefault(dataset, {})
            for key, value in record["metrics"].items():
                bucket[key] = bucket.get(key, 0) + int(value or 0)
    out = {}
    for dataset, declared_expectations in declared.items():
        # A failed flow records no metrics; a view's metrics count wherever it was read.
        if flows.get(short_name(dataset)) not in (None, "COMPLETED") or dataset not in totals:
            continue
        counts = totals[dataset]
        out[short_name(dataset)] = DatasetMetrics(
            dataset=short_name(dataset),
            input_records=counts.get("input", 0),
            dropped_records=counts.get("dropped", 0),
            expectations=[
                {
                    "name": e.name,
                    "dataset": short_name(dataset),
                    "passed_records": counts.get("input", 0) - counts.get(f"failed_{i}", 0),
                    "failed_records": counts.get(f"failed_{i}", 0),
                }
                for i, e in enumerate(declared_expectations)
            ],
        )
    return out
