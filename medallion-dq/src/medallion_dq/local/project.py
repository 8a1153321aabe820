"""The bundle, run on this machine: its pipelines and its job, read from databricks.yml.

Pipelines get their files and configuration from resources/*.pipeline.yml, so tests and
`medallion-dq run` execute exactly what the bundle deploys; only the landing path and
the bronze reader (Auto Loader on Databricks, the file source here) are set locally.
The job runs its tasks in dependency order: pipeline tasks as local updates, the quality gate
over the local event log, and a task whose upstream failed is skipped, as on Databricks.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq import gate, library, rules
from medallion_dq.checks import CheckResult
from medallion_dq.local import values
from medallion_dq.local.eventlog import EventLog
from medallion_dq.local.lake import (
    Ungated,
    Unjudged,
    gate_failed,
    register_tables,
    remember_landing,
)
from medallion_dq.local.runner import Interrupted, PipelineSpec, Runner, UpdateResult, updates
from medallion_dq.local.spark import LocalSpark, alias_catalogs
from medallion_dq.project import Project
from medallion_dq.text import short_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

LAYERS = ("bronze", "silver", "gold")


@dataclass
class TaskResult:
    key: str
    kind: str | None
    status: str  # SUCCESS | FAILED | SKIPPED | CANCELED
    update: UpdateResult | None = None
    gate: gate.GateResult | None = None
    message: str = ""
    #: A few failing records per rule over its threshold, keyed ``dataset.rule`` (the gate task,
    #: when the project was asked for them: ``failing_examples``).
    examples: dict[str, list[dict]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"status": self.status, "kind": self.kind}
        if self.update:
            out["update"] = self.update.to_dict()
        if self.gate:
            out["gate"] = gate_out = {
                "passed": self.gate.passed,
                "table": self.gate.table(),
                "checks": [check.to_dict() for check in self.gate.checks],
            }
            if self.examples:
                gate_out["failing_records"] = self.examples
        if self.message:
            out["message"] = self.message
        return out


@dataclass
class JobResult:
    job: str
    tasks: list[TaskResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(t.status == "SUCCESS" for t in self.tasks)

    def to_dict(self) -> dict:
        return {
            "job": self.job,
            "status": "SUCCESS" if self.ok else "FAILED",
            "seconds": round(self.seconds, 2),
            "tasks": {t.key: t.to_dict() for t in self.tasks},
        }


class LocalProject:
    def __init__(
        self,
        root: Project | Path,
        local: LocalSpark,
        *,
        target: str = "dev",
        variables: dict | None = None,
        landing: Path | None = None,
        database: str | None = None,
        as_of: str | None = None,
        failing_examples: int = 0,
    ):
        self.project = Project.of(root)
        self.root = self.project.root
        # Records to show per rule the gate fails (`run --junit-xml`); 0: none are read.
        self.failing_examples = failing_examples
        self.database = database  # every pipeline's schema, instead of the bundle's (tests)
        # The project as read for the target: its bundle, and what each pipeline's files define.
        self.manifest = self.project.manifest(target, variables)
        self.bundle = self.manifest.bundle
        self.local = local
        self.runner = Runner(local)
        if database:  # a test's slice of the lake has its own history (volume checks read it)
            self.runner.event_log = EventLog(local.spark, local.work_dir / "event_logs" / database)
        self.landing = Path(landing) if landing else local.work_dir / "landing"
        settings = self.project.settings("local")
        # The time freshness checks are judged at: data standing for a fixed day (the project's
        # fixtures) is fresh as of that day, not as of today ([tool.medallion.local] as_of).
        self.as_of = as_of or settings.get("as_of")
        # Three-part names of other Unity Catalog catalogs, e.g. shop.bronze.orders_raw.
        alias_catalogs(local.spark, settings.get("catalogs", []))
        self.runner.clauses = self._clauses

    @property
    def spark(self) -> SparkSession:
        return self.local.spark

    def _clauses(self) -> dict[str, str]:
        """The data-contract clause of each rule made from one; none when a rule file cannot
        be read (the run says why in its own words)."""
        try:
            return rules.contract_clauses(self.project.rule_sets())
        except (ValueError, OSError):  # a DataQualityError is a ValueError
            return {}

    def open_lake(self) -> list[UpdateResult]:
        """Make a lake written by earlier runs usable: register its tables with this server and
        put back the updates a killed process left unfinished (returned)."""
        register_tables(self.local.spark, self.local.warehouse)
        return self.runner.recover()

    def spec(
        self,
        key: str,
        *,
        layers: list[str] | None = None,
        database: str | None = None,
        name: str | None = None,
    ) -> PipelineSpec:
        """The engine's view of bundle pipeline `key`, optionally only some layers' files."""
        if key not in self.bundle.pipelines:
            raise KeyError(
                f"no pipeline {key!r} in the bundle: choose one of {', '.join(self.bundle.pipelines)}"
            )
        pipeline = self.bundle.pipelines[key]
        files = [f for f in pipeline.library_files if not layers or set(layers) & set(f.parts)]
        configuration = dict(pipeline.configuration)
        configuration["medallion.source.format"] = configuration.get(
            "medallion.source.file_format", "json"
        )
        configuration["medallion.source.path"] = str(self.landing)
        return PipelineSpec(
            name or pipeline.name,
            files,
            self.root,
            configuration,
            None,
            database or self.database or pipeline.schema,
        )

    def run_pipeline(
        self, key: str, *, full_refresh: bool = False, by_hand: bool = True, **spec_options
    ) -> UpdateResult:
        """One update of bundle pipeline `key`; `by_hand`: not a task of a job (a pipeline run
        after a job's gate then says what it takes that no gate passed)."""
        spec = self.spec(key, **spec_options)
        if self.project.pipeline_code(
            spec.libraries
        ).landing:  # the folder the lake's files are known from
            remember_landing(self.local.work_dir, self.landing, reset=full_refresh)
        unread = self._unread_landing_files(spec)
        overruled = self._say_unjudged(key) if by_hand else []
        result = self.runner.run(spec, full_refresh=full_refresh)
        result.unread_files = unread
        if result.ok:
            self._record_overruled(key, result, overruled)
            self._note_unjudged(key, result)
        if result.error and result.error.kind == "ENGINE":
            self._name_missing_upstream(key, result)
        return result

    def _gates(self) -> Iterator[tuple[str, set[str], set[str]]]:
        """(job, the pipelines its gate judges, the pipelines run after it) of each gate task."""
        for job in self.bundle.jobs.values():
            for _, judged, after in job.gates():
                yield job.key, judged, after

    def _say_unjudged(self, key: str) -> list[tuple[str, str, dict]]:
        """A pipeline run by hand after a gate says when it takes rows no gate has passed (the
        CLI refuses those a gate failed unless --ungated: preflight's RUN018). Gives (job,
        pipeline, the gate's rejection) of those a gate failed."""
        overruled = []
        for job, judged, after in self._gates():
            for pipeline in sorted(judged) if key in after else ():
                unjudged = self._unjudged(pipeline)
                if taken := ", ".join(unjudged.updates()):
                    rejected = unjudged.rejected()
                    if rejected:
                        overruled.append((job, pipeline, rejected))
                    updates.log(
                        logging.WARNING if rejected else logging.INFO,
                        f"[{key}] takes the rows of {pipeline} update(s) {taken}, which "
                        + (
                            gate_failed(rejected)
                            if rejected
                            else f"no quality gate has passed (`run --job {job}` judges them first)"
                        ),
                    )
        return overruled

    def _record_overruled(
        self, key: str, result: UpdateResult, overruled: list[tuple[str, str, dict]]
    ) -> None:
        """A failed gate's rows that this update published (--ungated): a failed check beside
        that gate's own, so `report` shows it until a later gate judges newer rows."""
        for job, pipeline, rejected in overruled:
            judged = rejected.get("updates") or self._unjudged(pipeline).updates()
            ungated = CheckResult(
                pipeline,
                "quality_gate",
                "ungated",
                f"its rows published by {key} update {result.update_id} (--ungated)",
                f"passed by job {job}'s quality gate",
                passed=False,
                note=f"job {job}'s quality gate failed them, {_reasons(rejected)}",
            )
            name = self.bundle.pipelines[pipeline].name
            self.runner.event_log.append_checks(name, judged[-1], [ungated])

    def _note_unjudged(self, key: str, result: UpdateResult) -> None:
        """A completed update of a pipeline a job's gate judges adds its rows to those the next
        gate judges (lake.Unjudged); one of a pipeline run after the gate has taken them."""
        for _, judged, after in self._gates():
            for pipeline in judged:
                if key == pipeline:
                    self._unjudged(pipeline).add(result.update_id, full_refresh=result.full_refresh)
                elif key in after:
                    self._unjudged(pipeline).published()

    def _unjudged(self, key: str) -> Unjudged:
        pipeline = self.bundle.pipelines[key]
        return Unjudged(self.local.work_dir, pipeline.name, self.database or pipeline.schema)

    def _unread_landing_files(self, spec: PipelineSpec) -> list[dict]:
        """Landing files the pipeline's readers will skip, said before the update: nothing that
        landed disappears without a line."""
        from medallion_dq.sources import unread_files

        file_format = spec.configuration.get("medallion.source.file_format", "json")
        code = self.project.pipeline_code(spec.libraries)
        own = code.landing_formats()  # a source's file_format=
        skipped = [
            {"path": f.path, "reason": f.reason}
            for folder in sorted(code.landing_folders())
            for f in unread_files(self.landing, folder, own.get(folder, file_format))
        ]
        for f in skipped:
            updates.warning(f"[{spec.name}] landing file not read: {f['path']} ({f['reason']})")
        return skipped

    def _name_missing_upstream(self, key: str, result: UpdateResult) -> None:
        """A dataset reading a table no update has written yet fails with an engine message about
        an upstream flow; say which table is missing and which pipeline writes it."""
        pipeline, error = self.bundle.pipelines[key], result.error
        if error is None:
            return
        for other_key in self.bundle.pipelines:
            if other_key == key:
                continue
            for name in sorted(self.manifest.pipelines[other_key].code.names()):
                table = f"{pipeline.schema}.{name}" if pipeline.schema else name
                if self.spark.catalog.tableExists(table) or not any(
                    _reads(file, name) for file in pipeline.library_files
                ):
                    continue
                error.message = (
                    f"{key} reads {name}, which is not in this lake yet: the {other_key} "
                    f"pipeline writes it; run `medallion-dq run --pipeline {other_key}` first, "
                    "or the whole job (--job)"
                )
                updates.warning(f"[{pipeline.name}] {error.message}")
                return

    def run_job(
        self, key: str, *, full_refresh: bool = False, allow_empty: bool = False
    ) -> JobResult:
        """The bundle job's tasks in order; `allow_empty`: the gate passes an empty delivery
        (reported, not failed), as the gate's own `--allow-empty`."""
        if key not in self.bundle.jobs:
            raise KeyError(
                f"no job {key!r} in the bundle: choose one of {', '.join(self.bundle.jobs)}"
            )
        job = self.bundle.jobs[key]
        result, started = JobResult(key), time.perf_counter()
        done: dict[str, TaskResult] = {}
        pipelines_of_tasks = {t.key: t.pipeline_key for t in job.topological_order()}
        for task in job.topological_order():
            upstream, reasons = [done[d] for d in task.depends_on], []
            skipped = task.run_if == "ALL_SUCCESS" and any(u.status != "SUCCESS" for u in upstream)
            if not skipped:  # DEBUG: for the live status alone, no line of its own
                updates.debug(f"[job {key}] {task.key}: RUNNING")
            if skipped:
                outcome = TaskResult(
                    task.key, task.kind, "SKIPPED", message="upstream task did not succeed"
                )
            elif task.pipeline_key:
                try:
                    update = self.run_pipeline(
                        task.pipeline_key, full_refresh=full_refresh, by_hand=False
                    )
                except Interrupted as stop:
                    if stop.result:
                        result.tasks.append(
                            TaskResult(task.key, task.kind, "CANCELED", stop.result)
                        )
                    result.seconds = time.perf_counter() - started
                    stop.job = result
                    raise
                outcome = TaskResult(
                    task.key, task.kind, "SUCCESS" if update.ok else "FAILED", update=update
                )
            elif task.is_gate:
                outcome = self._gate(task, upstream, pipelines_of_tasks, allow_empty)
                reasons = _gate_reasons(outcome.gate) if outcome.gate else []
                for pipeline in filter(None, (pipelines_of_tasks[k] for k in task.depends_on)):
                    self._unjudged(pipeline).judged(key, reasons)
            else:
                outcome = TaskResult(
                    task.key, task.kind, "SKIPPED", message="no local equivalent for this task type"
                )
            said = outcome.message
            if reasons:  # the gate's lines above said each reason in full
                said = reasons[0] + (f"; {len(reasons) - 1} more above" if reasons[1:] else "")
            updates.log(
                logging.INFO if outcome.status != "FAILED" else logging.WARNING,
                f"[job {key}] {task.key}: {outcome.status}" + (f" ({said})" if said else ""),
            )
            done[task.key] = outcome
            result.tasks.append(outcome)
        result.seconds = time.perf_counter() - started
        return result

    def _gate(
        self, task, upstream: list[TaskResult], pipelines: dict, allow_empty: bool = False
    ) -> TaskResult:
        """The gate task, locally: the same code as on Databricks, over the local event log
        (all of it: a volume check compares with earlier updates) and the pipeline's tables."""
        parameters = task.spec.get("python_wheel_task", {}).get("parameters") or []
        allow_empty = allow_empty or "--allow-empty" in parameters  # the task's own option
        done = next((u for u in reversed(upstream) if u.update), None)
        update = done.update if done else None
        pipeline = self.bundle.pipelines.get(pipelines.get(done.key) or "") if done else None
        schema = self.database or (pipeline.schema if pipeline else None)
        verdict = gate.run_gate(
            self.runner.event_log.read(),
            update_id=update.update_id if update else None,
            # The rows a stream's earlier updates added that no publish has taken.
            earlier=dict.fromkeys(update.streaming, self._unjudged(pipelines[done.key]).updates())
            if done and update
            else None,
            rulesets=self.project.rule_sets(),
            layer_thresholds=_pack_thresholds(parameters),
            table_prefix=f"{schema}." if schema else "",
            as_of=self.as_of,
            allow_empty=allow_empty,
        )
        if update is not None:
            verdict.checks += self._ungated(update.pipeline)
        # The verdict as text, and itself: a terminal shows its tables fitted (tools' console).
        level = logging.INFO if verdict.passed else logging.WARNING
        updates.log(level, str(verdict), extra={"gate": verdict})
        if update is not None and verdict.checks:
            self.runner.event_log.append_checks(update.pipeline, update.update_id, verdict.checks)
        return TaskResult(
            task.key,
            task.kind,
            "SUCCESS" if verdict.passed else "FAILED",
            gate=verdict,
            message="; ".join(_gate_reasons(verdict)),
            examples=self._failing_records(verdict, f"{schema}." if schema else ""),
        )

    def _ungated(self, pipeline: str) -> list[CheckResult]:
        """A failed check per dataset the gate judges that holds rows an interrupted update
        committed and no gate judged (lake.Ungated); an --allow-empty does not pass them."""
        judged = set()
        with contextlib.suppress(ValueError, OSError):  # invalid rule files: the gate said why
            judged = {short_name(ruleset.dataset) for ruleset in self.project.rule_sets()}
        found: dict[str, list[str]] = {}
        for entry in Ungated(self.local.work_dir, pipeline).entries():
            for dataset, rows in entry["rows"].items():
                if dataset in judged:
                    count = "rows" if rows is None else f"{rows:,} rows"
                    found.setdefault(dataset, []).append(
                        f"{count} of {entry['status'].lower()} update {entry['update_id']}"
                    )
        return [
            CheckResult(
                dataset,
                "ungated_rows",
                "ungated",
                "; ".join(said),
                "none that no gate judged",
                passed=False,
                note="they were committed before the update stopped; `run --job ... "
                "--full-refresh` judges every row again",
            )
            for dataset, said in found.items()
        ]

    def _failing_records(self, verdict: gate.GateResult, prefix: str) -> dict[str, list[dict]]:
        """Up to `failing_examples` records of each rule over its threshold: a drop rule's
        from the dataset's quarantine (`_dq_failed_rules` names it), a warn rule's from the
        dataset, where they were kept. A rule whose records cannot be read gets none."""
        from pyspark.sql import functions as F

        from medallion_dq.quarantine import FAILED_RULES, QUARANTINED_AT

        if not self.failing_examples or not verdict.failures:
            return {}
        rules = {
            (ruleset.dataset, rule.name): rule
            for ruleset in self.project.rule_sets()
            for rule in ruleset.rules
        }
        spark, found = self.spark, {}
        for row in verdict.failures:
            dataset = short_name(row.dataset)
            rule = rules.get((dataset, row.rule))
            if rule is None or rule.action not in ("drop", "warn"):
                continue
            try:
                if rule.action == "drop":
                    frame = spark.table(f"{prefix}{dataset}_quarantine")
                    frame = frame.where(F.array_contains(FAILED_RULES, rule.name))
                    frame = frame.drop(FAILED_RULES, QUARANTINED_AT)
                else:
                    frame = spark.table(f"{prefix}{dataset}")
                    frame = frame.where(f"NOT coalesce(({rule.constraint}), false)")
                # a date of year 12000 as its text: Python holds no such date
                shown = frame.select(*values.shown_columns(frame))
                records = shown.limit(self.failing_examples).collect()
            except Exception as error:  # an example is a nicety: never fail the run over it
                updates.warning(f"[gate] no failing records of {dataset}.{rule.name}: {error}")
                continue
            found[f"{dataset}.{rule.name}"] = [record.asDict() for record in records]
        return found


def _gate_reasons(verdict: gate.GateResult) -> list[str]:
    """Why the gate failed, each reason in a line's words (none when it passed)."""
    if verdict.passed:
        return []
    reasons = [
        f"{short_name(row.dataset)}.{row.rule} failed {row.failed_fraction:.2%} of rows "
        f"(threshold {row.threshold:.2%})"
        for row in verdict.failures
    ]
    if verdict.empty and not verdict.allow_empty:
        reasons.append(
            f"no rows arrived for {', '.join(verdict.empty)} since the last publish: land the "
            "next delivery, or run again with --allow-empty where a day without data is normal"
        )
    reasons += [f"check {check}" for check in verdict.checks if not check.passed]
    return reasons or ["nothing to evaluate"]


def _reasons(rejected: dict) -> str:
    """A failed gate's reasons in a report's note: how many, and the first."""
    first, *more = rejected.get("reasons") or ["not recorded"]
    return f"for {len(more) + 1} reason(s), the first: {first}" if more else f"for {first}"


def _reads(file, name: str) -> bool:
    return bool(
        re.search(rf"\b{re.escape(name)}\b", file.read_text(encoding="utf-8", errors="replace"))
    )


def _pack_thresholds(parameters: list) -> dict[str, float] | None:
    """The gate task's `--pack`: its default thresholds by layer, as on Databricks."""
    pack = gate.pack_argument(parameters)
    return library.pack_thresholds(pack) if pack else None
