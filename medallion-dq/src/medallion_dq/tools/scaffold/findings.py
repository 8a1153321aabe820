"""What Spark says of a source: the profiler's one pass and the records judged by its rules."""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
from pathlib import Path
from typing import Any

from medallion_dq.project import config
from medallion_dq.text import sql_column as quote
from medallion_dq.tools import console
from medallion_dq.tools.scaffold.model import (
    Findings,
    Landed,
    Plan,
    SourceError,
    Typing,
    plain,
    text,
)

log = logging.getLogger(__name__)


def spark_findings(
    plan: Plan, landed: Landed, typings: list[Typing], sample: int, backend, keys: list[str]
):
    from medallion_dq.local import BackendUnavailable, start

    folder, staged = landed.path, None
    if landed.path.is_file():  # the profiler reads a folder: give it one holding the file alone
        staged = plan.root / config.STATE_DIR / "add-source" / plan.name
        shutil.rmtree(staged, ignore_errors=True)
        folder = staged / plan.name
        folder.mkdir(parents=True)
        shutil.copy2(landed.path, folder / landed.path.name)
    work_dir = plan.root / config.STATE_DIR / "profile"
    try:
        with console.waiting("Spark"):
            local = start(backend, work_dir=work_dir, reuse=plan.root, mounts=[folder])
    except BackendUnavailable as error:
        raise SourceError(str(error)) from None
    try:
        with local.reporting_loss(), console.waiting(f"add source {plan.name}: profiling"):
            dataset = f"silver_{plan.name}"
            return _findings(local.spark, folder.resolve(), landed, typings, sample, keys, dataset)
    finally:
        local.stop()
        if staged:
            shutil.rmtree(staged, ignore_errors=True)


def _findings(
    spark,
    folder: Path,
    landed: Landed,
    typings: list[Typing],
    sample: int,
    keys: list[str],
    dataset: str,
) -> Findings:
    from medallion_dq.tools import profile

    found = _landed_input(spark, folder, landed, typings)
    started = time.perf_counter()
    figures = profile.run(found)
    log.info("profiled %s in %.1f s", landed.path, time.perf_counter() - started)
    nested = {t.column for t in typings if t.type.startswith(("STRUCT", "ARRAY"))}
    rules, comments = [], []
    for item in profile.suggest(figures):
        if isinstance(item, list):
            comments.append(item)
        elif item.column in nested and not item.constraint.endswith("IS NOT NULL"):
            comments.append([*item.seen, "  a struct: no value rule on its JSON text"])
        elif item.column in keys and " BETWEEN " in item.constraint:
            # The ids seen say nothing of the next ones: a range would drop every new id.
            comments.append([*item.seen, "  a key (--key): no range rule on its values"])
        else:
            if item.column in nested:  # an example of a struct is a mapping, as silver sees it
                item.passing = [v if v is None else json.loads(v) for v in item.passing]
            rules.append(item)
    header = profile.render(figures, dataset).split("\ndataset:")[0].splitlines()[3:]

    # Every record judged by every rule, on silver's types: the sample and the test's rows.
    rows = [[text(r.get(c)) for c in landed.columns] for r in landed.records]
    started = time.perf_counter()
    verdicts = _verdicts(spark, landed.columns, typings, rules, rows)
    log.info("judged %d records in %.1f s", len(rows), time.perf_counter() - started)
    # The profile judged text; silver judges its types, where 'NA' is no number but NULL: each
    # rule's action is the profile's rule applied to what silver sees.
    keep = []
    for k, rule in enumerate(rules):
        fails = sum(not v[k] for v in verdicts)
        action = "drop" if not fails else "warn" if fails <= profile.NEAR * len(rows) else None
        if action != rule.action:
            rule.seen.append(f"  on silver's types: {fails:,} of {len(rows):,} records fail it")
        if action is None:
            comments.append([*rule.seen, "  too many fail it: no rule suggested"])
            continue
        rule.action = action
        keep.append(k)
    rules = [rules[k] for k in keep]
    verdicts = [[v[k] for k in keep] for v in verdicts]
    if not rules:
        raise SourceError(f"--from {landed.path}: the profile suggests no rule to start from")
    passing = [i for i, v in enumerate(verdicts) if all(v)]
    base = passing[0] if passing else 0
    first_failures = {
        next((i for i, v in enumerate(verdicts) if not v[k]), None) for k in range(len(rules))
    }
    chosen = sorted({*range(min(sample, len(rows))), base, *first_failures} - {None})
    thresholds = {}
    for k, rule in enumerate(rules):
        share = sum(not verdicts[i][k] for i in chosen) / len(chosen)
        if share > 0.05:  # the gate's default: the sample must pass it
            thresholds[rule.name] = math.ceil(share * 100) / 100

    cases: dict[str, dict[str, str | None]] = {"base": {}}
    expected: dict[str, tuple[str, bool]] = {}
    for rule in rules:
        for expect, values in (("pass", rule.passing), ("fail", rule.failing)):
            for n, value in enumerate(profile.unique(values), 1):
                label = f"{rule.name} {expect} {n}"
                cases[label] = {rule.column: text(plain(value))}
                expected[label] = (rule.name, expect == "pass")
    index = {c: i for i, c in enumerate(landed.columns)}
    case_rows = []
    for changes in cases.values():
        row = list(rows[base])
        for column, value in changes.items():
            row[index[column]] = value
        case_rows.append(row)
    names = [r.name for r in rules]
    broken, dropped = {}, []
    for label, verdict in zip(
        cases, _verdicts(spark, landed.columns, typings, rules, case_rows), strict=False
    ):
        failed = {name for name, ok in zip(names, verdict, strict=False) if not ok}
        rule_name, passes = expected.get(label, (None, True))
        if rule_name and (rule_name not in failed) != passes:
            dropped.append(label)  # e.g. a value silver's type cannot hold
            continue
        broken[label] = failed
    cases = {k: v for k, v in cases.items() if k not in dropped}
    return Findings(
        found.label, rules, comments, header, chosen, base, cases, broken, dropped, thresholds
    )


def _landed_input(spark, folder: Path, landed: Landed, typings: list[Typing]):
    """The landed files as the profiler reads them: text, in the landing reader's columns."""
    from pyspark.sql import functions as F

    from medallion_dq.tools import profile_input

    fmt = landed.file_format
    if fmt == "parquet":
        ddl = ", ".join(f"{quote(t.column)} {t.landed or t.type}" for t in typings)
        frame = profile_input.read_landing_batch(spark, folder, fmt, ddl)
        # The profile sees text: a timestamp[ns] as silver's timestamp, not as nanoseconds.
        frame = frame.select(
            *[
                F.expr(t.sql if t.landed else quote(t.column)).cast("string").alias(t.column)
                for t in typings
            ],
            "_source_file",
        )
        found = profile_input.Input(frame, f"landing folder {landed.path} (parquet)", None, True)
    else:
        ddl = ", ".join(f"{quote(c)} STRING" for c in landed.columns)
        found = profile_input.landing_input(spark, folder, fmt, ddl)
        found.label = found.label.replace(str(folder), str(landed.path))
    return found


def _verdicts(spark, columns, typings, rules, rows) -> list[list[bool]]:
    """For each row (landed text), whether it passes each rule, on silver's types."""
    from pyspark.sql import functions as F

    schema = ", ".join(f"{quote(c)} STRING" for c in columns) + ", _row INT"
    frame = spark.createDataFrame([(*row, i) for i, row in enumerate(rows)], schema)
    typed = frame.selectExpr(*(f"{t.sql} AS {quote(t.column)}" for t in typings), "_row")
    judged = typed.select(
        "_row",
        *(
            F.expr(f"coalesce(({r.constraint}), false)").alias(f"_r{k}")
            for k, r in enumerate(rules)
        ),
    )
    out: list[list[Any]] = [[]] * len(rows)
    for row in judged.collect():
        out[row["_row"]] = [row[f"_r{k}"] for k in range(len(rules))]
    return out
