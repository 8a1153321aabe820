"""`medallion-dq quarantine write`: each SQL quarantine view that `check` finds stale (DQC008)
written again from its rule file's drop rules: after a rule changes, or after a conventions
pack's new version changes a library rule the file uses (`conventions diff` lists the DQC008
that would appear).

A view file is as `quarantine.view_sql` writes it (the template's, `add source`'s): comments,
then `CREATE VIEW <name> [COMMENT '...'] AS SELECT *, <failed rules> AS _dq_failed_rules FROM
<source> AS quarantine_source WHERE <fails any>`. Its comments, name, comment and source (the
SELECT that types the rows as silver does) are kept; the two rule expressions are written anew,
and a column a rule reads that the source's SELECT does not give (`_corrupt_record` after the
rule `whole_record` came) is added to that SELECT: the view would not resolve without it. A
stale file of another shape is named, not touched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlglot import exp

from medallion_dq import quarantine
from medallion_dq.problems import DataQualityError
from medallion_dq.project import Project, writable, write_file
from medallion_dq.project.pipeline_sql import VIEW as _VIEW
from medallion_dq.project.pipeline_sql import created, unselected
from medallion_dq.rules import RuleSet
from medallion_dq.text import relative_path

_CREATE = re.compile(r"CREATE\s+VIEW\s+(`[^`]+`|[\w.]+)", re.IGNORECASE)


@dataclass
class View:
    path: Path
    name: str
    ruleset: RuleSet
    text: str


def _with_columns(source: str, columns: list[str]) -> str:
    """`source` with `columns` first in its SELECT, laid out as its first column is."""
    head = re.match(r"\s*\(\s*SELECT(?:\s+DISTINCT)?(\s+)", source, re.IGNORECASE)
    if head is None or not columns:
        return source
    gap = head[1]
    added = "".join(f"{exp.to_identifier(name).sql('spark')},{gap}" for name in columns)
    return source[: head.end()] + added + source[head.end() :]


def _applies(text: str, rules: Mapping[str, str]) -> bool:
    """As DQC008 judges it: the view applies the rule file's drop rules as they are now, and its
    source gives every column they read."""
    flat = " ".join(text.split())
    wanted = [quarantine.fails_any_sql(rules), quarantine.failed_rules_sql(rules)]
    applied = all(" ".join(part.split()) in flat for part in wanted)
    return applied and not unselected(text, rules)


def stale(project: Project) -> list[View]:
    """The project's SQL quarantine views that do not apply their rule file's drop rules."""
    return [view for view in views(project) if not _applies(view.text, view.ruleset.drop)]


def views(project: Project) -> list[View]:
    """The project's SQL quarantine views of rule files that say `quarantine: view`."""
    manifest = project.manifest(lenient=True)
    chosen = manifest.policy
    suffix = str(chosen.config.get("quarantine_suffix", "_quarantine"))
    by_name = {f"{r.dataset}{suffix}": r for r in manifest.rule_sets if r.quarantine == "view"}
    found = []
    for file in manifest.folder_code.files:
        for query in file.queries:
            ruleset = by_name.get(query.dataset) if query.form == "view" else None
            if ruleset is not None and (head := created(query.statement)):
                found.append(View(file.path, head[0], ruleset, manifest.text(file.path)))
    return found


def rewritten(view: View, rules: Mapping[str, str] | None = None) -> str | None:
    """The file with its view's rule expressions written anew, from `rules` (default: its rule
    file's drop rules); None: not view_sql's shape."""
    match = _VIEW.search(view.text)
    if match is None or len(_CREATE.findall(view.text)) != 1:
        return None
    comment = re.sub(r"\\(.)", r"\1", match["comment"] or "")
    rules = view.ruleset.drop if rules is None else rules
    source = _with_columns(match["source"], unselected(view.text, rules))
    statement = quarantine.view_sql(match["name"], source, rules, comment)
    return view.text[: match.start()] + statement


def command(project: Project) -> tuple[int, list[str]]:
    """The exit code and the lines to say: 0 all views apply their rules (now), 1 a stale view
    could not be written (named), 2 a rule file does not load."""
    try:
        views = stale(project)
    except DataQualityError as error:
        return 2, [f"error: {problem}" for problem in error.problems]
    if not views:
        return 0, ["every quarantine view applies its rule file's drop rules"]
    planned = [(view, rewritten(view)) for view in views]
    lines = [
        f"error: {relative_path(v.path, project.root)}: view {v.name} is not as"
        " quarantine.view_sql writes it; fix: write it again by hand (DQC008's fix)"
        for v, text in planned
        if text is None
    ]
    if lines:  # nothing is written unless every stale view can be
        return 1, lines
    paths = [view.path for view, _ in planned]
    writable.check_all(paths, "quarantine write writes the view", project.root)
    for view, text in planned:
        assert text is not None
        try:
            write_file(view.path, text)
        except OSError as error:
            where = relative_path(view.path, project.root)
            return 1, [*lines, f"error: {where}: not written ({error.strerror or error})"]
        lines.append(
            f"wrote {relative_path(view.path, project.root)}: {view.name} applies"
            f" {', '.join(view.ruleset.drop)}"
        )
    return 0, lines
