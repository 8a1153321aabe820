"""The quality gate between the validation pipeline and the publish pipeline.

Expectations enforce data quality inside a pipeline, not orchestration: a `warn` rule that fails
on 40 % of the rows does not stop anything downstream. The medallion job therefore runs this gate
after the validation pipeline: it reads the expectation metrics of the pipeline's latest update
from its event log, compares each rule's failed fraction with the rule's threshold, and exits 1
when one is over, so the publish task does not run. The local runner also passes the earlier
updates whose rows no publish has taken (`earlier`: a validation run on its own, a gate that
failed): they are judged with the latest, as one delivery.

The same code runs on Databricks (python_wheel_task of the `medallion-dq` wheel, entry point
`quality_gate`, reading `event_log('<pipeline id>')` and the project's rule files, package
data of the project wheel: `--rules-package <package>`) and locally (the local runner writes an
event log table of the same shape and calls `expectation_metrics` / `evaluate`, or `main` with `--event-log-table`).

Event log rows: `id, timestamp, event_type ('flow_progress'), level, message,
origin struct<pipeline_id, pipeline_name, update_id, flow_name, dataset_name>, details` where
`details` is a JSON string holding `flow_progress.data_quality.expectations`, an array of
`{name, dataset, passed_records, failed_records}`.

Thresholds are failed fractions (0.05 = 5 % of the rows may fail the rule). They come from the
rule files (`threshold` on a rule; `threshold` at file level for the whole dataset), looked
up as `<dataset>.<rule>`, then `<dataset>`; then the project's conventions pack's default
for the rule file's layer (`thresholds:` of its policy.yml; CLI `--pack`), then the gate's
default.

The rule files' dataset-level checks (volume, freshness, references) and schema contracts of
the datasets the update wrote are judged here too (checks.py), each with its value and bound:
one that fails fails the gate, named in the summary with the dataset, the value and the bound.

An empty delivery fails the gate too: a dataset with expectations that received no input
records in the judged update (every rule's passed + failed is 0, or its flow completed without
recording metrics at all, as a streaming flow with no new files does locally) is reported as
`<dataset>: 0 input records: an empty delivery (no new landing files?)`. A day without orders
is a failure, not a quiet green run that publishes an empty gold. Where an empty update is
expected, pass `allow_empty=True` (CLI: `--allow-empty`): it is then reported, not failed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq import library
from medallion_dq.events import (
    EXPECTATIONS_PATH,
    EXPECTATIONS_SCHEMA,
    read_update_events,
    update_ids,
)
from medallion_dq.text import short_name, shown, table_lines

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from medallion_dq.checks import CheckResult
    from medallion_dq.rules import RuleSet

__all__ = [
    "DEFAULT_THRESHOLD",
    "EMPTY_DELIVERY",
    "EXPECTATIONS_PATH",
    "EXPECTATIONS_SCHEMA",
    "GateResult",
    "GateRow",
    "package_rule_files",
    "completed_datasets",
    "evaluate",
    "expectation_metrics",
    "latest_update_id",
    "layer_defaults",
    "main",
    "pack_argument",
    "read_event_log",
    "rule_datasets",
    "run_gate",
    "thresholds",
    "thresholds_from_rule_files",
    "update_ids",
]

#: Without a threshold in the rule files, any failed row fails the gate.
DEFAULT_THRESHOLD = 0.0


#: How the gate names a dataset that received no rows (formatted with ``dataset``).
EMPTY_DELIVERY = "{dataset}: 0 input records: an empty delivery (no new landing files?)"

_PIPELINE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_`-]+(\.[A-Za-z0-9_`-]+){0,2}$")


# --------------------------------------------------------------------------- thresholds


def _fraction(value: Any, where: str) -> float:
    """0.05, "0.05" or "5%" -> 0.05; anything outside [0, 1] is an error."""
    try:
        if isinstance(value, str) and value.strip().endswith("%"):
            number = float(value.strip()[:-1]) / 100
        elif isinstance(value, bool):
            raise ValueError
        else:
            number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: threshold {value!r} is not a number") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{where}: threshold {value!r} must be a fraction between 0 and 1")
    return number


def _rule_file_paths(paths: Iterable[Path | str]) -> list[Path]:
    from medallion_dq import rules

    out: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            out.extend(rules.rule_files(path))
        else:
            out.append(path)
    return out


def load_rule_files(paths: Iterable[Path | str]) -> list[RuleSet]:
    """The rule sets of `paths` (files, or folders searched for *.yml / *.yaml), read by the
    rule loader, so the gate judges by exactly what `check` validates; an invalid file raises
    its DataQualityError (a ValueError) with the DQ codes."""
    from medallion_dq import rules

    return [rules.load(path) for path in _rule_file_paths(paths)]


def _thresholds(rulesets: Iterable[RuleSet]) -> dict[str, float]:
    thresholds: dict[str, float] = {}
    for ruleset in rulesets:
        thresholds.update(ruleset.thresholds())
    return thresholds


def thresholds(
    rulesets: Sequence[RuleSet], by_layer: Mapping[str, float] | None = None
) -> dict[str, float]:
    """The thresholds as the gate looks them up, for a reader that shows them (the report):
    `<dataset>.<rule>` a rule's own, `<dataset>` its file's, else its layer's default from
    `by_layer` (a conventions pack's, `library.pack_thresholds`)."""
    return {**layer_defaults(rulesets, by_layer or {}), **_thresholds(rulesets)}


def layer_defaults(rulesets: Iterable[RuleSet], by_layer: Mapping[str, float]) -> dict[str, float]:
    """`{dataset: threshold}` for each rule file whose layer has a default in `by_layer`
    (a conventions pack's `thresholds:`, `library.pack_thresholds`)."""
    out = {}
    for ruleset in rulesets:  # a file without `layer:` is of its folder's (rules/<layer>/)
        layer = ruleset.layer or (Path(ruleset.file).parent.name if ruleset.file else "")
        if layer in by_layer:
            out[ruleset.dataset] = by_layer[layer]
    return out


def thresholds_from_rule_files(paths: Iterable[Path | str]) -> dict[str, float]:
    """`{"<dataset>": file threshold, "<dataset>.<rule>": rule threshold}` from rule files."""
    return _thresholds(load_rule_files(paths))


def rule_datasets(paths: Iterable[Path | str]) -> set[str]:
    """Names of the datasets the rule files hold rules for (files or folders, as above)."""
    return {ruleset.dataset for ruleset in load_rule_files(paths)}


def package_rule_files(package: str) -> list[Path]:
    """The rule files a project ships as package data (`<package>/rules/**/*.yml`)."""
    from importlib import resources

    rules = Path(str(resources.files(package).joinpath("rules")))
    if not rules.is_dir():
        raise ValueError(f"package {package!r} has no rules/ folder ({rules})")
    return _rule_file_paths([rules])


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class GateRow:
    dataset: str
    rule: str
    passed: int
    failed: int
    threshold: float
    #: Where the threshold came from: "rule", "dataset" (its rule file), "layer" (the
    #: conventions pack's default for the layer) or "default".
    threshold_source: str = "default"

    @property
    def total(self) -> int:
        return self.passed + self.failed

    @property
    def failed_fraction(self) -> float:
        return self.failed / self.total if self.total else 0.0

    @property
    def ok(self) -> bool:
        return self.failed_fraction <= self.threshold

    @property
    def status(self) -> str:
        return "PASS" if self.ok else "FAIL"


@dataclass
class GateResult:
    rows: list[GateRow] = field(default_factory=list)
    update_id: str | None = None
    #: Earlier updates judged with ``update_id``: no publish had taken their rows yet.
    earlier: list[str] = field(default_factory=list)
    note: str = ""
    #: False when there was nothing to judge (no pipeline update found): the gate fails.
    evaluated: bool = True
    #: Datasets with expectations that received 0 input records in the update: an empty
    #: delivery, which fails the gate unless ``allow_empty``.
    empty: list[str] = field(default_factory=list)
    #: Report empty datasets without failing (``--allow-empty``).
    allow_empty: bool = False
    #: Dataset-level checks and schema contracts of the datasets in the update (checks.py).
    checks: list[CheckResult] = field(default_factory=list)
    #: ``dataset.rule`` (or check) -> the data-contract clause it was made from, when it was.
    clauses: dict[str, str] = field(default_factory=dict)

    def _named(self, dataset: str, name: str) -> str:
        """`name`, with the contract clause it breaks when it has one."""
        clause = self.clauses.get(f"{short_name(dataset)}.{name}")
        return f"{name} [{clause}]" if clause else name

    @property
    def passed(self) -> bool:
        return (
            self.evaluated
            and all(row.ok for row in self.rows)
            and all(check.passed for check in self.checks)
            and (self.allow_empty or not self.empty)
        )

    @property
    def empty_messages(self) -> list[str]:
        """One line per empty dataset, e.g. `silver_orders: 0 input records: an empty ...`."""
        return [EMPTY_DELIVERY.format(dataset=dataset) for dataset in self.empty]

    @property
    def failures(self) -> list[GateRow]:
        return [row for row in self.rows if not row.ok]

    #: The rule table's columns (`rule_rows`); those between the first and the last are figures.
    HEADER = ("rule", "passed", "failed", "failed %", "threshold", "status")

    def rule_rows(self) -> list[tuple[str | tuple[str, str], str, str, str, str, str]]:
        """The rule table's rows: `dataset.rule` (with the contract clause it was made from:
        `(name, clause)`), passed, failed, failed %, threshold, status. A terminal shows the
        clause beneath the name (medallion-dq-dev's console); `table` in brackets after it."""

        def named(dataset: str, rule: str) -> str | tuple[str, str]:
            clause = self.clauses.get(f"{short_name(dataset)}.{rule}")
            return (f"{dataset}.{rule}", clause) if clause else f"{dataset}.{rule}"

        body: list[tuple[str | tuple[str, str], str, str, str, str, str]] = [
            (
                named(row.dataset, row.rule),
                f"{row.passed:,}",
                f"{row.failed:,}",
                f"{row.failed_fraction:.2%}" if row.total else "-",  # no row judged: no rate
                f"{row.threshold:.2%}",
                row.status,
            )
            for row in self.rows
        ]
        status = "PASS" if self.allow_empty else "FAIL"
        body += [(f"{d} (0 input records)", "0", "0", "-", "-", status) for d in self.empty]
        return body or [("(no expectation metrics)", "-", "-", "-", "-", "PASS")]

    def check_rows(self) -> list[tuple[str | tuple[str, str], str, str, str]]:
        """The dataset checks' rows: `dataset.check (kind)` (with its contract clause, as
        `rule_rows`), value, bound, status."""
        out: list[tuple[str | tuple[str, str], str, str, str]] = []
        for c in self.checks:
            clause = self.clauses.get(f"{short_name(c.dataset)}.{c.name}")
            name = f"{c.dataset}.{c.name} ({c.kind})"
            out.append(((name, clause) if clause else name, c.value, c.bound, c.status))
        return out

    def table(self) -> str:
        """Plain-text table: rule, passed, failed, failed %, threshold, status."""
        body = [
            (f"{first[0]} [{first[1]}]" if isinstance(first, tuple) else first, *rest)
            for first, *rest in self.rule_rows()
        ]
        text = "\n".join(table_lines(self.HEADER, body, right=range(1, len(self.HEADER) - 1)))
        return f"{text}\n\n{self.checks_table()}" if self.checks else text

    def checks_table(self) -> str:
        """Plain-text table of the dataset-level checks: check, value, bound, status."""
        from medallion_dq import checks

        return checks.table(
            (c.dataset, self._named(c.dataset, c.name), c.kind, c.value, c.bound, c.status)
            for c in self.checks
        )

    def summary(self) -> str:
        update = f" (update {self.update_id})" if self.update_id else ""
        if self.update_id and self.earlier:  # one delivery: no publish has taken their rows
            earlier = ", ".join(self.earlier)
            update = f" (update {self.update_id}, with the unpublished {earlier})"
        if not self.evaluated:
            text = "quality gate FAILED: nothing to evaluate"
        elif self.passed:
            text = f"quality gate PASSED{update}: {len(self.rows)} rule(s) within threshold"
            if self.checks:
                text += f", {len(self.checks)} dataset check(s) passed"
            if self.empty:
                text += " (empty delivery allowed)\n" + "\n".join(self.empty_messages)
        else:
            reasons = []
            if self.failures:
                names = ", ".join(
                    f"{r.dataset}.{self._named(r.dataset, r.rule)}" for r in self.failures
                )
                reasons.append(
                    f"{len(self.failures)} of {len(self.rows)} rule(s) over threshold: {names}"
                )
            if self.empty and not self.allow_empty:
                reasons.append(
                    f"{len(self.empty)} dataset(s) received no rows: {', '.join(self.empty)}"
                )
            failed_checks = [c for c in self.checks if not c.passed]
            if failed_checks:
                names = ", ".join(
                    f"{c.dataset}.{self._named(c.dataset, c.name)}" for c in failed_checks
                )
                reasons.append(f"{len(failed_checks)} dataset check(s) failed: {names}")
            text = f"quality gate FAILED{update}: " + "; ".join(reasons)
            if self.empty and not self.allow_empty:
                text += "\n" + "\n".join(self.empty_messages)
            text += "".join(f"\n{check}" for check in failed_checks)
        text += "".join(f"\nwarning: {check}" for check in self.checks if check.warning)
        # Why a check passed where its table row cannot say (an empty delivery allowed, no
        # history yet): once only in the HTML report.
        text += "".join(
            f"\nnote: {c.dataset}.{c.name} ({c.kind}): {c.note}"
            for c in self.checks
            if c.passed and not c.warning and c.note
        )
        return f"{text}\n{self.note}" if self.note else text

    def __str__(self) -> str:
        return f"{self.table()}\n{self.summary()}"


def _threshold(
    dataset: str,
    rule: str,
    thresholds: Mapping[str, float],
    default: float,
    layer: Mapping[str, float],
) -> tuple[float, str]:
    names = [dataset] if short_name(dataset) == dataset else [dataset, short_name(dataset)]
    for name in names:
        if f"{name}.{rule}" in thresholds:
            return float(thresholds[f"{name}.{rule}"]), "rule"
    for name in names:
        if name in thresholds:
            return float(thresholds[name]), "dataset"
    for name in names:
        if name in layer:
            return float(layer[name]), "layer"
    return float(default), "default"


def evaluate(
    metrics: Iterable[Mapping[str, Any]],
    thresholds: Mapping[str, float],
    default_threshold: float = DEFAULT_THRESHOLD,
    *,
    datasets: Iterable[str] = (),
    allow_empty: bool = False,
    layer: Mapping[str, float] | None = None,
) -> GateResult:
    """Judge each rule: failed / (passed + failed) must not exceed its threshold; and each
    dataset with expectations must have received rows. A rule's threshold is its own, else its
    rule file's, else `layer`'s for its dataset (the conventions pack's default for the
    dataset's layer, `layer_defaults`), else `default_threshold`.

    `metrics`: dicts with `dataset`, `name` and `passed` / `failed` (the event-log
    spelling `passed_records` / `failed_records` works too). Several entries for the same
    dataset and rule (micro-batches, several flows) are added up. A dataset whose rules all
    count 0 records is empty (all its rules judge the same input rows). `datasets`: datasets
    that ran in this update and have rules: one with no metrics at all is empty too. An empty
    dataset fails the gate unless `allow_empty`.
    """
    _fraction(default_threshold, "default_threshold")
    totals: dict[tuple[str, str], list[int]] = {}
    for item in metrics:
        dataset = str(item.get("dataset") or "")
        name = str(item.get("name") or item.get("rule") or "")
        passed = item.get("passed", item.get("passed_records")) or 0
        failed = item.get("failed", item.get("failed_records")) or 0
        counts = totals.setdefault((dataset, name), [0, 0])
        counts[0] += int(passed)
        counts[1] += int(failed)
    rows = []
    inputs: dict[str, int] = {}
    for (dataset, name), (passed, failed) in sorted(totals.items()):
        threshold, source = _threshold(dataset, name, thresholds, default_threshold, layer or {})
        rows.append(GateRow(dataset, name, passed, failed, threshold, source))
        inputs[dataset] = max(inputs.get(dataset, 0), passed + failed)
    reported = {short_name(d) for d in inputs}
    empty = {d for d, count in inputs.items() if count == 0}
    empty |= {d for d in map(short_name, datasets) if d and d not in reported}
    return GateResult(rows=rows, empty=sorted(empty), allow_empty=allow_empty)


# --------------------------------------------------------------------------- Spark side


def latest_update_id(events_df: DataFrame) -> str | None:
    """The update of the most recent `flow_progress` event (None if there is none)."""
    from pyspark.sql import functions as F

    rows = (
        events_df.filter(F.col("event_type") == "flow_progress")
        .filter(F.col("origin.update_id").isNotNull())
        .orderBy(F.col("timestamp").desc())
        .select(F.col("origin.update_id").alias("update_id"))
        .limit(1)
        .collect()
    )
    return rows[0]["update_id"] if rows else None


def completed_datasets(events_df: DataFrame, update_id: str | Sequence[str]) -> set[str]:
    """Datasets (short names) whose flow reported COMPLETED in this update's (or these
    updates') events."""
    return read_update_events(events_df, update_id).completed(update_id)


def expectation_metrics(
    events_df: DataFrame, update_id: str | Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Expectation metrics of one update (default: the latest), or summed over several, as
    `[{"dataset", "name", "passed", "failed"}, ...]`, ready for `evaluate`."""
    update_id = update_id or latest_update_id(events_df)
    if update_id is None:
        return []
    return read_update_events(events_df, update_id).metrics(update_id)


def read_event_log(
    spark: SparkSession,
    *,
    pipeline_id: str | None = None,
    table: str | None = None,
    catalog: str | None = None,
    schema: str | None = None,
) -> DataFrame:
    """The event log as a DataFrame: a table (local runner, or a pipeline that publishes its
    event log) or, on Databricks, `event_log('<pipeline id>')`."""
    if table:
        if "." not in table and catalog and schema:
            table = f"{catalog}.{schema}.{table}"
        if not _TABLE_NAME.match(table):
            raise ValueError(f"not a table name: {table!r}")
        return spark.read.table(table)
    if not pipeline_id or not _PIPELINE_ID.match(pipeline_id):
        raise ValueError(f"not a pipeline id: {pipeline_id!r}")
    return spark.sql(f"SELECT * FROM event_log('{pipeline_id}')")


def run_gate(
    events_df: DataFrame,
    *,
    update_id: str | None = None,
    earlier: Mapping[str, Sequence[str]] | None = None,
    rule_files: Iterable[Path | str] = (),
    rulesets: Sequence[RuleSet] | None = None,
    default_threshold: float = DEFAULT_THRESHOLD,
    layer_thresholds: Mapping[str, float] | None = None,
    allow_empty: bool = False,
    table_prefix: str = "",
    as_of: str | None = None,
) -> GateResult:
    """Metrics of one update (default: latest) judged against the rule files' thresholds, and
    the rule files' dataset-level checks and schema contracts (checks.py) of the datasets the
    update wrote: `events_df` is the whole event log (volume compares with earlier updates);
    `table_prefix` (`catalog.schema.`) names the pipeline's tables; `as_of`: the time
    freshness is judged at (default: the update's). `earlier`: by dataset (short name), the
    completed updates (oldest first) whose rows it holds and no publish has taken, judged
    with this one as one delivery; for a streaming table, whose updates add rows (a
    materialized view's latest update judged all of its rows).

    A dataset of the rule files whose flow completed in this update without a single input
    record (no metrics, or all rules at 0) is an empty delivery: it fails the gate unless
    `allow_empty`. `rulesets`: the rule files as the caller loaded them (the local engine
    reads a project's once per command), instead of `rule_files`. `layer_thresholds`: by
    layer, the threshold of a rule whose rule file sets none (the conventions pack's)."""
    update_id = update_id or latest_update_id(events_df)
    if rulesets is None:  # once: thresholds and the datasets to expect
        rulesets = load_rule_files(rule_files)
    thresholds = _thresholds(rulesets)
    if update_id is None:
        return GateResult(
            note="no flow_progress events: has the validation pipeline run?", evaluated=False
        )
    before = {d: tuple(u for u in ids if u != update_id) for d, ids in (earlier or {}).items()}
    before = {d: ids for d, ids in before.items() if ids}
    expected = {ruleset.dataset for ruleset in rulesets}
    judged = read_update_events(
        events_df, [*{u for ids in before.values() for u in ids}, update_id]
    )
    ran = judged.completed(update_id)
    metrics = judged.metrics(update_id)
    for ids in set(before.values()):  # mostly one list, shared by the pipeline's streams
        takes = {d for d, its in before.items() if its == ids}
        ran |= judged.completed(ids) & takes
        metrics += [m for m in judged.metrics(ids) if short_name(m["dataset"]) in takes]
    result = evaluate(
        metrics,
        thresholds,
        default_threshold,
        datasets={short_name(d) for d in expected} & ran,
        allow_empty=allow_empty,
        layer=layer_defaults(rulesets, layer_thresholds or {}),
    )
    result.update_id = update_id
    result.earlier = list(dict.fromkeys(u for d in sorted(before) if d in ran for u in before[d]))
    from medallion_dq import rules

    result.clauses = rules.contract_clauses(rulesets)
    from medallion_dq import dataset_checks

    def table(name: str) -> str:
        return f"{table_prefix}{name}"

    if any(r.checks or r.schema for r in rulesets):
        result.checks = dataset_checks.judge(
            events_df.sparkSession,
            events_df,
            update_id,
            rulesets,
            ran,
            table=table,
            as_of=as_of or judged.time(update_id),
            allow_empty=allow_empty,
            earlier=before,
        )
    # Bronze datasets have no rule files: their drift is judged for every update, as a warning.
    since = judged.time((*result.earlier, update_id)[0], first=True)
    drift = dataset_checks.landing_drift(events_df.sparkSession, since, ran, table=table)
    result.checks += drift
    if not result.rows and not result.empty:
        result.note = (
            "no expectation metrics in this update (no new rows, or only `fail` rules, "
            "which record no metrics)"
        )
    return result


def pack_argument(parameters: Iterable[Any]) -> str | None:
    """The pack a gate task's parameters name (`--pack acme` or `--pack=acme`): what `check`
    holds to the project's pack and the local run passes on."""
    given = [str(p) for p in parameters]
    for at, word in enumerate(given):
        if word.startswith("--pack="):
            return word.removeprefix("--pack=")
        if word == "--pack" and at + 1 < len(given):
            return given[at + 1]
    return None


def _get_spark() -> SparkSession:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    """Job task entry point. Returns 0 when the gate passes; exits 1 (`SystemExit`) when it
    fails (a rule over its threshold, or an empty delivery without `--allow-empty`) or
    cannot be evaluated, which fails the task and skips the publish task."""
    parser = argparse.ArgumentParser(
        prog="quality_gate",
        description="Fail when an expectation's failed fraction exceeds its threshold.",
    )
    parser.add_argument("--pipeline-id", help="id of the validation pipeline")
    parser.add_argument("--catalog", help="catalog of the pipeline tables")
    parser.add_argument("--schema", help="schema of the pipeline tables")
    parser.add_argument("--update-id", help="pipeline update to judge (default: the latest)")
    parser.add_argument(
        "--event-log-table",
        help="read this event log table instead of event_log(<pipeline id>)",
    )
    parser.add_argument(
        "--rules", nargs="*", default=[], help="rule files or folders with thresholds"
    )
    parser.add_argument(
        "--rules-package",
        help="a project package whose rules/ folder (package data) holds the rule files",
    )
    parser.add_argument(
        "--default-threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help="failed fraction allowed when the rule files set none (default: %(default)s)",
    )
    parser.add_argument(
        "--pack",
        help="the project's conventions pack: its thresholds by layer apply where the rule"
        " files set none",
    )
    parser.add_argument(
        "--as-of",
        help="judge freshness at this time (ISO timestamp; default: the update's time)",
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="report a dataset that received no rows (an empty delivery) instead of failing",
    )
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not args.pipeline_id and not args.event_log_table:
        parser.error("give --pipeline-id (or --event-log-table)")

    try:
        session = spark or _get_spark()
        events = read_event_log(
            session,
            pipeline_id=args.pipeline_id,
            table=args.event_log_table,
            catalog=args.catalog,
            schema=args.schema,
        )
        rule_files = [*args.rules]
        if args.rules_package:
            rule_files += package_rule_files(args.rules_package)
        result = run_gate(
            events,
            update_id=args.update_id,
            rule_files=rule_files,
            default_threshold=args.default_threshold,
            layer_thresholds=library.pack_thresholds(args.pack) if args.pack else None,
            allow_empty=args.allow_empty,
            table_prefix=f"{args.catalog}.{args.schema}." if args.catalog and args.schema else "",
            as_of=args.as_of,
        )
    except Exception as exc:
        print(
            shown(f"ERROR: quality gate could not run: {type(exc).__name__}: {exc}"),
            file=sys.stderr,
        )
        raise SystemExit(1) from None

    source = args.event_log_table or f"pipeline {args.pipeline_id}"
    target = f" -> {args.catalog}.{args.schema}" if args.catalog and args.schema else ""
    # The job's log shows these lines: control characters from the data as text (`text.shown`).
    print(shown(f"Quality gate for {source}{target}\n{result.table()}\n{result.summary()}"))
    if not result.passed:
        raise SystemExit(1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
