"""Run a pipeline on this machine, on open-source Spark's own pipeline engine.

One update = a fresh dataflow graph, the pipeline's files registered in-process (as
`spark-pipelines run` does), one engine run, then what the open-source engine leaves out:

- expectations (dq.expectations, installed into `pyspark.pipelines` where missing);
- atomic failure: the engine empties materialized views at the start of a run, even those whose
  flow is then skipped, so each table's Delta version is noted in a journal before the run and,
  when the update fails or is interrupted (SIGINT, SIGTERM, or a killed process found by the next
  run), every materialized view is restored and every table the update created is removed
  (see lake.py); streaming tables keep what their checkpoints say was committed;
- metrics: observed counts from the listener's file, written as `flow_progress` events to a
  local event log in the shape of Databricks' one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import re
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from medallion_dq.local import (
    auto_cdc,
    eventlog,
    expectations,
    failures,
    lake,
    loading,
    machine,
    sql_files,
)
from medallion_dq.local import metrics as metrics_file
from medallion_dq.local.failures import RunError, engine_error_text, explain
from medallion_dq.local.lake import Journal, put_back
from medallion_dq.local.lakeflow_params import internal
from medallion_dq.local.metrics import DatasetMetrics
from medallion_dq.local.phases import Phases
from medallion_dq.local.spark import LocalSpark, ServerLost
from medallion_dq.project import settings
from medallion_dq.text import short_name

#: What an update does, a line per step, for whoever started it: `medallion_dq.tools.console` shows
#: them (`run`: stdout; `diff`: stderr; the pytest plugin: the test's output). INFO is progress,
#: WARNING what went wrong (quiet mode keeps it).
updates = logging.getLogger("medallion_dq.local.updates")

ACTIVE_FLOW_STATES = ("QUEUED", "PLANNING", "STARTING", "RUNNING")
_FLOW_EVENT = re.compile(r"Flow '?(?P<flow>[^' ]+)'? (?:is |has )?(?P<state>[A-Z_]+)")


@dataclass
class PipelineSpec:
    """What the engine needs of a pipeline: its files and settings (from the bundle, or a test)."""

    name: str
    libraries: list[Path]
    root: Path
    configuration: dict[str, str] = field(default_factory=dict)
    catalog: str | None = None
    database: str | None = None


@dataclass
class UpdateResult:
    pipeline: str
    update_id: str
    status: str  # COMPLETED | FAILED | CANCELED
    flows: dict[str, str]
    metrics: dict[str, DatasetMetrics]
    output_rows: dict[str, int | None]  # None: the table's Delta history cannot say
    restored: list[str]  # materialized views put back to their version before the update
    error: RunError | None
    seconds: float
    removed: list[str] = field(default_factory=list)  # tables the update created, removed
    unread_files: list[dict] = field(default_factory=list)  # landing files its readers skip
    # Bronze tables' records against their schema (sources.Drift.to_dict()), by table.
    landing_drift: dict[str, dict] = field(default_factory=dict)
    # Where the update's time went, in seconds (see phases.PHASES); not part of to_dict().
    timings: dict[str, float] = field(default_factory=dict)
    full_refresh: bool = False  # asked for, or the last one's unfinished (lake.FullRefresh)
    # Its streaming tables and the views AUTO CDC reads as a stream: updates add rows.
    streaming: list[str] = field(default_factory=list)
    # Its datasets' kinds as Databricks shows them (StreamingTable, MaterializedView...); the
    # engine's own datasets (lakeflow_params.internal) are in no field of a result.
    kinds: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "COMPLETED"

    def expectation(self, dataset: str, name: str) -> dict:
        for e in self.metrics[dataset].expectations:
            if e["name"] == name:
                return e
        raise KeyError(f"no metrics for expectation {name!r} of {dataset!r}")

    def to_dict(self) -> dict:
        return {
            "pipeline": self.pipeline,
            "update_id": self.update_id,
            "status": self.status,
            "seconds": round(self.seconds, 2),
            "flows": self.flows,
            "datasets": {
                name: {
                    "output_rows": self.output_rows.get(name),
                    **(
                        {
                            "input_records": m.input_records,
                            "dropped_records": m.dropped_records,
                            "expectations": m.expectations,
                        }
                        if (m := self.metrics.get(name))
                        else {}
                    ),
                }
                for name in sorted(set(self.flows) | set(self.metrics))
            },
            "restored": self.restored,
            "removed": self.removed,
            "unread_files": self.unread_files,
            "landing_drift": self.landing_drift,
            "error": self.error.to_dict() if self.error else None,
        }


class Interrupted(BaseException):
    """SIGINT or SIGTERM ended a run. The update (if one had started) was put back and recorded
    as CANCELED before this was raised: `result` says what became of it."""

    def __init__(self, signum: int, result: UpdateResult | None = None):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.result = result
        # The job's result so far, when a job ran (a project.JobResult: it imports this module).
        self.job: Any = None

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # 130 for SIGINT, 143 for SIGTERM, as shells report them


@contextlib.contextmanager
def shielded() -> Iterator[list[int]]:
    """While tables are put back: SIGINT and SIGTERM are noted, not obeyed (a second Ctrl-C must
    not leave a table half restored). Yields the signals that arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    arrived: list[int] = []

    def note(signum, _frame):
        if not arrived:
            updates.warning("putting the tables back first: this takes a few seconds")
        arrived.append(signum)

    previous = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield arrived
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class _RecordingRegistry:
    """The engine's registry, noting which datasets each update defines and of which kind."""

    def __init__(self, spark, graph_id: str):
        from pyspark.pipelines.spark_connect_graph_element_registry import (
            SparkConnectGraphElementRegistry,
        )

        self._inner = SparkConnectGraphElementRegistry(spark, graph_id)
        self.outputs: dict[str, str] = {}
        # Kinds as Databricks shows them, where the engine runs a dataset as another kind (an
        # AUTO CDC target is a streaming table there, a materialized view here: auto_cdc.py).
        self.shown_kinds: dict[str, str] = {}

    def register_output(self, output) -> None:
        self.outputs[output.name] = type(output).__name__
        self._inner.register_output(output)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@dataclass
class _Update:
    """One update's state, from phase to phase (Runner._prepare, _execute, _finish)."""

    spec: PipelineSpec
    id: str
    phases: Phases
    since: str  # when it started, as bronze rows record their ingestion
    timed_out: threading.Event = field(default_factory=threading.Event)
    session: Any = None  # the update's own Spark session (LocalSpark.update_session)
    graph_id: str = ""
    declared: dict = field(default_factory=dict)  # its datasets' expectations, as declared
    tables: dict[str, str] = field(default_factory=dict)  # dataset: qualified table
    kinds: dict[str, str] = field(default_factory=dict)  # dataset: its kind, as Databricks says
    before: dict = field(default_factory=dict)  # their Delta versions before it
    metrics_offset: int = 0  # where its metrics start in the listener's file
    log_offset: int = 0  # where its part of the server's log starts
    journal: Journal | None = None
    flows: dict[str, str] = field(default_factory=dict)  # flow: its last state
    failures: list[str] = field(default_factory=list)  # the engine's messages about failures
    error_text: str | None = None
    interrupted: int | None = None  # the signal that stopped it
    failed: bool = False
    full_refresh: bool = False


def _stream_fed_views(kinds: dict[str, str], tables: dict[str, str]) -> list[str]:
    """The views an AUTO CDC flow reads (as a stream, into its events table): like a streaming
    table's, their rules judge each update's new rows only."""
    held = {short_name(name) for name in tables}
    return [
        view
        for view, kind in kinds.items()
        if kind == "TemporaryView" and short_name(auto_cdc.events_table(view, view)) in held
    ]


def _shown(names: list[str]) -> list[str]:
    return [name for name in names if not internal(name)]


def _event_time(event) -> float | None:
    with contextlib.suppress(Exception):
        return event.timestamp.seconds + event.timestamp.nanos / 1e9
    return None


class Runner:
    """Runs pipeline updates against one LocalSpark session and records them in its event log."""

    def __init__(self, local: LocalSpark):
        self.local = local
        self.spark = local.spark
        self.event_log = eventlog.EventLog(self.spark, local.work_dir / "event_log")
        self.timeout = settings.RUN_TIMEOUT.get()
        # `dataset.rule` -> the data-contract clause it was made from, read when a rule fails.
        self.clauses: Callable[[], dict[str, str]] = dict
        self._watchdog: threading.Timer | None = None
        expectations.install()

    # -- registration ---------------------------------------------------------------------------
    def _register(self, spec: PipelineSpec, session, registry, graph_id: str) -> None:
        from pyspark.pipelines.graph_element_registry import graph_element_registration_context

        lost = self.local.lost  # a lost server is not the team's error: it stays one (exit 3)
        with graph_element_registration_context(registry):
            for file in spec.libraries:
                # An error in the team's code: one block naming their file and line (exit 2).
                with loading.reporting([file], spec.root, keep=lambda e: lost(e) is not None):
                    self._register_file(spec, file, session, registry, graph_id)

    def _register_file(
        self, spec: PipelineSpec, file: Path, session, registry, graph_id: str
    ) -> None:
        from pyspark.pipelines.add_pipeline_analysis_context import add_pipeline_analysis_context
        from pyspark.pipelines.block_session_mutations import block_session_mutations

        rel = file.relative_to(spec.root) if file.is_relative_to(spec.root) else file
        if file.suffix == ".py":
            module_spec = importlib.util.spec_from_file_location(f"_pipeline_{file.stem}", file)
            assert module_spec is not None and module_spec.loader is not None  # a .py file's
            module = importlib.util.module_from_spec(module_spec)
            module.__dict__["spark"] = session
            with ExitStack() as stack:
                stack.enter_context(
                    add_pipeline_analysis_context(
                        spark=session, dataflow_graph_id=graph_id, flow_name=None
                    )
                )
                stack.enter_context(block_session_mutations())
                module_spec.loader.exec_module(module)
        elif file.suffix == ".sql":
            sql_files.register(file.read_text(encoding="utf-8"), rel, registry, session, file)
        else:
            raise ValueError(f"{rel}: pipelines hold .py and .sql files only")

    def _replace_views(self, spec: PipelineSpec) -> None:
        """Give each persisted view its SQL file's query of now: pyspark 4.2's engine keeps an
        existing view as it was (Databricks replaces it). Names resolve in the pipeline's
        default schema, as in the engine. A view that cannot be replaced is said, not fatal:
        the update's tables are committed, the view holds no data."""
        views = sql_files.persisted_views(spec.libraries)
        if not views:
            return
        current = self.spark.catalog.currentDatabase()
        try:
            if spec.database:
                self.spark.catalog.setCurrentDatabase(spec.database)
            for name, statement in views.items():
                try:
                    self.spark.sql(statement)
                except Exception as error:  # noqa: BLE001 - the server's own message says why
                    updates.warning(
                        f"[{spec.name}] view {name} keeps its previous query: replacing it failed"
                        f" ({str(error).splitlines()[0][:300]}); drop it to take the new one"
                    )
        finally:
            self.spark.catalog.setCurrentDatabase(current)

    # -- Delta bookkeeping ----------------------------------------------------------------------
    def _qualified(self, spec: PipelineSpec, name: str) -> str:
        if "." in name:
            return name
        return f"{spec.database}.{name}" if spec.database else name

    def _warehouse(self) -> Path | None:
        """The server's warehouse as a folder of this machine (containers mount it at the
        same path, a remote server shares it: DQ_REMOTE_DIR); None if not known."""
        if self.local.backend == "remote" and self.local.server_dir is None:
            return None
        return getattr(self.local, "warehouse", None) or self.local.work_dir / "warehouse"

    @staticmethod
    def _set_confs(session, confs: dict[str, str]) -> None:
        """Set session confs in one round trip (Spark Connect's own batch call) where there is
        one, else one by one."""
        set_all = getattr(session.conf, "_set_all", None)
        if set_all is not None and confs:
            try:
                set_all(dict(confs), silent=False)
                return
            except TypeError:  # another signature: one by one
                pass
        for key, value in confs.items():
            session.conf.set(key, value)

    def storage(self, spec: PipelineSpec) -> Path:
        """The pipeline's storage folder: its streaming checkpoints."""
        return self.local.work_dir / "storage" / spec.name

    def _engine_storage(self, spec: PipelineSpec) -> Path:
        """The storage folder as the engine is given it: by a plain path on this machine's own
        server (a container sees the lake at its path, not this user's cache)."""
        folder = self.storage(spec)
        if self.local.backend != "embedded":
            return folder
        # Where medallion-dq 0.5 let the engine put it: the folder's URI text, escaped again.
        before = Path(quote(urlparse(folder.as_uri()).path, safe="/"))
        if before != folder and before.is_dir() and not folder.exists():
            folder.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(before, folder)
            updates.info(f"[{spec.name}] moved its checkpoints into the lake, from {before}")
        return machine.plain_path(folder)

    # -- one update -----------------------------------------------------------------------------
    def run(
        self, spec: PipelineSpec, *, full_refresh: bool = False, refresh: list[str] | None = None
    ) -> UpdateResult:
        """One update; raises ServerLost (not a result) when the server dies during it, and
        Interrupted after putting it back when SIGINT or SIGTERM ends it."""
        try:
            return self._run(spec, full_refresh=full_refresh, refresh=refresh)
        except KeyboardInterrupt:
            raise Interrupted(signal.SIGINT) from None
        except Exception as error:
            lost = error if isinstance(error, ServerLost) else self.local.lost(error)
            if lost is None:
                raise
            updates.warning(f"[{spec.name}] {str(lost).splitlines()[0]}")
            raise lost from None
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
                self._watchdog = None

    def _run(
        self, spec: PipelineSpec, *, full_refresh: bool, refresh: list[str] | None
    ) -> UpdateResult:
        pending = lake.FullRefresh(self.local.work_dir, spec.name, spec.database)
        if pending.unfinished() and not full_refresh:
            updates.warning(
                f"[{spec.name}] its last full refresh did not finish: this update is a full"
                " refresh too, so no table keeps half of one"
            )
            full_refresh, refresh = True, None
        # The update's own session: leaving it stops the engine's run before anything is put back.
        with self.local.update_session() as session:
            update = self._prepare(spec, session, full_refresh)
            self._execute(update, full_refresh, refresh)
            result = self._finish(update)
        if full_refresh and result.status == "COMPLETED":
            pending.end()
            lake.Ungated(self.local.work_dir, spec.name).end()  # the gate judges every row now
        return result

    def _prepare(self, spec: PipelineSpec, session, full_refresh: bool) -> _Update:
        """The update's graph with the pipeline files registered in it, and the journal that
        puts its tables back if it fails."""
        from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph

        update = _Update(
            spec,
            uuid.uuid4().hex[:12],
            Phases(),
            # Bronze rows carry when they were ingested (the server's clock: this machine's).
            since=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f"),
            session=session,
            full_refresh=full_refresh,
        )
        updates.info(
            f"[{spec.name}] update {update.id}: {len(spec.libraries)} pipeline files{' (full refresh)' if full_refresh else ''}"
        )
        # Never hang: past the timeout (loading the files included) every operation of the
        # session is interrupted.
        timed_out = update.timed_out

        def time_out() -> None:
            timed_out.set()
            session.interruptAll()

        watchdog = threading.Timer(self.timeout, time_out)
        watchdog.daemon = True
        watchdog.start()
        self._watchdog = watchdog  # run() cancels it however this ends
        if spec.database:
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS `{spec.database}`")
        # Pipeline code reads its configuration with spark.conf.get, as on Databricks.
        self._set_confs(session, spec.configuration)
        update.graph_id = create_dataflow_graph(
            session,
            default_catalog=spec.catalog,
            default_database=spec.database,
            sql_conf=spec.configuration,
        )
        registry = _RecordingRegistry(session, update.graph_id)
        try:
            with expectations.registering(update.id, full_refresh, spec.database) as declared:
                self._register(spec, session, registry, update.graph_id)
        except BaseException:
            watchdog.cancel()
            if timed_out.is_set():
                raise TimeoutError(
                    f"loading the pipeline files of {spec.name} took longer than the "
                    f"{self.timeout:.0f} s timeout (DQ_RUN_TIMEOUT)"
                ) from None
            raise
        update.declared = declared
        update.phases.lap("registration")
        outputs = {**registry.outputs, **sql_files.outputs_of(spec.libraries)}
        update.kinds = {
            n: k for n, k in {**outputs, **registry.shown_kinds}.items() if not internal(n)
        }
        update.tables = {
            name: self._qualified(spec, name)
            for name, kind in outputs.items()
            if kind not in ("TemporaryView", "Sink")  # a sink is outside the pipeline's lake
        }
        update.before = lake.versions(self.spark, update.tables, self._warehouse())
        update.log_offset = failures.log_size(self.local.log)
        update.metrics_offset = (
            self.local.metrics_file.stat().st_size if self.local.metrics_file.exists() else 0
        )
        update.journal = Journal.begin(
            self.local.work_dir,
            spec.name,
            update.id,
            update.tables,
            {name: outputs[name] for name in update.tables},
            update.before,
            self.storage(spec),
        )
        if full_refresh and "StreamingTable" in outputs.values():
            lake.FullRefresh(self.local.work_dir, spec.name, spec.database).begin()
        update.phases.lap("bookkeeping")
        return update

    def _execute(self, update: _Update, full_refresh: bool, refresh: list[str] | None) -> None:
        """The engine runs the update; each flow's state and the failures are noted as its
        events come, and a signal stops it."""
        from pyspark.pipelines.spark_connect_pipeline import start_run

        spec, flows, messages = update.spec, update.flows, update.failures
        engine_started = time.time()
        try:
            events = start_run(
                update.session,
                update.graph_id,
                full_refresh=None,
                full_refresh_all=full_refresh,
                refresh=refresh,
                dry=False,
                storage=self._engine_storage(spec).as_uri(),
            )
            for result in events:
                if "pipeline_event_result" not in result:
                    continue
                event = result["pipeline_event_result"].event
                message = event.message
                match = _FLOW_EVENT.search(message)
                if not match or "\n" in message:  # resolution errors come as extra events
                    messages.append(message)
                if match:
                    flow, state = short_name(match["flow"]), match["state"]
                    flows[flow] = state
                    update.phases.event(state, _event_time(event))
                    if internal(flow):  # the engine's own: its failure shows in its target's
                        continue
                    # An ended flow is a line for the user; a running one feeds a status only.
                    ended = state in ("COMPLETED", "FAILED", "SKIPPED")
                    updates.log(
                        logging.INFO if ended else logging.DEBUG, f"[{spec.name}] {flow}: {state}"
                    )
                    if state == "FAILED":
                        messages.append(message)
        except (KeyboardInterrupt, Interrupted) as stop:
            update.interrupted = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
            said = signal.Signals(update.interrupted).name
            updates.warning(
                f"[{spec.name}] {said}: canceling; tables are put back once its flows stop"
            )
            with contextlib.suppress(Exception):  # its session's end then stops the engine
                update.session.interruptAll()
        except Exception as error:  # noqa: BLE001 - the engine reports everything as one exception
            during = failures.judging(spec.name, flows, update.declared, ACTIVE_FLOW_STATES)
            if lost := self.local.lost(error, *during):  # nothing to restore or record through it
                raise lost from None  # the journal stays: the next run puts the update back
            update.error_text = "\n".join([*messages, engine_error_text(error)])
            if update.timed_out.is_set():
                update.error_text = f"update stopped after the {self.timeout:.0f} s timeout (DQ_RUN_TIMEOUT)\n{update.error_text}"
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            update.phases.engine(engine_started)
        update.failed = (
            update.interrupted is not None
            or update.error_text is not None
            or any(s in ("FAILED", "SKIPPED") for s in flows.values())
        )
        if not update.failed:  # the engine completes an update only once every flow has: a
            # flow's own COMPLETED event can come after the update's and miss the stream
            for name, state in list(flows.items()):
                if state in ACTIVE_FLOW_STATES:
                    flows[name] = "COMPLETED"
                    updates.info(f"[{spec.name}] {name}: COMPLETED")

    def _finish(self, update: _Update) -> UpdateResult:
        """Put a failed update back, read its metrics and rows, record it in the event log and
        end its journal, shielded from signals; then raise Interrupted if one came."""
        spec, flows, tables = update.spec, update.flows, update.tables
        interrupted = update.interrupted
        phases, failed, journal = update.phases, update.failed, update.journal
        assert journal is not None  # _prepare began it
        with shielded() as arrived:
            self.local.end_session(update.session)  # the engine stops before tables are put back
            if failed and not self.local.engine_stopped(update.session):
                updates.warning(
                    f"[{spec.name}] its flows still ran a minute after it ended: put back now"
                )
            restored, removed, unput = self._put_back(update, journal)
            restored, removed = _shown(restored), _shown(removed)
            if interrupted is not None:
                for name in tables:  # what had not finished when the signal came
                    if flows.get(name) not in ("COMPLETED", "FAILED", "SKIPPED"):
                        flows[name] = "CANCELED"
            observed = metrics_file.drain_listener(self.local, update.metrics_offset)
            metrics = metrics_file.dataset_metrics(update.id, update.declared, flows, observed)
            output_rows = {
                name: lake.rows_written(self.spark, table, update.before[name], self._warehouse())
                for name, table in tables.items()
                if flows.get(name) == "COMPLETED"
                and name not in restored + removed
                and not internal(name)
            }
            drift = (
                {}
                if failed or interrupted is not None
                else self._drift(spec, tables, output_rows, update.since)
            )
            streams = [n for n, kind in update.kinds.items() if kind == "StreamingTable"]
            streams += _stream_fed_views(update.kinds, update.tables)
            if failed and (committed := {n: output_rows[n] for n in streams if output_rows.get(n)}):
                status_now = "CANCELED" if interrupted is not None else "FAILED"
                lake.Ungated(self.local.work_dir, spec.name).add(update.id, status_now, committed)
            error: RunError | None
            if interrupted is not None:
                status = "CANCELED"
                error = RunError("CANCELED", f"{signal.Signals(interrupted).name}: update canceled")
            else:
                status = "FAILED" if failed else "COMPLETED"
                error = (
                    explain(
                        update.error_text,
                        update.declared,
                        dict(sorted(flows.items(), key=lambda f: internal(f[0]))),  # its own last
                        spec.libraries,
                        spec.root,
                        self.clauses(),
                        self.local.work_dir,
                        failures.log_since(self.local.log, update.log_offset),
                    )
                    if failed
                    else None
                )
            if unput is not None:
                assert error is not None  # put back: the update failed
                error.message = f"{error.message}; {unput}"
            result = UpdateResult(
                spec.name,
                update.id,
                status,
                {name: state for name, state in flows.items() if not internal(name)},
                metrics,
                output_rows,
                restored,
                error,
                time.perf_counter() - phases.started,
                removed,
                landing_drift=drift,
            )
            result.streaming, result.full_refresh = streams, update.full_refresh
            result.kinds = update.kinds
            phases.lap("bookkeeping")
            self._record(spec.name, result)
            phases.lap("event_log")
            if unput is None:
                journal.end()
            phases.lap("bookkeeping")
            result.timings = phases.result()
            result.seconds = result.timings["total"]
        updates.log(
            logging.INFO if status == "COMPLETED" else logging.WARNING,
            f"[{spec.name}] update {update.id} {status} in {result.seconds:.1f} s"
            + (f": {error.message}" if error else ""),
        )
        if status == "COMPLETED":
            self._say_judged(spec, update.declared, flows, metrics, output_rows)
        if interrupted is not None or arrived:
            raise Interrupted(interrupted or arrived[0], result)
        return result

    def _record(self, pipeline: str, result: UpdateResult) -> None:
        """The update in the event log. When that write fails too (a full disk) after the
        update failed, the update's own error is what the run says first."""
        try:
            self.event_log.append(pipeline, result)
        except Exception as failure:
            if result.error is None or lake.io_fault(failure) is None:
                raise
            raise RuntimeError(
                f"{result.error.message}; the event log was not written either: {failure}"
            ) from failure

    def _put_back(
        self, update: _Update, journal: Journal
    ) -> tuple[list[str], list[str], lake.PutBackFailed | None]:
        """A failed update's tables as they were, said: (restored, removed, what could not be put
        back: its journal stays for the next run); a completed update's views replaced."""
        spec, failed, unput = update.spec, update.failed, None
        try:
            restored, removed = (
                put_back(self.spark, journal, self._warehouse()) if failed else ([], [])
            )
        except lake.PutBackFailed as failure:  # said in the update's error
            restored, removed, unput = failure.restored, failure.removed, failure
        if not failed:
            self._replace_views(spec)
        if restored or removed:
            updates.warning(
                f"[{spec.name}] {'canceled' if update.interrupted else 'failed'} update put back:"
                + (f" restored {', '.join(restored)}" if restored else "")
                + (";" if restored and removed else "")
                + (f" removed {', '.join(removed)} (created by it)" if removed else "")
            )
        if failed and lake.FullRefresh(self.local.work_dir, spec.name, spec.database).unfinished():
            updates.warning(
                f"[{spec.name}] its full refresh did not finish: its next update is a full "
                "refresh too"
            )
        return restored, removed, unput

    def _say_judged(
        self, spec: PipelineSpec, declared: dict, flows: dict, metrics: dict, written: dict
    ) -> None:
        """A line per table with rules: the rows they judged and what became of them. A
        streaming table that read no new rows says so: a rule edited since judged none."""
        for dataset, rules in sorted(declared.items()):
            name, measured = short_name(dataset), metrics.get(short_name(dataset))
            # A view has no flow of its own here: its rules judged rows where it was read.
            ran = flows.get(name) == "COMPLETED" or (name not in flows and measured is not None)
            if not ran or not rules:
                continue
            if measured is None or not measured.input_records:
                if not written.get(name):  # rows but no metrics: rules lifted (a diff's update)
                    updates.info(
                        f"[{spec.name}] {name}: no new rows, so its rules judged none "
                        "(--full-refresh judges every row again)"
                    )
                continue
            said = [f"{measured.dropped_records:,} dropped"] * any(
                r.action == "drop" for r in rules
            )
            warnings = sum(
                e["failed_records"]
                for e, rule in zip(measured.expectations, rules, strict=True)
                if rule.action == "warn"
            )
            said += [f"{warnings:,} warning{'s' * (warnings != 1)}"] * any(
                r.action == "warn" for r in rules
            )
            updates.info(
                f"[{spec.name}] {name}: {measured.input_records:,} "
                f"row{'s' * (measured.input_records != 1)} judged by {len(rules)} "
                f"rule{'s' * (len(rules) != 1)}" + (f": {', '.join(said)}" if said else "")
            )

    def _drift(self, spec: PipelineSpec, tables: dict, output_rows: dict, since: str) -> dict:
        """The landing drift of each bronze table the update wrote rows to, said in one line
        when there is some: fields the schema does not name, fields records lack."""
        from medallion_dq.sources import landing_drift

        out = {}
        for name, rows in sorted(output_rows.items()):
            drift = landing_drift(self.spark.read.table(tables[name]), since) if rows else None
            if drift is not None:
                out[name] = drift.to_dict()
                if drift:
                    updates.warning(f"[{spec.name}] {name}: landing drift: {drift}")
        return out

    def recover(self) -> list[UpdateResult]:
        """Put back the updates whose process ended before they finished (SIGKILL, a crash, a
        lost server), and record them as CANCELED in the event log."""
        results = []
        for journal in Journal.left_behind(self.local.work_dir):
            with shielded():
                restored, removed = put_back(self.spark, journal, self._warehouse())
                restored, removed = _shown(restored), _shown(removed)
                streams = {
                    n: t
                    for n, t in journal.tables.items()
                    if journal.kinds.get(n) == "StreamingTable" and not internal(n)
                }
                now = lake.versions(self.spark, streams, self._warehouse())
                if committed := {
                    name: lake.rows_written(
                        self.spark, table, journal.versions.get(name), self._warehouse()
                    )
                    for name, table in streams.items()
                    if now[name] is not None and now[name] != journal.versions.get(name)
                }:
                    lake.Ungated(self.local.work_dir, journal.pipeline).add(
                        journal.update_id, "CANCELED", committed
                    )
                result = UpdateResult(
                    journal.pipeline,
                    journal.update_id,
                    "CANCELED",
                    dict.fromkeys(_shown(list(journal.tables)), "CANCELED"),
                    {},
                    {},
                    restored,
                    RunError("CANCELED", "the process running the update ended before it"),
                    0.0,
                    removed,
                )
                self.event_log.append(journal.pipeline, result)
                journal.end()
            updates.warning(
                f"[{journal.pipeline}] update {journal.update_id} did not finish (its process "
                "ended): put back"
                + (f", restored {', '.join(restored)}" if restored else "")
                + (f", removed {', '.join(removed)}" if removed else "")
                + ("" if restored or removed else " (nothing had changed)")
            )
            results.append(result)
        return results
