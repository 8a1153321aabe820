"""Databricks' dataset, flow and sink parameters that open-source `pyspark.pipelines` 4.2 lacks.

Databricks' `@dp.table`, `@dp.materialized_view` and `dp.create_streaming_table` take `private`
(older name `temporary`), `path`, `row_filter` and `cluster_by_auto`; the open-source functions
end with a Python TypeError on each. Here each is accepted, the dataset runs, and what differs
locally is warned once per update (a `LocalDifference` warning at the line that gave it):

- `private` / `temporary`: the table is a table of the pipeline's schema, so it is visible
  outside the pipeline here (Databricks keeps it inside). Its rows are the same.
- `path`: the open-source engine stores a pipeline's tables in its own location only.
- `row_filter`, `cluster_by_auto`: Unity Catalog / Databricks features; not applied here.

`@dp.append_flow(once=True)` (a backfill) is emulated: the 4.2 server refuses one-time flows
(`DEFINE_FLOW_ONCE_OPTION_NOT_SUPPORTED`); see `_register_once`.

What cannot run is refused at the call, in one line with what to do instead (and before Spark
by the preflight, `pipeline_files.unsupported_constructs`, RUN019):

- SQL `CREATE FLOW ... INSERT INTO ONCE`: the 4.2 SQL parser has no one-time flows;
- `dp.create_sink(format="kafka")`: no Kafka client (`spark-sql-kafka`) nor broker here.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from typing import Any

from medallion_dq.problems import MedallionDQError

DIFFERENCES = {
    "private": "the table is published in the pipeline's schema here (Databricks keeps a private"
    " table inside the pipeline); its rows are the same",
    "temporary": "the table is published in the pipeline's schema here (Databricks keeps a"
    " temporary, now private, table inside the pipeline); its rows are the same",
    "path": "the table is stored in the local lake, not at this path (open-source Spark's"
    " pipeline tables take no path)",
    "row_filter": "the row filter is not applied here: every row is visible (a Unity Catalog"
    " feature)",
    "cluster_by_auto": "no automatic liquid clustering here (a Databricks feature); the rows are"
    " the same",
}

# (what does not run and why, what to do instead): raised at the call, and RUN019 before Spark.
SQL_ONCE = (
    "CREATE FLOW ... INSERT INTO ONCE does not run locally (open-source Spark has no one-time"
    " flows)",
    "write the backfill in Python, @dp.append_flow(target=..., once=True), which runs here",
)
ONCE_IN_SQL = re.compile(r"\bINSERT\s+INTO\s+ONCE\b", re.IGNORECASE)
KAFKA = (
    "create_sink(format='kafka') does not run locally (no Kafka client or broker is part of the"
    " local engine)",
    "write to a Delta sink here (format='delta', options={'path': ...}) and keep the Kafka sink"
    " for Databricks",
)

FOREACH_BATCH_SINK = (
    "@dp.foreach_batch_sink does not run locally (open-source Spark's pipelines have no"
    " ForEachBatch sink)",
    "keep it for Databricks; here, write the rows to a Delta sink (dp.create_sink(name, 'delta',"
    " {'path': ...}) and an @dp.append_flow into it)",
)

# What Databricks' `pyspark.pipelines` has ("Lakeflow Spark Declarative Pipelines Python
# language reference"): a name outside it, and outside the installed module, is a typo.
DATABRICKS_FUNCTIONS = frozenset(
    {
        "table",
        "materialized_view",
        "temporary_view",
        "view",
        "append_flow",
        "create_streaming_table",
        "create_auto_cdc_flow",
        "create_auto_cdc_from_snapshot_flow",
        "apply_changes",
        "apply_changes_from_snapshot",
        "create_sink",
        "foreach_batch_sink",
        "expect",
        "expect_or_drop",
        "expect_or_fail",
        "expect_all",
        "expect_all_or_drop",
        "expect_all_or_fail",
    }
)


class LakeflowError(MedallionDQError, ValueError):
    """A Lakeflow construct the local engine cannot run as written: one line, what to do."""


class LocalDifference(MedallionDQError, UserWarning):
    """A Databricks parameter accepted locally, with what differs here (a warning, never
    raised; rooted as every class the package defines)."""


_warned: set[str] = set()
_update: dict[str, Any] = {"full_refresh": False, "database": None}


def begin(*, full_refresh: bool = False, database: str | None = None) -> None:
    """A new update (a full refresh or not, of a pipeline whose default schema is `database`):
    each difference is warned again once."""
    _warned.clear()
    _update.update(full_refresh=full_refresh, database=database)


def update() -> dict[str, Any]:
    """The update being registered: {"full_refresh": bool, "database": its default schema}."""
    return dict(_update)


def accept(kwargs: dict[str, Any], call: str, location: Any) -> dict[str, Any]:
    """`kwargs` without Databricks' parameters the open-source `call` lacks; each one given
    (not None / False) is warned once per update, at `location` (file and line)."""
    rest = {k: v for k, v in kwargs.items() if k not in DIFFERENCES}
    for key in DIFFERENCES.keys() & kwargs.keys():
        value = kwargs[key]
        if value is None or value is False or key in _warned:
            continue
        _warned.add(key)
        warnings.warn_explicit(
            f"{call}({key}=...): accepted; local difference: {DIFFERENCES[key]}",
            LocalDifference,
            getattr(location, "filename", None) or "<pipeline>",
            getattr(location, "line_number", None) or 0,
        )
    return rest


#: Every dataset of the local engine's own (AUTO CDC's events, a backfill's rows, a SQL file's
#: source view) is named with it: `internal` hides them wherever datasets are listed.
INTERNAL_PREFIX = "__dq_"
ONCE_PREFIX = INTERNAL_PREFIX + "once_"  # the materialized view a one-time flow's query is in


def internal(name: str) -> bool:
    """Whether dataset or table `name` (qualified or not) is the local engine's own, which
    Databricks has no counterpart of: hidden from a run's output, the event log, `report`,
    `diff`, the gate, `lake check` and the harness's readers."""
    return name.rsplit(".", 1)[-1].strip("`").lower().startswith(INTERNAL_PREFIX)


def once_table(target: str, flow: str) -> str:
    """The materialized view holding one-time flow `flow`'s rows, in `target`'s schema."""
    *schema, _ = target.split(".")
    return ".".join([*schema, ONCE_PREFIX + re.sub(r"\W", "_", flow)])


def _append_flow(original: Callable) -> Callable:
    @functools.wraps(original)
    def append_flow(*, target: str, name: str | None = None, once: bool = False, **kwargs):
        if not once:
            return original(target=target, name=name, **kwargs)
        from pyspark.pipelines.source_code_location import get_caller_source_code_location

        location = get_caller_source_code_location(stacklevel=1)

        def outer(func: Callable) -> None:
            _register_once(original, target, name or func.__name__, func, kwargs, location)

        return outer

    return append_flow


def register_internal(registry, kind, name: str, comment: str, location, func) -> None:
    """A dataset of the local engine's own (`kind`: StreamingTable or MaterializedView, with
    no options) and the one flow that fills it from `func`; `name` must be `internal`."""
    from pyspark.pipelines.flow import Flow

    if not internal(name):
        raise ValueError(f"an internal dataset's name starts with {INTERNAL_PREFIX}: {name}")

    registry.register_output(
        kind(
            name=name,
            comment=comment,
            source_code_location=location,
            table_properties={},
            partition_cols=None,
            cluster_by=None,
            schema=None,
            format=None,
        )
    )
    registry.register_flow(
        Flow(name=name, target=name, spark_conf={}, source_code_location=location, func=func)
    )


def _register_once(original, target, flow, func, kwargs, location) -> None:
    """A one-time flow, as Databricks runs it: its (batch) query's rows are appended to
    `target` in the first update and again after a full refresh only.

    Here the query is computed into a materialized view `__dq_once_<flow>` in those updates
    only (a later update that is no full refresh finds its table: the flow has run), and
    `target` reads that table as a stream: its rows once, and again when a full refresh resets
    the stream. A failed first update removes the tables it created (the runner's journal),
    that one too: the next update runs the flow.
    """
    from pyspark.pipelines.graph_element_registry import get_active_graph_element_registry
    from pyspark.pipelines.output import MaterializedView
    from pyspark.sql import SparkSession

    registry = get_active_graph_element_registry()
    spark = getattr(registry, "_spark", None) or SparkSession.active()
    rows = once_table(target, flow)
    database = None if "." in rows else _update["database"]
    if _update["full_refresh"] or not spark.catalog.tableExists(rows, database):
        comment = f"the rows of one-time flow {flow} (medallion-dq's append_flow(once=True))"
        register_internal(registry, MaterializedView, rows, comment, location, func)

    def appended():  # skipChangeCommits: a rewrite of the view is never read as new rows
        return spark.readStream.option("skipChangeCommits", "true").table(rows)

    appended.__name__ = flow
    original(target=target, name=flow, **kwargs)(appended)


def _create_sink(original: Callable) -> Callable:
    @functools.wraps(original)
    def create_sink(name: str, format: str, options: dict | None = None):  # noqa: A002
        if isinstance(format, str) and format.strip().lower() == "kafka":
            raise LakeflowError(f"{KAFKA[0]}: {KAFKA[1]}")
        return original(name, format, options)

    return create_sink


def _foreach_batch_sink(*args: Any, **kwargs: Any):
    raise LakeflowError(f"{FOREACH_BATCH_SINK[0]}: {FOREACH_BATCH_SINK[1]}")


def install() -> None:
    """Put the refusing `append_flow`, `create_sink` and `foreach_batch_sink` in
    `pyspark.pipelines` (once)."""
    import inspect

    import pyspark.pipelines as dp

    if getattr(dp, "foreach_batch_sink", None) is None:  # a later pyspark may have its own
        dp.foreach_batch_sink = _foreach_batch_sink  # type: ignore[attr-defined]

    for name, wrap in (("append_flow", _append_flow), ("create_sink", _create_sink)):
        current = getattr(dp, name, None)
        if current is None or getattr(current, "__dq_local__", False):
            continue
        if name == "append_flow" and "once" in inspect.signature(current).parameters:
            continue  # a later pyspark runs one-time flows itself
        wrapped = wrap(current)
        wrapped.__dq_local__ = True  # type: ignore[attr-defined]
        setattr(dp, name, wrapped)
