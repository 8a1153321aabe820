"""What a failed update's error says to the user: the engine's text made into one line that
names the dataset, the rule or the file, and the cause."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from medallion_dq.bounds import heaviest
from medallion_dq.constraints import referenced_columns
from medallion_dq.local import expectations, lake, pipeline_files, sql_files
from medallion_dq.local.loading import first_line
from medallion_dq.project.pipelines import read_code
from medallion_dq.text import short_name


@dataclass
class RunError:
    kind: str  # EXPECTATION_VIOLATION | UNKNOWN_COLUMN | IO (a full disk...) | ENGINE | CANCELED
    message: str
    dataset: str | None = None
    expectation: str | None = None
    record: dict | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def explain(
    text: str | None,
    declared: dict,
    flows: dict[str, str],
    files: Sequence[Path],
    root: Path,
    clauses: Mapping[str, str],
    work_dir: Path,
    server_log: str = "",
) -> RunError:
    """The failed update's error, from the engine's text: a rule's violation with its record, a
    rule's unknown column, a full disk, code the engine could not resolve (with its file, one
    of `files`, said relative to `root`), or the text's first line. `declared`: the update's
    expectations by dataset; `clauses`: `dataset.rule` -> its contract clause; `work_dir`: the
    lake, whose free space a full disk's line says; `server_log`: what the server logged during
    the update, where a failed flow's cause is when the engine's text is only its wrapper."""
    failed_flow = _failed_flow(text or "", flows)
    text = text or f"flow {failed_flow} failed"
    violation = expectations.parse_violation(text)
    if violation:
        clause = clauses.get(f"{short_name(violation['dataset'])}.{violation['expectation']}")
        breaks = f" [{clause}]" if clause else ""
        message = f"EXPECTATION_VIOLATION: dataset {violation['dataset']!r} failed expectation {violation['expectation']!r}{breaks} ({violation['constraint']}) on record {json.dumps(violation['record'])}"
        return RunError(
            "EXPECTATION_VIOLATION",
            message,
            short_name(violation["dataset"]),
            violation["expectation"],
            violation["record"],
        )
    column = re.search(
        r"UNRESOLVED_COLUMN\.\w+\] A column, variable, or function parameter with name `?([^`\s]+)`? cannot be resolved",
        text,
    )
    if column:
        name = column[1].split(".")[-1].strip("`").lower()
        known = re.search(r"Did you mean one of the following\? \[([^\]]*)\]", text)
        columns = _input_columns(text) or (_bare(known[1]) if known else "")
        hint = f"the dataset has {columns}" if columns else "use a column of the dataset"
        # The dataset at fault is the flow that did not resolve (a quarantine view applying a
        # rule of its silver dataset's file, say); its own rules first.
        unresolved = _UNRESOLVED.search(text)
        flow = short_name(unresolved["flow"]) if unresolved else None
        by_name = {short_name(d): items for d, items in declared.items()}
        ordered = sorted(by_name.items(), key=lambda item: item[0] != flow)
        for dataset, items in ordered:
            for e in items:
                if name in referenced_columns(e.constraint):
                    at_fault = flow or dataset
                    defining = read_code(files).defining(at_fault)
                    where = (
                        f" ({pipeline_files.relative(defining[0], root)})"
                        if defining and at_fault not in by_name
                        else ""
                    )
                    message = f"DQ011 {at_fault}{where}: rule {e.name!r}: unknown column `{name}` in constraint {e.constraint!r}; fix: {hint}"
                    return RunError("UNKNOWN_COLUMN", message, at_fault, e.name)
    if unresolved := _UNRESOLVED.search(text):  # the cause, not the engine's wrapper
        flow = short_name(unresolved["flow"]).removesuffix(sql_files.SOURCE_VIEW)
        cause = re.sub(r"\s*SQLSTATE: \w+;?$", "", unresolved["cause"].strip())
        defining = read_code(files).defining(flow)
        where = f" ({pipeline_files.relative(defining[0], root)})" if defining else ""
        return RunError("ENGINE", f"{flow}{where} could not be resolved: {cause}", flow)
    logged = log_cause(server_log, failed_flow)
    disk = lake.io_fault(text.replace("SQLSTATE: 58030", "")) or lake.io_fault(logged)
    if logged and not disk:
        # The engine's own error (an overflow, a bad cast): not the lake's fault, whatever the
        # write's wrapper says (TASK_WRITE_FAILED has the I/O error state).
        flow = failed_flow or "a flow"
        return RunError("ENGINE", f"flow {flow} failed: {logged}", failed_flow)
    if fault := disk or lake.io_fault(text):  # the disk's words, not the engine's wrapper
        where = f" (flow {failed_flow})" if failed_flow else ""
        fault += lake.disk_note(work_dir)
        return RunError("IO", f"the lake could not be written{where}: {fault}", failed_flow)
    return RunError("ENGINE", first_line(text)[:500] or text[:500], failed_flow)


def judging(
    pipeline: str, flows: dict[str, str], declared: dict, active: Sequence[str]
) -> tuple[str, bool]:
    """What a dying server was doing in an update, for its one line: the flows still running
    (in `active` states) and, of their rules, the one whose call builds the most (the likely
    cause); and whether more memory is the fix (no such rule builds anything)."""
    running = [flow for flow, state in flows.items() if state in active]
    rules = {
        (short_name(dataset), e.name): e.constraint
        for dataset, items in declared.items()
        if not running or short_name(dataset) in running
        for e in items
    }
    during = f" while updating {', '.join(running) or 'its flows'} (pipeline {pipeline})"
    if found := heaviest(rules):
        (dataset, rule), size = found
        during += (
            f"; of the rules it judged, rule {rule!r} of {dataset} builds the most: up to "
            f"{size:,} characters or elements per row"
        )
    return during, found is None


def engine_error_text(error: BaseException) -> str:
    """The engine's error with the server's causes. A flow's failure usually arrives first as
    its FAILED event, which names the violated rule; when the update's error outruns that event
    (a busy machine), its own message is only the wrapper (TASK_WRITE_FAILED) and the rule and
    record are in a cause, which Spark Connect gives as the server's stack trace."""
    causes = getattr(error, "getStackTrace", lambda: None)()
    return f"{error}\n{causes}" if isinstance(causes, str) and causes else str(error)


def log_size(path: Path) -> int:
    """Where what a server logs next will start."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def log_since(log: Path, offset: int, most: int = 4 * 2**20) -> str:
    """What the server logged from `offset` on (at most `most` bytes): a failed flow's cause.
    Empty where the log is elsewhere (a container's is Docker's)."""
    try:
        with log.open("rb") as handle:
            handle.seek(offset)
            return handle.read(most).decode(errors="replace")
    except OSError:
        return ""


# Lines of a server's log that only wrap the cause: a write, a streaming query, the engine's
# flow failure.
_WRAPPERS = re.compile(
    r"TASK_WRITE_FAILED|StreamingQueryException|has FAILED more than|Job aborted|"
    r"Task failed while writing"
)
_EXCEPTION = re.compile(
    r"^(?P<caused>Caused by: )?(?:[a-z_$][\w$]*\.)+(?P<kind>[A-Z][\w$]*(?:Exception|Error)): "
    r"(?P<message>.+)$"
)


def _failed_flow(text: str, flows: dict[str, str]) -> str | None:
    """The flow that failed: the one in state FAILED, else the one the engine's text names,
    else the only one still running (the update can end before its flow's FAILED event)."""
    if failed := next((f for f, s in flows.items() if s == "FAILED"), None):
        return failed
    if named := re.search(r"Flow '([^']+)' has FAILED", text):
        return short_name(named[1])
    running = [f for f, s in flows.items() if s in ("STARTING", "PLANNING", "RUNNING")]
    return running[0] if len(running) == 1 else None


def log_cause(text: str, flow: str | None = None) -> str:
    """A failed flow's cause from what the server logged: the first error that wraps nothing,
    as the engine says it (`[ARITHMETIC_OVERFLOW] overflow...`: its class and message), or the
    Java exception's message and kind (`integer overflow (ArithmeticException)`); '' when none
    is logged. One that follows a line naming `flow` (its table's path, its query) comes first:
    a server shared with other updates logs theirs too."""
    lines = text.splitlines()
    found: list[tuple[bool, str]] = []
    for at, line in enumerate(lines):
        matched = _EXCEPTION.match(line.strip())
        if not matched or _WRAPPERS.search(line):
            continue
        message = re.sub(r"\s*SQLSTATE: \w+\.?$", "", matched["message"].strip())
        if not message.startswith("["):
            message = f"{message} ({matched['kind']})"
        named = bool(flow) and any(
            re.search(rf"[/.`']{re.escape(flow or '')}\b", before)
            for before in lines[max(0, at - 3) : at]
        )
        found.append((named, message[:500]))
    return next((m for named, m in found if named), found[0][1] if found else "")


# A flow the engine could not analyse: its first line is a wrapper, the next one the cause.
_UNRESOLVED = re.compile(r"Failed to resolve flow: '(?P<flow>[^']+)'\.\s*\nError: (?P<cause>.+)")


# A plan node that outputs its child's columns as they are.
_PASSING = ("SubqueryAlias", "Filter", "Sort", "GlobalLimit", "LocalLimit", "Distinct", "Window")


def _input_columns(text: str) -> str:
    """Every column the unresolved query reads from, from the engine's plan of it: the output
    of its first resolved node (the engine's own suggestions stop at five). Empty: not read."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "UNRESOLVED_COLUMN" in line), len(lines))
    for line in lines[start + 1 :]:
        node = line.lstrip(" :+-|")
        if not node or node.startswith("'") or node.startswith(_PASSING):
            continue
        listed = re.match(r"(?:Project |LocalRelation (?:<empty>, )?|Relation [^\[]+)\[", node)
        if listed is None:
            return ""
        names = []
        for item in _top_level(node[listed.end() :]):
            bare = re.sub(r"#\d+L?$", "", item.rsplit(" AS ", 1)[-1].strip())
            if not re.fullmatch(r"\w+", bare):
                return ""
            names.append(bare)
        return ", ".join(names)
    return ""


def _top_level(listed: str) -> list[str]:
    """The comma-separated items of a plan's `[...]` (its opening bracket already read)."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(listed):
        if char in "([":
            depth += 1
        elif char in ")]" and depth:
            depth -= 1
        elif char == "]" or (char == "," and not depth):
            items.append(listed[start:i])
            start = i + 1
            if char == "]":
                break
    return items


def _bare(names: str) -> str:
    """The engine's suggested columns without their table: `spark_catalog`.`s`.`t`.`a` -> a."""
    listed = (name.strip().split(".")[-1].strip("`") for name in names.split(","))
    return ", ".join(dict.fromkeys(name for name in listed if name))
