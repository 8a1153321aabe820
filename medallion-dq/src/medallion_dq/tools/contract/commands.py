"""`medallion-dq contract import | export | check`: the command line's side (cli.py calls
`command`); it prints what each command did, as the other commands do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from medallion_dq import rules
from medallion_dq.problems import DataQualityError, Problem
from medallion_dq.project import Project, writable, write_file
from medallion_dq.tools import console
from medallion_dq.tools.contract.drift import drift
from medallion_dq.tools.contract.export import export
from medallion_dq.tools.contract.files import Planned, plan
from medallion_dq.tools.contract.model import Translation
from medallion_dq.tools.contract.odcs import ODCS_VERSION, ContractError, read, validate
from medallion_dq.tools.contract.translate import translate


def _say(translation: Translation, notes: list[str]) -> None:
    for line in translation.skipped:
        console.result(f"  not translated: {line}")
    for line in [*translation.notes, *notes]:
        console.result(f"  note: {line}")


def _load(file: str, layer: str = "silver", dataset: str | None = None) -> Translation:
    label = Path(file).name
    return translate(read(Path(file), label), label, layer=layer, dataset=dataset)


def command(action: str, project: Project | Path, **options) -> int:
    """`medallion-dq contract import | export | check`: 0 done (no drift), 1 drift, 2 a bad
    contract or option (nothing written)."""
    try:
        return _COMMANDS[action](Project.of(project), **options)
    except ContractError as error:
        for line in error.lines:
            console.error(f"error: {line}")
        return 2
    except DataQualityError as error:
        for problem in error.problems:
            console.error(f"error: {problem}")
        return 2


def _import(project: Project, file: str, layer: str = "silver", dataset: str | None = None) -> int:
    from medallion_dq.project.judging import conventions

    translation = _load(file, layer, dataset)
    planned, notes = plan(project, translation)
    if broken := _breaks(project, planned):
        for problem in broken:
            console.error(f"error: {Path(file).name}: the import would leave {problem}")
        console.error(f"contract import: nothing written ({len(broken)} error(s) above)")
        return 2
    changed = [item.path for item in planned if item.text != item.before]
    writable.check_all(changed, "contract import writes the rule file", project.root)
    for item in planned:
        if item.text == item.before:
            console.result(f"contract import: {item.display}: unchanged")
            continue
        write_file(item.path, item.text)
        made = rules.parse(item.text, item.display)
        console.result(
            f"contract import: {'updated' if item.before is not None else 'wrote'} {item.display}: "
            f"{len(made.rules)} rule(s), {len(made.checks)} check(s), {len(made.schema)} column(s)"
        )
    _say(translation, notes)
    # What `check` says of the files written: a quarantine to add, a dataset to define.
    shown = tuple(item.display for item in planned)
    for problem in conventions.check(
        Project(project.root).manifest(lenient=True)
    ):  # the files as now written
        if problem.file.split(":")[0].endswith(shown):  # a review finding: file:line
            console.result(f"  check: {problem}")
    return 0


def _breaks(project: Project, planned: list[Planned]) -> list[Problem]:
    """The errors `check` would find, after the import, in files it does not write (a pipeline's
    decorator given no rules, DQC014): the import is refused rather than leave them to the next
    person who runs `check`."""
    from medallion_dq.project.judging import conventions

    def said(problem: Problem) -> tuple:
        return problem.code, problem.file, problem.message

    manifest = project.manifest(lenient=True)
    now = {said(p) for p in conventions.check(manifest) if p.severity == "error"}
    after = conventions.check(manifest, replacing={item.path: item.text for item in planned})
    written = tuple(item.display for item in planned)
    return [
        p
        for p in after
        if p.severity == "error" and said(p) not in now and not p.file.endswith(written)
    ]


def _export(project: Project, dataset: str, out: str | None = None) -> int:
    left: list[str] = []
    doc = export(project, dataset, left)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    validate(doc, "export")  # a bug here, not the user's: never write a contract that is not ODCS
    for line in left:
        console.error(f"contract export: not in the contract: {line}")
    if out is None:
        console.result(text, end="")
    else:
        writable.check(
            Path(out), "contract export --out asked for it", fix="give a file you can write"
        )
        with writable.writing(Path(out), "contract export --out asked for it"):
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(text, encoding="utf-8")
        console.result(
            f"contract export: wrote {out} (ODCS {ODCS_VERSION}, {doc['id']} {doc['version']})"
        )
    return 0


def _check(project: Project, file: str, layer: str = "silver", dataset: str | None = None) -> int:
    translation = _load(file, layer, dataset)
    lines = drift(project, translation)
    for line in lines:
        console.result(line)
    label = Path(file).name
    console.result(
        f"contract check: {len(lines)} difference(s) between {label} and the rule files"
        if lines
        else f"contract check: the rule files agree with {label}"
    )
    return 1 if lines else 0


_COMMANDS: dict[str, Callable[..., int]] = {"import": _import, "export": _export, "check": _check}
