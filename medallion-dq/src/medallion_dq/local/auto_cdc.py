"""Databricks' AUTO CDC (SCD type 1 and 2) for open-source Spark's pipeline engine.

Open-source `pyspark.pipelines` 4.2 has `create_auto_cdc_flow` for SCD type 1 only, and its flow
fails on a Delta target (`AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE`). `install()` puts Databricks'
`create_auto_cdc_flow`, its older name `apply_changes` and `create_streaming_table` in its
place, with Databricks' signatures, so the same pipeline file runs on Databricks (native
functions, nothing patched) and here.

Databricks' result of AUTO CDC is a function of every change event ever read, ordered by
`sequence_by` whatever order they came in (a late event older than a delete is ignored: the
delete left a tombstone). So a target is computed here in two datasets:

    source --(streaming append flow: each event read once, checkpointed)--> __dq_cdc_events_<source>
    __dq_cdc_events_<source> --(materialized view, window functions, one pass)--> <t>

The events table (one per source) holds every event read so far (Databricks keeps state and tombstones in its
own backing table, `__apply_changes_storage_<t>`); the target is recomputed from all of them in
each update, so it holds Databricks' rows after every update and after a full refresh. Nothing
here analyses a DataFrame (the engine refuses that in a query function): columns are chosen by
name pattern (`colRegex`), never listed, and never with drop() or withColumns(), whose input the
server's planner analyses at once.

`create_streaming_table(t)` comes before the flow that fills `t`, so its registration waits
until the flow (or the end of the files, `finish()`) says whether `t` is an AUTO CDC target.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

from medallion_dq.local import lakeflow_params, snapshots
from medallion_dq.problems import MedallionDQError

INTERNAL = lakeflow_params.INTERNAL_PREFIX + "cdc_"  # internal columns, the events table's name
SEQ, DEL, TRUNC, TRACK = (f"{INTERNAL}{n}" for n in ("seq", "del", "trunc", "track"))
START_AT, END_AT = "__START_AT", "__END_AT"


def events_table(source: str, target: str) -> str:
    """The table that holds every change event read from `source`, in `target`'s schema: one
    per source, whatever number of targets it feeds."""
    *schema, _ = target.split(".")
    return ".".join([*schema, INTERNAL + "events_" + re.sub(r"\W", "_", source.strip("`"))])


@dataclass
class CdcFlow:
    """One create_auto_cdc_flow call, its arguments checked."""

    target: str
    source: str
    keys: list
    sequence_by: Any  # a Column
    scd_type: int
    apply_as_deletes: Any = None
    apply_as_truncates: Any = None
    column_list: list | None = None
    except_column_list: list | None = None
    track_history_column_list: list | None = None
    track_history_except_column_list: list | None = None
    ignore_null_updates: bool = False
    location: Any = None  # where it was called (the engine names it in its errors)
    registry: Any = None
    snapshots: Any = None  # AUTO CDC FROM SNAPSHOT: a table's name, or a function (snapshots.py)


@dataclass
class _Pending:
    """Streaming tables declared and AUTO CDC flows met during one update's registration."""

    tables: dict[str, tuple[dict, Any, Any]] = field(default_factory=dict)  # name: (options, ...)
    flows: dict[str, CdcFlow] = field(default_factory=dict)  # by target
    events: set[str] = field(default_factory=set)  # events tables registered


_pending = _Pending()


class AutoCdcError(MedallionDQError, ValueError):
    """An AUTO CDC call this engine cannot run as written: one line, what to do instead."""


def _column(value: Any, arg: str):
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, str):
        return F.expr(value)
    if isinstance(value, Column):
        return value
    raise AutoCdcError(f"{arg} must be a SQL expression string or a Column, got {value!r}")


def _columns(value: Any, arg: str) -> list | None:
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, Column)) for v in value):
        raise AutoCdcError(f"{arg} must be a list of column names or Columns, got {value!r}")
    return [F.col(v) if isinstance(v, str) else v for v in value]


def _name(column: Any) -> str:
    """The name a column reference stands for: col("city") -> city."""
    text = str(column)
    found = re.fullmatch(r"Column<'(.+)'>", text)
    return (found[1] if found else text).strip("`")


def _scd_type(value: Any) -> int:
    if value is None:
        return 1
    if str(value).strip() in ("1", "2") and not isinstance(value, bool):
        return int(str(value).strip())
    raise AutoCdcError(f"stored_as_scd_type must be 1 or 2 (an int or a string), got {value!r}")


def create_auto_cdc_flow(
    target: str,
    source: str,
    keys: list,
    sequence_by: Any,
    ignore_null_updates: bool = False,
    apply_as_deletes: Any = None,
    apply_as_truncates: Any = None,
    column_list: list | None = None,
    except_column_list: list | None = None,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: list | None = None,
    track_history_except_column_list: list | None = None,
    name: str | None = None,
    once: bool = False,
    **_where: Any,  # location: where an SQL file's statement is (Python: the caller's line)
) -> None:
    """Databricks' create_auto_cdc_flow (see the module's doc for how it runs here)."""
    from pyspark.pipelines.source_code_location import get_caller_source_code_location

    if unknown := set(_where) - {"location"}:
        raise AutoCdcError(f"create_auto_cdc_flow: unknown argument {', '.join(sorted(unknown))}")
    for arg, value in (("target", target), ("source", source)):
        if not isinstance(value, str) or not value.strip():
            raise AutoCdcError(f"create_auto_cdc_flow: {arg} must be a dataset name, got {value!r}")
    if name is not None and not isinstance(name, str):
        raise AutoCdcError(f"create_auto_cdc_flow: name must be a string, got {name!r}")
    if once:
        raise AutoCdcError(
            "create_auto_cdc_flow(once=True) does not run locally yet: load the backfill into"
            " the source and drop once=True"
        )
    scd = _scd_type(stored_as_scd_type)
    if column_list is not None and except_column_list is not None:
        raise AutoCdcError("create_auto_cdc_flow: give column_list or except_column_list, not both")
    if track_history_column_list is not None and track_history_except_column_list is not None:
        raise AutoCdcError(
            "create_auto_cdc_flow: give track_history_column_list or"
            " track_history_except_column_list, not both"
        )
    if scd == 1 and (track_history_column_list or track_history_except_column_list):
        raise AutoCdcError(
            "create_auto_cdc_flow: track_history_* lists are for stored_as_scd_type=2"
        )
    if scd == 2 and apply_as_truncates is not None:
        raise AutoCdcError(
            "create_auto_cdc_flow: apply_as_truncates is for stored_as_scd_type=1 only"
        )
    key_columns = _columns(keys, "keys")
    if not key_columns:
        raise AutoCdcError("create_auto_cdc_flow: keys must name at least one column")
    flow = CdcFlow(
        target=target,
        source=source,
        keys=key_columns,
        sequence_by=_column(sequence_by, "sequence_by"),
        scd_type=scd,
        apply_as_deletes=None
        if apply_as_deletes is None
        else _column(apply_as_deletes, "apply_as_deletes"),
        apply_as_truncates=None
        if apply_as_truncates is None
        else _column(apply_as_truncates, "apply_as_truncates"),
        column_list=_columns(column_list, "column_list"),
        except_column_list=_columns(except_column_list, "except_column_list"),
        track_history_column_list=_columns(track_history_column_list, "track_history_column_list"),
        track_history_except_column_list=_columns(
            track_history_except_column_list, "track_history_except_column_list"
        ),
        ignore_null_updates=bool(ignore_null_updates),
        location=_where.get("location") or get_caller_source_code_location(stacklevel=1),
    )
    if flow.ignore_null_updates and flow.column_list is None:
        raise AutoCdcError(
            "create_auto_cdc_flow(ignore_null_updates=True) runs locally with column_list only"
            " (a pipeline cannot list a source's columns here): name the target's columns in"
            " column_list"
        )
    if flow.ignore_null_updates and scd == 2:
        raise AutoCdcError(
            "create_auto_cdc_flow(ignore_null_updates=True) with stored_as_scd_type=2 does not"
            " run locally yet"
        )
    declare(flow)


apply_changes = create_auto_cdc_flow


def create_auto_cdc_from_snapshot_flow(
    target: str,
    source: Any,
    keys: list,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: list | None = None,
    track_history_except_column_list: list | None = None,
    name: str | None = None,
    once: bool = False,
) -> None:
    """Databricks' create_auto_cdc_from_snapshot_flow: each snapshot is turned into change
    events (a row new or changed: an upsert; a key gone: a delete), sequenced by the snapshot's
    version, and the target computed from them as create_auto_cdc_flow's (snapshots.py)."""
    from pyspark.pipelines.source_code_location import get_caller_source_code_location

    call = "create_auto_cdc_from_snapshot_flow"
    if not isinstance(target, str) or not target.strip():
        raise AutoCdcError(f"{call}: target must be a dataset name, got {target!r}")
    if not (isinstance(source, str) and source.strip()) and not callable(source):
        raise AutoCdcError(
            f"{call}: source must be a table's name or a function returning (DataFrame,"
            f" version) or None, got {source!r}"
        )
    if once:
        raise AutoCdcError(
            f"{call}(once=True) does not run locally yet: drop once=True (each update then"
            " reads the next snapshots)"
        )
    scd = _scd_type(stored_as_scd_type)
    if track_history_column_list is not None and track_history_except_column_list is not None:
        raise AutoCdcError(
            f"{call}: give track_history_column_list or track_history_except_column_list, not both"
        )
    if scd == 1 and (track_history_column_list or track_history_except_column_list):
        raise AutoCdcError(f"{call}: track_history_* lists are for stored_as_scd_type=2")
    key_columns = _columns(keys, "keys")
    if not key_columns:
        raise AutoCdcError(f"{call}: keys must name at least one column")
    from pyspark.sql import functions as F

    declare(
        CdcFlow(
            target=target,
            source=source if isinstance(source, str) else getattr(source, "__name__", "source"),
            keys=key_columns,
            sequence_by=F.col(snapshots.VERSION),
            scd_type=scd,
            apply_as_deletes=F.col(snapshots.GONE),
            track_history_column_list=_columns(
                track_history_column_list, "track_history_column_list"
            ),
            track_history_except_column_list=_columns(
                track_history_except_column_list, "track_history_except_column_list"
            ),
            location=get_caller_source_code_location(stacklevel=1),
            snapshots=source,
        )
    )


def create_streaming_table(name: str, **options) -> None:
    """Databricks' create_streaming_table: registered once the files say what fills it."""
    from pyspark.pipelines.source_code_location import get_caller_source_code_location

    if not isinstance(name, str) or not name.strip():
        raise AutoCdcError(f"create_streaming_table: name must be a string, got {name!r}")
    location = get_caller_source_code_location(stacklevel=1)
    options = lakeflow_params.accept(options, "dp.create_streaming_table", location)
    unknown = set(options) - _TABLE_OPTIONS
    if unknown:
        raise AutoCdcError(
            f"create_streaming_table: {', '.join(sorted(unknown))} not run locally yet"
            f" (it takes {', '.join(sorted(_TABLE_OPTIONS))})"
        )
    declare_table(name, options, location)


def declare_table(name: str, options: dict, location: Any) -> None:
    """A streaming table declared at `location`, with these create_streaming_table options."""
    from pyspark.pipelines.graph_element_registry import get_active_graph_element_registry

    if name in _pending.flows:
        _register(_pending.flows.pop(name), options, location)
    else:
        _pending.tables[name] = (options, get_active_graph_element_registry(), location)


_TABLE_OPTIONS = {"comment", "table_properties", "partition_cols", "cluster_by", "schema", "format"}


def declare(flow: CdcFlow) -> None:
    from pyspark.pipelines.graph_element_registry import get_active_graph_element_registry

    flow.registry = get_active_graph_element_registry()
    if flow.target in _pending.flows:
        raise AutoCdcError(
            f"create_auto_cdc_flow: {flow.target} already has an AUTO CDC flow; several flows"
            " into one target do not run locally yet"
        )
    if flow.target in _pending.tables:
        options, _, location = _pending.tables.pop(flow.target)
        _register(flow, options, location)
    else:
        _pending.flows[flow.target] = flow


def begin() -> None:
    _pending.tables.clear()
    _pending.flows.clear()
    _pending.events.clear()


def finish() -> None:
    """End of registration: declared tables no AUTO CDC flow fills are plain streaming tables;
    an AUTO CDC flow into a table never declared is refused, as on Databricks."""
    from pyspark.pipelines.output import StreamingTable

    try:
        for name, (options, registry, location) in _pending.tables.items():
            registry.register_output(
                StreamingTable(name=name, source_code_location=location, **_table_options(options))
            )
        for flow in _pending.flows.values():
            raise AutoCdcError(
                f"{flow.location.filename}:{flow.location.line_number}: create_auto_cdc_flow:"
                f" target {flow.target} is not declared; declare it first:"
                f" dp.create_streaming_table({flow.target!r})"
            )
    finally:
        begin()


def _table_options(options: dict) -> dict:
    return {
        "comment": options.get("comment"),
        "table_properties": options.get("table_properties") or {},
        "partition_cols": options.get("partition_cols"),
        "cluster_by": options.get("cluster_by"),
        "schema": options.get("schema"),
        "format": options.get("format"),
    }


def _register(flow: CdcFlow, options: dict, location: Any) -> None:
    """The events table, its streaming flow from the source, and the target computed from it."""
    from pyspark.pipelines.flow import Flow
    from pyspark.pipelines.output import MaterializedView, StreamingTable
    from pyspark.sql import SparkSession

    registry = flow.registry
    spark = getattr(registry, "_spark", None) or SparkSession.active()
    events = events_table(flow.source, flow.target)
    if flow.snapshots is not None:
        events = snapshots.store(spark, flow, lakeflow_params.update())
    elif events not in _pending.events:  # each event read once, whatever reads it
        _pending.events.add(events)
        comment = f"change events of {flow.source} (medallion-dq's AUTO CDC)"
        lakeflow_params.register_internal(
            registry,
            StreamingTable,
            events,
            comment,
            flow.location,
            lambda: spark.readStream.table(flow.source),
        )
    registry.register_output(
        MaterializedView(name=flow.target, source_code_location=location, **_table_options(options))
    )
    with contextlib.suppress(AttributeError):  # the runner's registry: Databricks' kind of it
        registry.shown_kinds[flow.target] = "StreamingTable"
    compute = scd1 if flow.scd_type == 1 else scd2

    def rows():
        if flow.snapshots is None:
            return compute(spark.read.table(events), flow)
        return compute(snapshots.changes(spark.read.table(events), flow), flow)

    registry.register_flow(
        Flow(
            name=flow.target,
            target=flow.target,
            spark_conf={},
            source_code_location=flow.location,
            func=rows,
        )
    )


# -- the target's rows, from every event ------------------------------------------------------
def _prepared(events, flow: CdcFlow):
    """The events with the flow's columns and the internal ones (sequence, delete, truncate,
    keys), whatever the source's other columns are."""
    from pyspark.sql import functions as F

    internal = [
        flow.sequence_by.alias(SEQ),
        F.coalesce(flow.apply_as_deletes, F.lit(False)).alias(DEL)
        if flow.apply_as_deletes is not None
        else F.lit(False).alias(DEL),
        F.coalesce(flow.apply_as_truncates, F.lit(False)).alias(TRUNC)
        if flow.apply_as_truncates is not None
        else F.lit(False).alias(TRUNC),
    ]
    internal += [k.alias(f"{INTERNAL}key{i}") for i, k in enumerate(flow.keys)]
    if flow.column_list is not None:
        return events.select(*flow.column_list, *internal)
    prepared = events.select("*", *internal)
    if flow.except_column_list:
        return prepared.select(_except(prepared, [_name(c) for c in flow.except_column_list]))
    return prepared


def _except(df, names: list[str], *patterns: str):
    """Every column of `df` but `names` (and no internal one unless kept), lazily: the
    engine's planner analyses the input of a drop() or withColumns() at once, where a pipeline
    dataset cannot be resolved yet."""
    skipped = "|".join([*(re.escape(n).replace("`", "``") for n in names), *patterns])
    return df.colRegex(f"`(?i)(?!(?:{skipped})$).+`")


def _keys(flow: CdcFlow) -> list[str]:
    return [f"{INTERNAL}key{i}" for i in range(len(flow.keys))]


def _data(df, *also):
    """Every column but the internal ones (by name pattern: nothing analysed)."""
    return df.select(df.colRegex(f"`(?!{INTERNAL}).+`"), *also)


def scd1(events, flow: CdcFlow):
    """SCD type 1: per key, its latest event if that is not a delete; a truncate removes every
    key whose events all precede it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = _prepared(events, flow)
    if flow.apply_as_truncates is not None:
        last_truncate = df.agg(F.max(F.when(F.col(TRUNC), F.col(SEQ))).alias(f"{INTERNAL}lt"))
        df = df.crossJoin(last_truncate).filter(
            ~F.col(TRUNC)
            & (F.col(f"{INTERNAL}lt").isNull() | (F.col(SEQ) > F.col(f"{INTERNAL}lt")))
        )
    keys = _keys(flow)
    latest = Window.partitionBy(*keys).orderBy(F.col(SEQ).desc(), F.col(DEL).desc())
    if flow.ignore_null_updates:  # columns of the current life: latest non-null value each
        assert flow.column_list is not None  # checked when the flow was declared
        life_start = F.max(F.when(F.col(DEL), F.col(SEQ))).over(Window.partitionBy(*keys))
        df = df.select("*", life_start.alias(f"{INTERNAL}ld"))
        df = df.filter(
            F.col(DEL) | F.col(f"{INTERNAL}ld").isNull() | (F.col(SEQ) > F.col(f"{INTERNAL}ld"))
        )
        whole = latest.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        key_names = {_name(k).lower() for k in flow.keys}
        df = df.select(
            *(
                F.col(_name(c))
                if _name(c).lower() in key_names
                else F.first(F.when(~F.col(DEL), F.col(_name(c))), ignorenulls=True)
                .over(whole)
                .alias(_name(c))
                for c in flow.column_list
            ),
            df.colRegex(f"`{INTERNAL}.+`"),
        )
    df = df.select("*", F.row_number().over(latest).alias(f"{INTERNAL}n"))
    return _data(df.filter((F.col(f"{INTERNAL}n") == 1) & ~F.col(DEL)))


def _tracked(df, flow: CdcFlow):
    """The columns whose change starts a new version, as one struct."""
    from pyspark.sql import functions as F

    if flow.track_history_column_list is not None:
        return F.struct(*flow.track_history_column_list)
    names = [_name(c) for c in flow.track_history_except_column_list or []]
    return F.struct(_except(df, names, f"{INTERNAL}.*"))


def scd2(events, flow: CdcFlow):
    """SCD type 2: a version per change of the tracked columns, from its event's sequence
    (__START_AT) to the next version's or a delete's (__END_AT, NULL while current); a change
    of untracked columns only updates the version in place."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = _prepared(events, flow)
    df = df.select("*", _tracked(df, flow).alias(TRACK))
    keys = _keys(flow)
    order = Window.partitionBy(*keys).orderBy(F.col(SEQ), F.col(DEL))
    previous_del, previous_track = F.lag(DEL).over(order), F.lag(TRACK).over(order)
    new = ~F.col(DEL) & (
        previous_del.isNull() | previous_del | ~F.col(TRACK).eqNullSafe(previous_track)
    )
    df = df.select("*", new.alias(f"{INTERNAL}new"))
    after = order.rowsBetween(1, Window.unboundedFollowing)
    bound = F.col(DEL) | F.col(f"{INTERNAL}new")
    df = df.select(
        "*",
        F.min(F.when(bound, F.col(SEQ))).over(after).alias(f"{INTERNAL}end"),
        F.sum(F.col(f"{INTERNAL}new").cast("int"))
        .over(order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
        .alias(f"{INTERNAL}v"),
    ).filter(~F.col(DEL))
    version = Window.partitionBy(*keys, f"{INTERNAL}v")
    last = version.orderBy(F.col(SEQ).desc())
    df = df.select(
        "*",
        F.min(SEQ).over(version).alias(f"{INTERNAL}start"),
        F.row_number().over(last).alias(f"{INTERNAL}n"),
    ).filter(F.col(f"{INTERNAL}n") == 1)
    return _data(
        df,
        F.col(f"{INTERNAL}start").alias(START_AT),
        F.col(f"{INTERNAL}end").alias(END_AT),
    )


def install() -> bool:
    """Provide Databricks' AUTO CDC functions locally; False (nothing changed) where the
    module has them natively (SCD type 2 in its create_auto_cdc_flow)."""
    import inspect

    import pyspark.pipelines as dp

    native = getattr(dp, "create_auto_cdc_flow", None)
    if native is not None and not getattr(native, "__dq_local__", False):
        parameters = inspect.signature(native).parameters
        if "track_history_column_list" in parameters and "apply_as_truncates" in parameters:
            return False
    for func in (create_auto_cdc_flow, create_streaming_table, create_auto_cdc_from_snapshot_flow):
        func.__dq_local__ = True  # type: ignore[union-attr]
        setattr(dp, func.__name__, func)
    dp.apply_changes = create_auto_cdc_flow  # type: ignore[attr-defined]
    dp.apply_changes_from_snapshot = create_auto_cdc_from_snapshot_flow  # type: ignore[attr-defined]
    return True
