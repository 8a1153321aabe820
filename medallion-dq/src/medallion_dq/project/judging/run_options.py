"""`medallion-dq run`'s options and pipeline code, checked before Spark starts (pure Python).

A user mistake should cost one line and exit 2, not a traceback after a 10-15 s Spark start.
`check_run_options(project, RunOptions(target=..., pipeline=..., landing=...), local)`
reads the project's manifest for the target and judges it with the options (`judge`); it
returns every problem it finds as a `Problem`, one line each, naming the option, the value
and the fix::

    RUN009 --landing fixtures/landing/orders: no orders/ folder in it (it holds data files
    itself); the sources read <landing>/orders/; fix: did you mean --landing fixtures/landing?

The caller prints them all and exits 2 when one has `severity == "error"` (`has_errors`);
warnings are printed and the run goes on. For an option, `Problem.file` is the option and its
value as typed (`--landing fixtures/landing/orders`); for a pipeline file it is
`<path relative to the project>:<line>` (`Problem.line` holds the line too); for the bundle
it is the YAML file (`Problem.path` the YAML path).

Codes:

======  ==========================================================================================
RUN001  `--target` names no target of databricks.yml (or none is given and none is the default)
RUN002  `--pipeline` names no pipeline of the bundle
RUN003  `--job` names no job of the bundle
RUN004  `--var` is not `NAME=VALUE`
RUN005  `--var` names a variable databricks.yml does not declare
RUN006  a pipeline's catalog or schema, variables applied, is empty or not a name (`bad-name`)
RUN007  a pipeline's catalog or schema still holds a reference with no value (`${var.schema}`)
RUN008  `--landing` (or the default fixtures/landing) does not exist or is not a folder
RUN009  `--landing` lacks a source folder the pipelines read (`<landing>/orders/`)
RUN010  warning: a source folder holds no file of the pipeline's format (the update reads nothing)
RUN011  `--json` / `--junit-xml` is a folder, or its folder cannot be created or written
RUN012  a pipeline .py file does not compile (syntax error; shown with its line and a caret)
RUN013  a pipeline .py file imports a module that is not installed
RUN014  the bundle cannot be read (databricks.yml or resources/*.yml)
RUN015  a pipeline .py file uses a name it never defines or imports (a misspelt name)
RUN016  `--landing` is not the folder the lasting lake was built from (its files would all be
        read again), or with `--new-delivery` it holds files the lake has read already
RUN017  a table of the lasting lake is damaged (local.delta_log: a commit or data file missing,
        cut or disagreeing with its checksum, a streaming checkpoint ahead of its table...)
RUN018  `--pipeline` runs after a job's quality gate and would publish rows that gate failed
        (`--ungated` publishes them all the same)
RUN019  a pipeline file uses a Lakeflow construct the local engine does not run:
        SQL `CREATE FLOW ... INSERT INTO ONCE`, `create_sink(..., "kafka")`,
        `@dp.foreach_batch_sink`
RUN020  a pipeline dataset's name starts with `__dq_`, the local engine's own tables' (hidden
        from every result, event and reader)
======  ==========================================================================================

Nothing here executes pipeline code: files are compiled and read with `ast` / `symtable`
only. What can only be seen by running them (a misused decorator, a Spark error) is reported by
`medallion_dq.local.loading` when the runner loads them.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medallion_dq.problems import Problem
from medallion_dq.project import Project
from medallion_dq.project.bundle.model import (
    REFERENCE,
    Bundle,
    BundleError,
    apply_target,
    default_target,
)
from medallion_dq.project.judging.engine import Engine
from medallion_dq.project.manifest import FORMAT_KEY, Manifest
from medallion_dq.text import word_name

__all__ = [
    "DEFAULT_LANDING",
    "check_gate",
    "check_json_path",
    "check_lake",
    "check_landing",
    "RunOptions",
    "check_run_options",
    "has_errors",
    "judge",
    "judge_run",
    "parse_variables",
    "read",
]

#: The landing folder `medallion-dq run` reads without --landing, relative to the project root.
DEFAULT_LANDING = Path("fixtures") / "landing"
#: File types taken for data when they sit directly in the landing folder.
DATA_SUFFIXES = {".json", ".jsonl", ".csv", ".parquet", ".avro", ".orc", ".txt", ".xml"}

_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")
_WHOLE_VAR = re.compile(r"^\$\{var\.([^.}\[]+)\}$")
_FIX_NAME = "use letters, digits and underscores only"


def has_errors(problems: Iterable[Problem]) -> bool:
    """True when a problem is an error (exit 2), not only a warning."""
    return any(p.severity == "error" for p in problems)


def _did_you_mean(value: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _unknown(code: str, where: str, message: str, value: str, choices, none: str) -> Problem:
    """A name the bundle does not have: the choices it has (or how to add one), and the
    nearest of them."""
    choices = list(choices)
    fix = f"use one of {', '.join(choices)}" if choices else none
    return Problem(code, where, message, fix + _did_you_mean(value, choices))


def _typed(path: Path, typed: str | Path | None, cwd: Path) -> str:
    """`path` as the user would type it: relative to `cwd` unless they typed an absolute one."""
    if typed is not None and Path(typed).expanduser().is_absolute():
        return str(path)
    relative = os.path.relpath(path, cwd)
    return relative if not relative.startswith(os.pardir * 3) else str(path)


# --------------------------------------------------------------------------- --var


def parse_variables(
    pairs: Sequence[str] | Mapping[str, str],
) -> tuple[dict[str, str], list[Problem]]:
    """`--var` values as typed (`["schema=x", ...]`) -> ({name: value}, RUN004 problems).

    A mapping is taken as already parsed. A value may hold `=` (split at the first one).
    """
    if isinstance(pairs, Mapping):
        return {str(k): str(v) for k, v in pairs.items()}, []
    values: dict[str, str] = {}
    problems = []
    for pair in pairs:
        name, sep, value = str(pair).partition("=")
        name = name.strip()
        if not sep or not name:
            problems.append(
                Problem(
                    "RUN004",
                    f"--var {pair}",
                    "not NAME=VALUE" if not sep else "no variable name before '='",
                    f"write --var NAME=VALUE, e.g. --var {name or 'schema'}=<value>",
                )
            )
            continue
        values[name] = value
    return values, problems


# --------------------------------------------------------------------------- --json


def check_json_path(
    json_path: str | Path | None,
    *,
    cwd: Path | None = None,
    option: str = "--json",
    example_name: str = "summary.json",
) -> list[Problem]:
    """RUN011 when the file an `option` names (the JSON summary, the JUnit XML) could not be
    written to `json_path` after the run."""
    if json_path is None or str(json_path) == "":
        return []
    cwd = Path(cwd or Path.cwd())
    example = f"{option} {Path(json_path) / example_name}"
    option = f"{option} {json_path}"
    path = cwd / Path(json_path).expanduser()
    if path.is_dir() or str(json_path).endswith(("/", os.sep)):
        return [Problem("RUN011", option, "is a folder, not a file", f"name the file: {example}")]
    if path.exists() and not os.access(path, os.W_OK):
        return [
            Problem("RUN011", option, "cannot be written (no permission)", "choose another path")
        ]
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return [
            Problem(
                "RUN011",
                option,
                f"{_typed(folder, json_path, cwd)} is a file, so no folder can be created there",
                "choose a path whose folders are folders",
            )
        ]
    if not os.access(folder, os.W_OK | os.X_OK):
        return [
            Problem(
                "RUN011",
                option,
                f"cannot write in {_typed(folder, json_path, cwd)} (no permission)",
                "choose a path in a folder you can write to",
            )
        ]
    return []


def _check_outputs(
    json_path: str | Path | None,
    junit_path: str | Path | None,
    cwd: Path,
    markdown_path: str | Path | None = None,
) -> list[Problem]:
    """RUN011 for the files --json, --junit-xml and --markdown name: each writable, no two one
    file."""
    named = {"--json": json_path, "--junit-xml": junit_path, "--markdown": markdown_path}
    examples = {"--json": "summary.json", "--junit-xml": "dq-results.xml", "--markdown": "dq.md"}
    problems = []
    for option, path in named.items():
        problems += check_json_path(path, cwd=cwd, option=option, example_name=examples[option])
    seen: dict[Path, str] = {}
    for option, path in named.items():
        if not path:
            continue
        where = (cwd / path).resolve()
        if where in seen:
            problems.append(
                Problem(
                    "RUN011",
                    f"{option} {path}",
                    f"is the file {seen[where]} names too: one would overwrite the other",
                    "name two files, e.g. --json .local/summary.json"
                    " --junit-xml .local/test-results/data-quality.xml",
                )
            )
        seen.setdefault(where, f"{option} {path}")
    return problems


# --------------------------------------------------------------------------- landing


def _holds_all(folder: Path, sources: Iterable[str]) -> bool:
    return folder.is_dir() and all((folder / s).is_dir() for s in sources)


def _landing_guesses(path: Path, sources: list[str]) -> list[Path]:
    """Folders near `path` that hold every source folder: the nearest of two levels up, or
    its sub-folders that do (one named like the default landing folder first)."""
    if not sources:
        return []
    for parent in list(path.parents)[:2]:
        if _holds_all(parent, sources):
            return [parent]
    if not path.is_dir():
        return []
    try:
        children = [c for c in path.iterdir() if c.is_dir() and _holds_all(c, sources)]
    except OSError:
        return []
    return sorted(children, key=lambda c: (c.name != DEFAULT_LANDING.name, c.name))


def check_landing(
    landing: str | Path | None,
    sources: Iterable[str],
    *,
    root: Path,
    formats: Mapping[str, Iterable[str]] | None = None,
    cwd: Path | None = None,
) -> list[Problem]:
    """RUN008 / RUN009 / RUN010 for the landing folder the run will read.

    `landing`: `--landing` as typed (relative to `cwd`, as the CLI resolves it), or None
    for the default, `<root>/fixtures/landing`. `sources`: the sub-folders the pipelines read
    (a manifest's `PipelineCode.landing_folders`); `formats`: source -> file formats
    expected in it (`json`...).
    With no sources and no `--landing`, nothing is checked (no pipeline reads the landing).
    """
    cwd = Path(cwd or Path.cwd())
    sources = sorted(set(sources))
    if landing is None or str(landing) == "":
        if not sources:
            return []
        path = Path(root) / DEFAULT_LANDING
        option = f"--landing (not given: the default {DEFAULT_LANDING.as_posix()})"
    else:
        path = cwd / Path(landing).expanduser()
        option = f"--landing {landing}"
    path = Path(os.path.normpath(path))
    reads = ", ".join(f"<landing>/{s}/" for s in sources)
    guesses = [_typed(g, landing, cwd) for g in _landing_guesses(path, sources)]
    did_you_mean = f"did you mean --landing {' or '.join(guesses[:2])}?" if guesses else ""
    needs = f"a folder holding {', '.join(s + '/' for s in sources)}" if sources else "a folder"

    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "no such folder"
        return [
            Problem(
                "RUN008",
                option,
                what + (f"; the sources read {reads}" if sources else ""),
                did_you_mean or f"pass --landing with {needs}",
            )
        ]
    missing = [s for s in sources if not (path / s).is_dir()]
    if missing:
        try:
            data = sorted(
                f.name for f in path.iterdir() if f.is_file() and f.suffix.lower() in DATA_SUFFIXES
            )
        except OSError:
            data = []
        folders = ", ".join(f"{s}/" for s in missing)
        message = f"no {folders} folder in it"
        if data:
            message += " (it holds data files itself)"
        message += f"; the sources read {reads}"
        if did_you_mean:
            fix = did_you_mean
        elif data:
            shown = _typed(path, landing, cwd) if landing else DEFAULT_LANDING.as_posix()
            fix = f"move the files into {shown}/{missing[0]}/, or pass the folder that holds it"
        else:
            fix = f"create {folders} there with the source files, or pass --landing with {needs}"
        return [Problem("RUN009", option, message, fix)]

    problems = []
    for source in sources:
        wanted = sorted(set((formats or {}).get(source, ())))
        if not wanted:
            continue
        folder = path / source
        if any(next(folder.rglob(f"*.{fmt}"), None) is not None for fmt in wanted):
            continue
        kinds = " or ".join(f"*.{fmt}" for fmt in wanted)
        problems.append(
            Problem(
                "RUN010",
                option,
                f"{source}/ holds no {kinds} file ({FORMAT_KEY} = {', '.join(wanted)}):"
                " the update will read no rows from it",
                f"put the source's {kinds} files in {source}/, or set {FORMAT_KEY} in the"
                " pipeline's configuration",
                severity="warning",
            )
        )
    return problems


def _shown(root: Path, path: Path) -> str:
    """A folder of the lake or its landing as a message names it: relative to the project
    `root` when it is in it (the lake's landings are kept resolved)."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def _same_file(a: Path, b: Path) -> bool:
    import filecmp

    try:
        return a.stat().st_size == b.stat().st_size and filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def check_lake(
    lake: Path,
    landing: Path,
    option: str,
    sources: Iterable[str],
    *,
    root: Path,
    new_delivery: bool = False,
    full_refresh: bool = False,
    rebuilt: Iterable[str] = (),
    writers: Mapping[str, str] | None = None,
    engine: Engine,
) -> list[Problem]:
    """RUN016 / RUN017 for the lasting lake the run will update (`lake`: its folder).

    RUN016: the lake's streaming tables know the files they read by path (as Auto Loader does),
    so the same files in another folder would all be read again. A `landing` (resolved) other
    than the one the lake was built from is refused, unless `full_refresh` (every file is read
    again, once) or `new_delivery`: the folder is a new delivery of the same source, every file
    in it is read, so it must hold only files not read yet; a file there with the name and bytes
    of one under an earlier landing folder would be read twice, and is refused.
    RUN017: a damaged table (the engine's `damage`), but those named in `rebuilt`: a `--full-refresh`
    rebuilds the tables of the run's pipelines (the CLI removes them first). `writers`: table
    name -> the bundle pipeline that writes it, named in the fix. `engine`: reads the lake."""

    problems = []
    where = _shown(root, lake)
    for table, why in engine.LakeFolder(lake).damaged().items():
        name = table.split(".")[-1]
        if name in set(rebuilt):
            continue
        writer = (writers or {}).get(name, "<the one writing it>")
        problems.append(
            Problem(
                "RUN017",
                f"table {table}",
                f"damaged: {why}",
                f"--full-refresh --pipeline {writer} rebuilds it, --fresh runs in a new lake, "
                f"`medallion-dq lake check` lists every damaged table of {where}",
            )
        )
    built_from = engine.LakeFolder(lake).landings()
    if not list(sources) or not built_from or full_refresh:
        return problems
    landing = landing.resolve()
    if landing == built_from[-1]:
        return problems
    if not new_delivery:
        message = (
            f"the lake {where} was built from {_shown(root, built_from[-1])}, and it knows files by "
            "their path: every file of this folder would be read again"
        )
        fix = (
            "--fresh for a new lake, --full-refresh to read this folder from scratch, or "
            "--new-delivery if it holds only files the lake has not read"
        )
        return [*problems, Problem("RUN016", option, message, fix)]
    copies = [
        (path.relative_to(landing), earlier)
        for source in sorted(sources)
        for path in sorted((landing / source).rglob("*"))
        if path.is_file()
        for earlier in built_from
        if _same_file(path, earlier / path.relative_to(landing))
    ]
    if copies:
        copied, earlier = copies[0]
        message = (
            f"{len(copies)} file(s) here were read already from {_shown(root, earlier)} (same name and "
            f"bytes, e.g. {copied.as_posix()}): a new delivery is read whole, they would be read twice"
        )
        fix = "leave only the new files in the folder, or --full-refresh to read it from scratch"
        problems.append(Problem("RUN016", f"{option} --new-delivery", message, fix))
    return problems


def check_gate(
    bundle: Bundle,
    lake: Path,
    pipeline: str,
    *,
    ungated: bool,
    engine: Engine,
    root: Path | None = None,
) -> list[Problem]:
    """RUN018: `--pipeline` runs after a job's quality gate (a publish) while the lasting lake
    `lake` holds rows the last such gate failed, unless `ungated`: on Databricks that job
    skipped its publish, so one run by hand is refused unless asked for. `root`: the project,
    to name the landing folder the lake reads (relative to it); `engine`: reads the lake."""
    problems = []
    for job in [] if ungated else bundle.jobs.values():
        try:
            gates = list(job.gates())
        except BundleError:  # tasks that cannot be ordered: the bundle's checks say why
            continue
        for judged in (judged for _, judged, after in gates if pipeline in after):
            for resource in filter(None, map(bundle.pipelines.get, sorted(judged))):
                unjudged = engine.LakeFolder(lake).unjudged(resource.name, resource.schema)
                if not (rejected := unjudged.rejected()):
                    continue
                failed = rejected.get("updates") or unjudged.updates()
                later = [u for u in unjudged.updates() if u not in failed]
                message = (
                    f"would publish the rows of {resource.key} update(s) {', '.join(failed)}, "
                    f"which {unjudged.in_words(rejected)}"
                    + (f", and of {', '.join(later)}, which no gate has judged" if later else "")
                )
                built_from = engine.LakeFolder(lake).landings()
                landing = ""
                if built_from and root is not None and built_from[-1] != root / DEFAULT_LANDING:
                    landing = f" --landing {_shown(root, built_from[-1])}"
                fix = (
                    f"`medallion-dq run --job {rejected['job']}{landing}` judges them again with "
                    "the next delivery; --ungated publishes them as they are"
                )
                problems.append(Problem("RUN018", f"--pipeline {pipeline}", message, fix))
    return problems


# --------------------------------------------------------------------------- catalog / schema


def _valid_name(value: str) -> bool:
    return bool(_VALID_NAME.fullmatch(value)) and not value.isdigit()


def _variable_origin(manifest: Manifest, name: str) -> tuple[str, str, str]:
    """(file, yaml path, how to set it) of the value variable `name` got."""
    variable = manifest.variables.get(name)
    origin = variable.origin if variable else "default"
    if origin == "--var":
        return f"--var {name}={variable.value if variable else ''}", "", f"--var {name}="
    if origin.startswith("BUNDLE_VAR_"):
        return f"{origin}={os.environ.get(origin, '')}", "", f"{origin}="
    if origin.startswith("target "):
        return "databricks.yml", f"targets.{manifest.target}.variables.{name}", f"{name}: "
    return "databricks.yml", f"variables.{name}.default", "default: "


def _check_names(manifest: Manifest, keys: list[str]) -> list[Problem]:
    """RUN006 / RUN007 for the catalog and schema of the pipelines `keys`; one problem per
    value and where it comes from, naming every pipeline it is the catalog or schema of."""
    bundle = manifest.bundle
    target = bundle.target
    effective = apply_target(dict(manifest.written), target)
    raw_pipelines = (effective.get("resources") or {}).get("pipelines") or {}
    # (code, file, yaml path, value) -> (field, fix, pipelines)
    found: dict[tuple[str, str, str, str], tuple[str, str, list[str]]] = {}
    for key in keys:
        pipeline = bundle.pipelines[key]
        raw_spec = raw_pipelines.get(key) or {}
        for field in ("catalog", "schema"):
            written = raw_spec.get(field)
            if field == "schema" and written is None:
                written = raw_spec.get("target")
            if written is None:
                continue
            value = getattr(pipeline, field) or ""
            if "${" in value:
                variables = [
                    m.group(1)[4:]
                    for m in REFERENCE.finditer(value)
                    if m.group(1).startswith("var.")
                ]
                if variables:
                    fix = (
                        f"give variable {variables[0]} a value in targets.{target}.variables of"
                        f" databricks.yml, or pass --var {variables[0]}=<name>"
                    )
                else:
                    fix = f"write the {field} itself, or a ${{var.<name>}} that has a value"
                where = (
                    "RUN007",
                    manifest.where[pipeline.source_file],
                    f"resources.pipelines.{key}.{field}",
                    value,
                )
            elif not _valid_name(value):
                var = _WHOLE_VAR.match(str(written))
                if var:
                    file, path, how = _variable_origin(manifest, var.group(1))
                else:
                    file = manifest.where[pipeline.source_file]
                    path, how = f"resources.pipelines.{key}.{field}", f"{field}: "
                suggestion = word_name(value)
                example = f", e.g. {how}{suggestion}" if _valid_name(suggestion) else ""
                fix = f"{_FIX_NAME}{example}"
                where = ("RUN006", file, path, value)
            else:
                continue
            found.setdefault(where, (field, fix, []))[2].append(key)
    problems = []
    for (code, file, path, value), (field, fix, pipelines) in found.items():
        names = ", ".join(dict.fromkeys(pipelines))
        of = f"pipeline{'s' if len(set(pipelines)) > 1 else ''} {names}"
        if code == "RUN007":
            message = f"{field} {value} has no value in target {target} ({of})"
        elif not value:
            message = f"the {field} is empty ({of})"
        else:
            message = f"{value!r} is not a valid {field} name (the {field} of {of})"
        problems.append(Problem(code, file, message, fix, path=path))
    return problems


# --------------------------------------------------------------------------- the whole check


@dataclass(frozen=True)
class RunOptions:
    """The options of a `medallion-dq run` as the user typed them:

    * `target`: `--target` (None: the bundle's default target);
    * `variables`: `--var` as typed, `["schema=x", ...]` (or an already parsed mapping);
    * `pipeline` / `job`: `--pipeline` / `--job` (both None: every pipeline of the
      bundle is checked);
    * `landing`: `--landing` as typed, relative to `cwd` (None: the default
      `<root>/fixtures/landing`, checked only when a chosen pipeline reads the landing);
    * `json_path` / `junit_path` / `markdown_path`: `--json` / `--junit-xml` /
      `--markdown` as typed, relative to `cwd`;
    * `source_folders`: the landing sub-folders the pipelines read; None: those their files
      read (the manifest's);
    * `check_code`: also compile the chosen pipelines' .py files and check their imports
      (RUN012, RUN013);
    * `cwd`: the folder relative paths are read from (default: the current folder);
    * `lakes`: the folder of the lasting lakes, one per target (None: a new lake, `--fresh`):
      the target's lake is checked (`check_lake`) with `--new-delivery` / `--full-refresh`,
      and a `pipeline` run after a job's gate (`check_gate`) with `--ungated`.
    """

    target: str | None = None
    variables: Sequence[str] | Mapping[str, str] = ()
    pipeline: str | None = None
    job: str | None = None
    landing: str | Path | None = None
    json_path: str | Path | None = None
    junit_path: str | Path | None = None
    markdown_path: str | Path | None = None
    source_folders: Iterable[str] | None = None
    check_code: bool = True
    cwd: Path | None = None
    lakes: Path | None = None
    new_delivery: bool = False
    full_refresh: bool = False
    ungated: bool = False


def check_run_options(
    project: Project | Path | str, options: RunOptions, engine: Engine
) -> list[Problem]:
    """Every problem of a `medallion-dq run` before Spark starts; `[]` when it can start.

    The bundle is read for the options' target and variables (RUN001, RUN005, RUN014 when it
    cannot be), then the project's manifest is judged with the options (`judge`; `engine`: the
    local engine's face, which reads the pipeline code and the lake). Returns problems in
    option order; exit 2 when `has_errors(problems)`. Never raises for a user mistake. Reads
    files only: no Spark, no pipeline code is executed.
    """
    return read(Project.of(project), options, engine)[1]


def judge_run(
    project: Project, options: RunOptions, engine: Engine
) -> tuple[Manifest | None, list[Problem]]:
    """Everything that can be checked before a run's Spark starts: its options (`read`), then,
    when they hold, the project's static checks (`check`'s: the bundle, the conventions).
    Returns the project as read for the run's target and variables (the one manifest the run
    works from; None when the bundle cannot be read for them) and the problems."""
    from medallion_dq.project.bundle import validate_bundle
    from medallion_dq.project.judging import conventions

    manifest, problems = read(project, options, engine)
    if manifest is not None and not has_errors(problems):
        problems += [*validate_bundle(project), *conventions.check(manifest)]
    return manifest, problems


def read(
    project: Project, options: RunOptions, engine: Engine
) -> tuple[Manifest | None, list[Problem]]:
    """The project's manifest for the options' target and variables (None when the bundle
    cannot be read for them), and every problem of the run (`check_run_options`)."""
    cwd = Path(options.cwd or Path.cwd())
    overrides, problems = parse_variables(options.variables)
    outputs = _check_outputs(options.json_path, options.junit_path, cwd, options.markdown_path)
    try:
        raw = project.raw_bundle()
    except BundleError as error:
        return None, [*problems, _unreadable(error), *outputs]
    target, target_problem = _target(raw.config, options.target)
    if target_problem:
        return None, [target_problem, *problems, *outputs]
    problems += _undeclared_variables(raw.config, overrides)
    try:
        manifest = project.manifest(target, overrides)
    except BundleError as error:
        return None, [*problems, _unreadable(error), *outputs]
    return manifest, [*problems, *judge(manifest, options, cwd, engine), *outputs]


def judge(manifest: Manifest, options: RunOptions, cwd: Path, engine: Engine) -> list[Problem]:
    """The problems of running `options` on the project `manifest` (read for their target and
    variables): the pipelines chosen, their catalog and schema, code, landing and lake (the
    code and the lake as the local engine, `engine`, reads them)."""
    bundle, root, problems = manifest.bundle, manifest.root, []
    keys, choice_problem = _chosen_pipelines(bundle, options.pipeline, options.job)
    if choice_problem:
        problems.append(choice_problem)
    if keys is None:
        if options.landing is not None:
            problems += check_landing(options.landing, [], root=root, cwd=cwd)
        return problems
    problems += _check_names(manifest, keys)
    code = manifest.code(keys)
    if options.check_code:
        search = [path for k in keys if (path := bundle.pipelines[k].root_path)]
        files = [f.path for f in code.files]
        read = manifest.project.pipeline_file  # the files as the manifest read them
        problems += engine.check_pipeline_code(files, root, search_paths=search, read=read)
    given = options.source_folders
    formats = {} if given is not None else _source_formats(manifest, keys)
    sources = list(formats) if given is None else list(given)
    problems += check_landing(options.landing, sources, root=root, formats=formats, cwd=cwd)
    lake = Path(options.lakes) / manifest.target if options.lakes is not None else None
    if lake is not None and lake.is_dir() and not has_errors(problems):
        landing = options.landing
        path = cwd / Path(landing).expanduser() if landing else root / DEFAULT_LANDING
        problems += check_lake(
            lake,
            path,
            f"--landing {landing}" if landing else "--landing (not given)",
            sources,
            root=root,
            new_delivery=options.new_delivery,
            full_refresh=options.full_refresh,
            rebuilt=code.names() if options.full_refresh else (),
            writers=manifest.writers(),
            engine=engine,
        )
        if options.pipeline in bundle.pipelines:
            problems += check_gate(
                bundle, lake, options.pipeline, ungated=options.ungated, engine=engine, root=root
            )
    return problems


def _unreadable(error: BundleError) -> Problem:
    return Problem("RUN014", "databricks.yml", str(error), "fix it, then run medallion-dq check")


def _target(config: dict[str, Any], target: str | None) -> tuple[str, Problem | None]:
    """`--target`, or the bundle's default target; RUN001 when there is none such."""
    targets = list(config.get("targets") or {}) if isinstance(config.get("targets"), dict) else []
    if target is None:
        try:
            return default_target(config), None
        except BundleError as error:
            fix = f"pass --target, one of {', '.join(targets)}" if targets else None
            fix = fix or "add a target to databricks.yml"
            return "", Problem("RUN001", "--target (not given)", str(error), fix)
    if target not in targets:
        where, message = f"--target {target}", "no such target in databricks.yml"
        return target, _unknown("RUN001", where, message, target, targets, "add it under targets:")
    return target, None


def _undeclared_variables(config: dict[str, Any], overrides: Mapping[str, str]) -> list[Problem]:
    """RUN005 for each `--var` databricks.yml does not declare."""
    declared = config.get("variables") or {}
    declared = declared if isinstance(declared, dict) else {}
    return [
        _unknown(
            "RUN005",
            f"--var {name}={value}",
            f"databricks.yml declares no variable {name!r}",
            name,
            declared,
            "declare it under variables:",
        )
        for name, value in overrides.items()
        if name not in declared
    ]


def _chosen_pipelines(
    bundle: Bundle, pipeline: str | None, job: str | None
) -> tuple[list[str] | None, Problem | None]:
    """The pipelines the run updates (`pipeline_keys`); None and RUN002 / RUN003 when
    `--pipeline` / `--job` names none of the bundle's."""
    if pipeline is not None and pipeline not in bundle.pipelines:
        where, message = f"--pipeline {pipeline}", "no such pipeline in the bundle"
        message += " (resources/*.pipeline.yml)"
        fix = "define one in resources/"
        return None, _unknown("RUN002", where, message, pipeline, bundle.pipelines, fix)
    if pipeline is None and job is not None and job not in bundle.jobs:
        where, message = f"--job {job}", "no such job in the bundle (resources/*.job.yml)"
        fix = "define one in resources/"
        return None, _unknown("RUN003", where, message, job, bundle.jobs, fix)
    return bundle.pipeline_keys(pipeline, job), None


def _source_formats(manifest: Manifest, keys: list[str]) -> dict[str, set[str]]:
    """The landing sub-folders the pipelines `keys` read -> their file formats."""
    found: dict[str, set[str]] = {}
    for key in keys:
        for folder, fmt in manifest.pipelines[key].source_formats().items():
            found.setdefault(folder, set()).add(fmt)
    return found
