"""`medallion-dq upgrade`: a project baked at the previous minor release, brought to this one.

The CHANGELOG's upgrade steps, done and said a line each (`--dry-run`: said, nothing written):

- pyproject.toml: `dependencies` pins the runtime, medallion-dq, at this version (`~=`); the
  dependency groups name the engine's distribution, medallion-dq-dev; `[tool.uv.sources]`'s
  medallion-dq entry becomes medallion-dq-dev's, beside the runtime's (its folder `runtime/`),
  at the new release (`--rev`, `--path`, or where this medallion-dq-dev was installed from);
- each silver dataset that `check` finds letting a record bronze could not parse through
  (DQC016): its rule file gets the drop rule `whole_record`, its query selects
  `_corrupt_record`, and its SQL quarantine view is written again (as `quarantine write` does).

What it cannot do is refused, a line each, and then nothing is written (exit 2). Every edit is
a text edit that keeps the file's comments, read back before it is written.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medallion_dq import __version__, rules
from medallion_dq.problems import DataQualityError, MedallionDQError
from medallion_dq.project import Project, config, write_file
from medallion_dq.project.judging import conventions
from medallion_dq.project.manifest import PIPELINES_DIR
from medallion_dq.project.pipeline_code import PipelineModule, parse_python
from medallion_dq.text import relative_path
from medallion_dq.tools import quarantine_views

RUNTIME, DEV = "medallion-dq", "medallion-dq-dev"
WHOLE_RECORD = {"whole_record": "_corrupt_record IS NULL"}
CORRUPT = "_corrupt_record"
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(.*)\Z", re.DOTALL)
_RULE = """\
# Bronze marks a record it could not parse (a CSV line with a field too many or too few, a
# JSON line cut short) and keeps its text in _corrupt_record; its columns may hold a part of
# it, which could pass every other rule. Silver carries the mark and drops such records.
- name: whole_record
  constraint: _corrupt_record IS NULL
  action: drop
  description: A record bronze could not parse is judged by no other rule; the quarantine
    keeps its text for the source to fix.
  examples:
    pass: [{_corrupt_record: null}]
    fail: [{_corrupt_record: 'a record cut short'}]
"""


class Refused(MedallionDQError, ValueError):
    """What the upgrade cannot do, in one line (the file, what, and the fix)."""


@dataclass
class Edit:
    path: Path
    text: str  # the file's new text
    said: list[str]  # what changed, a line each


def _name(requirement: str) -> tuple[str, str]:
    """(normalized distribution name, the rest) of a requirement string."""
    match = _NAME.match(requirement)
    if match is None:
        return "", requirement
    return re.sub(r"[-_.]+", "-", match[1]).lower(), match[2]


def _replace_literal(text: str, old: str, new: str) -> str:
    """`text` with the TOML string `old` (either quote) written as `new`."""
    for quote in ('"', "'"):
        text = text.replace(f"{quote}{old}{quote}", json.dumps(new))
    return text


# --------------------------------------------------------------------------- pyproject.toml


def _pins(data: dict[str, Any], text: str, said: list[str]) -> str:
    """`dependencies`: medallion-dq at this version."""
    deps = data.get("project", {}).get("dependencies", [])
    found = [d for d in deps if isinstance(d, str) and _name(d)[0] == RUNTIME]
    if not found:
        raise Refused(
            f"pyproject.toml: [project] dependencies names no {RUNTIME}: this is no project of"
            " the template; fix: run the upgrade in the project's folder (or --root)"
        )
    for requirement in found:
        rest = _name(requirement)[1]
        if rest.lstrip().startswith(("@", "[")):
            raise Refused(
                f"pyproject.toml: dependencies: {requirement!r} is no version pin; fix: write"
                f' "{RUNTIME}~={__version__}" there by hand'
            )
        marker = rest[rest.index(";") :] if ";" in rest else ""
        wanted = f"{RUNTIME}~={__version__}{marker}"
        if requirement != wanted:
            text = _replace_literal(text, requirement, wanted)
            said.append(f"pyproject.toml: dependencies: {requirement} -> {wanted}")
    return text


def _groups(data: dict[str, Any], text: str, said: list[str]) -> str:
    """The dependency groups: the engine's distribution, medallion-dq-dev."""
    for group, items in data.get("dependency-groups", {}).items():
        for item in items if isinstance(items, list) else []:
            if isinstance(item, str) and _name(item)[0] == RUNTIME:
                wanted = DEV + _name(item)[1]
                text = _replace_literal(text, item, wanted)
                said.append(f"pyproject.toml: [dependency-groups] {group}: {item} -> {wanted}")
    return text


def _installed_from() -> dict[str, Any]:
    """Where this medallion-dq-dev came from (its direct_url.json, PEP 610); {}: an index."""
    try:
        found = importlib.metadata.distribution(DEV).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:  # a checkout on sys.path
        return {}
    return json.loads(found) if found else {}


def _same_repository(one: str, other: str) -> bool:
    def bare(url: str) -> str:
        return url.removeprefix("git+").removesuffix("/").removesuffix(".git").lower()

    return bare(one) == bare(other)


def _new_source(entry: dict[str, Any], rev: str | None, path: str | None) -> dict[str, Any]:
    """medallion-dq-dev's source at this release, from the project's medallion-dq entry."""
    origin = _installed_from()
    if "git" in entry:
        if rev is None and "vcs_info" in origin and _same_repository(origin["url"], entry["git"]):
            rev = origin["vcs_info"].get("commit_id")
        if rev is None:
            raise Refused(
                f"pyproject.toml: [tool.uv.sources] {RUNTIME} is {entry['git']} at"
                f" {entry.get('rev') or entry.get('tag') or entry.get('branch')}, medallion-dq"
                f" {__version__}'s commit there is unknown; fix: give it: --rev <commit>"
            )
        moved = {k: v for k, v in entry.items() if k not in ("rev", "tag", "branch")}
        return {**moved, "subdirectory": entry.get("subdirectory", RUNTIME), "rev": rev}
    if "path" in entry:
        if path is None and "dir_info" in origin:
            path = urllib.parse.unquote(urllib.parse.urlsplit(origin["url"]).path)
        folder = Path(path or entry["path"]).expanduser()
        if not (folder / "runtime" / "pyproject.toml").is_file():
            raise Refused(
                f"pyproject.toml: [tool.uv.sources] {RUNTIME} is the folder {folder}, which holds"
                f" no runtime/ (an earlier medallion-dq); fix: bring that checkout to"
                f" {__version__}, or give its medallion-dq folder: --path <folder>"
            )
        return {**entry, "path": str(folder)}
    raise Refused(
        f"pyproject.toml: [tool.uv.sources] {RUNTIME} = {entry} is neither a git nor a path"
        f" source; fix: name {DEV} there by hand, and {RUNTIME} in its runtime/ folder"
    )


def _inline(name: str, where: dict[str, Any]) -> str:
    """A [tool.uv.sources] line (JSON strings are TOML basic strings)."""
    return name + " = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in where.items()) + " }"


def _sources(
    data: dict[str, Any], text: str, said: list[str], rev: str | None, path: str | None
) -> str:
    """[tool.uv.sources]: medallion-dq's entry becomes medallion-dq-dev's, beside the runtime's."""
    sources = data.get("tool", {}).get("uv", {}).get("sources", {})
    entry = sources.get(RUNTIME)
    if not isinstance(entry, dict) or DEV in sources:
        return text  # an index, or already upgraded
    dev = _new_source(entry, rev, path)
    runtime = (
        {**dev, "path": str(Path(dev["path"]) / "runtime")}
        if "path" in dev
        else {**dev, "subdirectory": f"{dev['subdirectory']}/runtime"}
    )
    line = re.compile(rf'^[ \t]*"?{re.escape(RUNTIME)}"?[ \t]*=[ \t]*\{{.*\}}[ \t]*$', re.M)
    if len(line.findall(text)) != 1:
        raise Refused(
            f"pyproject.toml: [tool.uv.sources] {RUNTIME} is not one line {{ ... }}; fix: write"
            f" {_inline(DEV, dev)} and {_inline(RUNTIME, runtime)} there by hand"
        )
    lines = f"{_inline(DEV, dev)}\n{_inline(RUNTIME, runtime)}"
    said.append(f"pyproject.toml: [tool.uv.sources] {_inline(DEV, dev)}")
    said.append(f"pyproject.toml: [tool.uv.sources] {_inline(RUNTIME, runtime)}")
    return line.sub(lambda _: lines, text, count=1)


_NOX_RULES = 'session.install("-e", ".")\n    session.run("medallion-dq"'
_CHECK_GROUP = '# `medallion-dq check` (the offline bundle checks): no Spark.\ncheck = ["medallion-dq-dev[tools]"]\n'


def _check_group(project: Project, data: dict[str, Any], text: str, said: list[str]) -> str:
    """The group `check` (the tools, no Spark) where noxfile.py's `rules` session installs the
    project alone to run `medallion-dq`: the runtime has no such command any more."""
    noxfile = project.root / "noxfile.py"
    if not noxfile.is_file() or _NOX_RULES not in project.text(noxfile):
        return text
    if "check" not in data.get("dependency-groups", {}):
        header = re.search(r"^\[dependency-groups\][ \t]*\n", text, re.M)
        if header is None:
            raise Refused("pyproject.toml: no [dependency-groups] table; fix: add one first")
        text = text[: header.end()] + _CHECK_GROUP + text[header.end() :]
        said.append(f'pyproject.toml: [dependency-groups] check = ["{DEV}[tools]"] added')
    return text


def noxfile_edit(project: Project) -> Edit | None:
    """noxfile.py's `rules` session installs the group `check`, which has the command."""
    noxfile = project.root / "noxfile.py"
    if not noxfile.is_file() or _NOX_RULES not in project.text(noxfile):
        return None
    wanted = _NOX_RULES.replace('"."', '".", "--group", "check"')
    text = project.text(noxfile).replace(_NOX_RULES, wanted)
    return Edit(noxfile, text, ["noxfile.py: the rules session installs the group check"])


# The 0.5 template's test lines that assert what this release says otherwise, as its template
# now writes them: (file, the line's 0.5 text, its text now).
TEST_LINES = (
    (
        "tests/test_job.py",
        '"FAIL (e.g. C-9001, C-9002, C-9003)"\n',
        '"FAIL (e.g. C-9001, C-9002, C-9003, from "  # the file they came from, and the way out\n',
    ),
)


def test_edits(project: Project) -> list[Edit]:
    """The template's own tests, where they assert a message this release words otherwise."""
    edits = []
    for name, old, new in TEST_LINES:
        path = project.root / name
        text = project.text(path) if path.is_file() else ""
        if old in text:
            said = f"{name}: asserts the gate's message as this release words it"
            edits.append(Edit(path, text.replace(old, new), [said]))
    return edits


def pyproject_edit(project: Project, rev: str | None, path: str | None) -> Edit | None:
    """pyproject.toml at this release; None: it is already."""
    file = project.root / "pyproject.toml"
    try:
        text = project.text(file)
        data = config.load_toml(file)
    except (OSError, ValueError) as error:
        raise Refused(f"pyproject.toml: {error}; fix: make it parse first") from None
    said: list[str] = []
    new = _sources(data, _groups(data, _pins(data, text, said), said), said, rev, path)
    new = _check_group(project, data, new, said)
    if not said:
        return None
    read = config.parse_toml(new, "pyproject.toml")
    groups = read.get("dependency-groups", {}).values()
    names = [_name(s)[0] for g in groups for s in g if isinstance(s, str)]
    pinned = [d for d in read["project"]["dependencies"] if _name(d)[0] == RUNTIME]
    if RUNTIME in names or any(__version__ not in d for d in pinned):
        raise Refused("pyproject.toml: an edit did not read back as meant; fix: edit it by hand")
    return Edit(file, new, said)


# --------------------------------------------------------------------------- DQC016


def _with_rule(text: str, where: str) -> str:
    """A rule file's text with `whole_record` first under `rules:`."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if re.match(r"rules:\s*(#.*)?$", line)), None)
    item = next((m for line in lines[(at or 0) + 1 :] if (m := re.match(r"(\s*)- ", line))), None)
    if at is None or item is None:
        raise Refused(
            f"{where}: no block list under 'rules:' to add whole_record to; fix: add"
            " {name: whole_record, constraint: _corrupt_record IS NULL, action: drop} by hand"
        )
    block = "".join(f"{item[1]}{line}\n" for line in _RULE.splitlines())
    return "".join([*lines[: at + 1], block, *lines[at + 1 :]])


def _is_select_of_table(node: ast.AST) -> bool:
    """`<a table read>.select(...)`: spark.read.table("x").select, dp.read("x").select..."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr != "select":
        return False
    receiver = node.func.value
    return isinstance(receiver, ast.Call) and getattr(receiver.func, "attr", None) in (
        "table",
        "read",
        "read_stream",
    )


def _selects(module: PipelineModule, dataset: str) -> list[ast.Call]:
    """The table reads' `.select(...)` calls of `dataset`'s query function and its helpers."""
    for func in module.query_functions():
        if module.dataset_of(func) == dataset:
            return [c for c in module.calls(func) if _is_select_of_table(c)]
    return []


def _with_column(text: str, calls: list[ast.Call]) -> str:
    """`text` with "_corrupt_record" among each select's columns: before "_source_file" as the
    template writes it, else first; laid out as the column it goes before."""
    lines = text.splitlines(keepends=True)
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset), reverse=True):
        given = [a for a in call.args if isinstance(a, ast.Constant)]
        if not call.args or any(a.value in ("*", CORRUPT) for a in given):
            continue  # it selects all, the mark already, or nothing (the engine says so)
        before = next((a for a in given if a.value == "_source_file"), None) or call.args[0]
        row = lines[before.lineno - 1]
        start = len(row.encode()[: before.col_offset].decode())  # ast's offsets are bytes
        gap = "\n" + row[:start] if not row[:start].strip() else " "
        lines[before.lineno - 1] = f'{row[:start]}"{CORRUPT}",{gap}{row[start:]}'
    return "".join(lines)


def dqc016_edits(project: Project) -> list[Edit]:
    """Each DQC016 dataset's rule file and query, and its SQL quarantine view."""
    found = [p for p in conventions.check(project.manifest(lenient=True)) if p.code == "DQC016"]
    if not found:
        return []
    by_file = {relative_path(f, project.root): project.rule_set(f) for f in project.rule_files()}
    edits: dict[Path, Edit] = {}
    fixed: dict[str, dict[str, str]] = {}  # dataset -> its drop rules after the upgrade
    for problem in found:
        ruleset = by_file.get(problem.file)
        if ruleset is None:
            raise Refused(
                f"{problem.file}: its silver dataset has no rule file; fix: {problem.fix}"
            )
        path = project.root / problem.file
        text = _with_rule(project.text(path), problem.file)
        rules.parse(text, problem.file)  # reads back (DataQualityError: said by the caller)
        edits[path] = Edit(path, text, [f"{problem.file}: rule whole_record (drop) added"])
        fixed[ruleset.dataset] = {**WHOLE_RECORD, **ruleset.drop}
        edits |= _query_edit(project, ruleset.dataset, problem.fix, edits)
    for view in quarantine_views.views(project):
        if view.ruleset.dataset in fixed:
            where = relative_path(view.path, project.root)
            new = quarantine_views.rewritten(view, fixed[view.ruleset.dataset])
            if new is None:
                raise Refused(
                    f"{where}: view {view.name} is not as quarantine.view_sql writes it; fix:"
                    " select _corrupt_record in it and apply whole_record by hand"
                )
            said = f"{where}: {view.name} selects _corrupt_record, applies whole_record"
            edits[view.path] = Edit(view.path, new, [said])
    return list(edits.values())


def _query_edit(project: Project, dataset: str, fix: str, edits: dict[Path, Edit]) -> dict:
    """The pipeline file whose query of `dataset` selects _corrupt_record after the upgrade."""
    base = project.root / PIPELINES_DIR
    for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
        # The text as this upgrade leaves it (it may edit a file twice), read by the one
        # reader's parser: the edit needs the calls' places in that text.
        text = edits[path].text if path in edits else project.text(path)
        if (tree := parse_python(text)) is None:
            continue  # `check` says it (RUN012)
        module = PipelineModule(tree)
        calls = _selects(module, dataset)
        if calls:
            new = _with_column(text, calls)
            where = relative_path(path, project.root)
            said = [f"{where}:{c.lineno}: {dataset} selects {CORRUPT}" for c in calls]
            if path in edits:
                said = [*edits[path].said, *said]
            return {path: Edit(path, new, said)} if new != text else {}
    raise Refused(
        f"{dataset}: no `.select(...)` on the table it reads in a pipeline's Python file for"
        f" the upgrade to extend; fix: {fix}"
    )


# --------------------------------------------------------------------------- the command


def command(
    project: Project, *, dry_run: bool = False, rev: str | None = None, path: str | None = None
) -> tuple[int, list[str]]:
    """The exit code and the lines to say: 0 upgraded (or nothing to do), 2 refused."""
    try:
        files = [pyproject_edit(project, rev, path), noxfile_edit(project)]
        planned = [e for e in files if e is not None] + dqc016_edits(project)
        planned += test_edits(project)
    except Refused as error:
        return 2, [f"error: {error}"]
    except DataQualityError as error:
        return 2, [f"error: {problem}" for problem in error.problems]
    if not planned:
        return 0, [f"upgrade: the project is at medallion-dq {__version__}: nothing to change"]
    lines = [line for edit in planned for line in edit.said]
    if dry_run:
        return 0, [*lines, f"upgrade --dry-run: {len(lines)} change(s), nothing written"]
    for edit in planned:
        try:
            write_file(edit.path, edit.text)
        except OSError as error:
            where = relative_path(edit.path, project.root)
            return 2, [f"error: {where}: not written ({error.strerror or error})"]
    return 0, [
        *lines,
        f"upgrade: {len(lines)} change(s) for medallion-dq {__version__}; next: `uv sync` (or"
        " pip: README), then `medallion-dq check`",
    ]
