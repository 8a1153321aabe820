"""A run's results as markdown (`medallion-dq run --markdown FILE`): what a CI shows where a
reviewer looks (GitHub's job summary, Azure DevOps' build summary, a merge request's exposed
artifact).

The job's tasks, then the quality gate's tables as the terminal shows them: a row per rule
(passed, failed, failed %, threshold, status; the contract clause a rule was made from under its
name) and a row per dataset check (value, bound, status), then why the gate failed. A pipeline
run gives its datasets' rows. Everything taken from the data or the rule files (rule names,
clauses, values, notes) is escaped (`markup.md_text`, `md_code`): a name holding `|`, `<script>`,
backticks or `[x](y)` shows as written and ends no cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from medallion_dq.project.markup import md_code, md_text
from medallion_dq.text import short_name

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.gate import GateResult


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], right: int = 0) -> list[str]:
    """A markdown table; the cells are markdown already (escaped by the caller); the last
    `right` columns but one aligned right (the figures before a status)."""
    align = ["---"] * len(header)
    for at in range(len(header) - 1 - right, len(header) - 1):
        align[at] = "---:"
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _status(status: str) -> str:
    return f"**{md_text(status)}**" if status in ("FAIL", "FAILED") else md_text(status)


def _named(gate: GateResult, dataset: str, name: str, kind: str = "") -> str:
    """`dataset.name` as code (a check's kind after it), with the data-contract clause it was
    made from beneath."""
    clause = gate.clauses.get(f"{short_name(dataset)}.{name}")
    named = md_code(f"{dataset}.{name}") + (f" ({md_text(kind)})" if kind else "")
    return f"{named}<br>{md_text(clause)}" if clause else named


def gate_lines(gate: GateResult) -> list[str]:
    """The quality gate's verdict and tables."""
    verdict = "PASSED" if gate.passed else "FAILED"
    update = f" (update {md_code(gate.update_id)})" if gate.update_id else ""
    lines = [f"### Quality gate: {verdict}{update}", ""]
    rows = [
        [
            _named(gate, row.dataset, row.rule),
            f"{row.passed:,}",
            f"{row.failed:,}",
            f"{row.failed_fraction:.2%}" if row.total else "-",
            f"{row.threshold:.2%}",
            _status(row.status),
        ]
        for row in gate.rows
    ]
    rows += [
        [f"{md_code(dataset)} (0 input records)", "0", "0", "-", "-", _status(status)]
        for dataset in gate.empty
        for status in ["PASS" if gate.allow_empty else "FAIL"]
    ]
    if rows:
        header = ["rule", "passed", "failed", "failed %", "threshold", "status"]
        lines += [*_table(header, rows, right=4), ""]
    if gate.checks:
        checks = [
            [
                _named(gate, c.dataset, c.name, c.kind),
                md_text(c.value),
                md_text(c.bound),
                _status(c.status),
            ]
            for c in gate.checks
        ]
        lines += [*_table(["check", "value", "bound", "status"], checks), ""]
    # The verdict's lines (why it failed, warnings, notes), each a list item.
    lines += [f"- {md_text(line)}" for line in gate.summary().splitlines() if line.strip()]
    return lines


def _update_lines(update: Any) -> list[str]:
    """A pipeline update's datasets: rows written, input records, dropped."""
    data = update.to_dict()
    rows = [
        [
            md_code(name),
            "-" if d.get("output_rows") is None else f"{d['output_rows']:,}",
            f"{d['input_records']:,}" if "input_records" in d else "-",
            f"{d['dropped_records']:,}" if "dropped_records" in d else "-",
        ]
        for name, d in data["datasets"].items()
    ]
    lines = [f"### Pipeline {md_code(data['pipeline'])}: {_status(data['status'])}", ""]
    if rows:
        lines += [*_table(["dataset", "rows", "input records", "dropped"], rows, right=3), ""]
    if update.error:
        lines += [f"- {md_text(update.error.kind)}: {md_text(update.error.message)}"]
    return lines


def markdown(result: Any, what: str, error: str | None = None) -> str:
    """The markdown of a run of `what` (`job medallion`, `pipeline validation`): `result` a
    JobResult, an UpdateResult or None (the run ended before one: `error` says why)."""
    status = "FAILED" if error or result is None or not result.ok else "SUCCESS"
    lines = [f"## Data quality: {md_text(what)} {_status(status)}", ""]
    if error:
        lines += [md_text(error), ""]
    tasks = getattr(result, "tasks", None)
    if tasks is not None:
        rows = [[md_code(t.key), _status(t.status), md_text(t.message)] for t in tasks]
        lines += [*_table(["task", "status", "why"], rows), ""]
        for task in tasks:
            if task.gate is not None:
                lines += [*gate_lines(task.gate), ""]
    elif result is not None:
        lines += [*_update_lines(result), ""]
    return "\n".join(lines).rstrip() + "\n"
