"""What a failed update's error says to the user: the engine's text made into one line that
names the dataset, the rule or the file, and the cause."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from medallion_dq.constraints import referenced_columns
from medallion_dq.local import expectations, lake, pipeline_files, sql_files
from medallion_dq.local.loading import first_line
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
) -> RunError:
    """The failed update's error, from the engine's text: a rule's violation with its record, a
    rule's unknown column, a full disk, code the engine could not resolve (with its file, one
    of `files`, said relative to `root`), or the text's first line. `declared`: the update's
    expectations by dataset; `clauses`: `dataset.rule` -> its contract clause; `work_dir`: the
    lake, whose free space a full disk's line says."""
    failed_flow = next((f for f, s in flows.items() if s == "FAILED"), None)
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
                    defining = [
                        f
                        for f in files
                        if at_fault in pipeline_files.datasets_defined([f], views=True)
                    ]
                    where = (
                        f" ({pipeline_files.relative(defining[0], root)})"
                        if defining and at_fault not in by_name
                        else ""
                    )
                    message = f"DQ011 {at_fault}{where}: rule {e.name!r}: unknown column `{name}` in constraint {e.constraint!r}; fix: {hint}"
                    return RunError("UNKNOWN_COLUMN", message, at_fault, e.name)
    if fault := lake.io_fault(text):  # the disk's words, not the engine's wrapper
        where = f" (flow {failed_flow})" if failed_flow else ""
        fault += lake.disk_note(work_dir)
        return RunError("IO", f"the lake could not be written{where}: {fault}", failed_flow)
    if unresolved := _UNRESOLVED.search(text):  # the cause, not the engine's wrapper
        flow = short_name(unresolved["flow"]).removesuffix(sql_files.SOURCE_VIEW)
        cause = re.sub(r"\s*SQLSTATE: \w+;?$", "", unresolved["cause"].strip())
        defining = [f for f in files if flow in pipeline_files.datasets_defined([f])]
        where = f" ({pipeline_files.relative(defining[0], root)})" if defining else ""
        return RunError("ENGINE", f"{flow}{where} could not be resolved: {cause}", flow)
    return RunError("ENGINE", first_line(text)[:500] or text[:500], failed_flow)


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
