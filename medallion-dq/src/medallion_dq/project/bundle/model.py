"""Read the Declarative Automation Bundle (databricks.yml + resources/*.yml) without a workspace.

`load_bundle` gives the local runner the same view of the project that Databricks gets on
`databricks bundle deploy`: which files make up each pipeline, their configuration, their
catalog and schema in a target, and the job's task order.

What is resolved here, offline:

* `include` globs (relative to the bundle root) and the target override (`targets.<name>`):
  mappings are merged key by key; lists of tasks, job parameters, environments and job clusters
  are merged by their key (`task_key`, `name`, ...); any other list is replaced;
* `${var.x}` (`--var`-style overrides first, then `BUNDLE_VAR_x` from the environment, then
  the target's value, then the variable's default), `${bundle.name}`, `${bundle.target}`,
  `${workspace.root_path}` / `file_path` / `artifact_path` / `state_path` when they do
  not depend on the (unknown) current user.

What stays as written: `${workspace.current_user...}`, `${resources...id}` (known only after a
deploy) and job value references (double-brace job references such as job.parameters.x).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import glob as _glob
import graphlib
import heapq
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from medallion_dq import user_yaml
from medallion_dq.gate import pack_argument
from medallion_dq.problems import MedallionDQError
from medallion_dq.project.bundle.references import REFERENCE as REFERENCE  # run_options' too
from medallion_dq.project.bundle.references import resolve
from medallion_dq.project.config import BUNDLE_FILE, load_toml

__all__ = [
    "Bundle",
    "BundleError",
    "JobResource",
    "PipelineResource",
    "Task",
    "load_bundle",
    "order_tasks",
    "task_kinds",
]

#: File types a pipeline ``libraries`` glob contributes (as Lakeflow does).
SOURCE_SUFFIXES = (".py", ".sql")

#: The pipeline ``libraries`` entries that select source files, with their path field (the other
#: kinds, ``jar`` and ``maven``, are not sources of the pipeline).
LIBRARY_PATH_FIELDS = {"glob": "include", "file": "path", "notebook": "path"}

#: The task type keys known without databricks-bundles (its 1.22.1 ``Task`` model), used only
#: when that package cannot be imported; see ``task_kinds``.
FALLBACK_TASK_KINDS = (
    "ai_runtime_task",
    "alert_task",
    "clean_rooms_notebook_task",
    "condition_task",
    "dashboard_task",
    "dbt_platform_task",
    "dbt_task",
    "for_each_task",
    "gen_ai_compute_task",
    "notebook_task",
    "pipeline_task",
    "power_bi_task",
    "python_operator_task",
    "python_wheel_task",
    "run_job_task",
    "spark_jar_task",
    "spark_python_task",
    "spark_submit_task",
    "sql_task",
)


@functools.cache
def task_kinds() -> tuple[str, ...]:
    """Keys of the task types a job task may carry (`pipeline_task`, `python_wheel_task`...).

    Read from databricks-bundles' own `Task` model (its fields named `*_task`), so that a task
    type added by a newer release is known here unchanged; `FALLBACK_TASK_KINDS` if the package
    cannot be imported. Imported on first use: it takes a few hundred milliseconds.
    """
    try:
        from databricks.bundles.jobs import Task as TaskModel
    except ImportError:
        return FALLBACK_TASK_KINDS
    kinds = tuple(f.name for f in dataclasses.fields(TaskModel) if f.name.endswith("_task"))
    return kinds or FALLBACK_TASK_KINDS


_PIPELINE_ID = re.compile(r"^\$\{resources\.pipelines\.([^.}]+)\.id\}$")

# Lists merged item by item (by this key) when a target overrides a resource.
_LIST_MERGE_KEYS = {
    "tasks": "task_key",
    "job_clusters": "job_cluster_key",
    "environments": "environment_key",
    "parameters": "name",
    "clusters": "label",
}


class BundleError(MedallionDQError):
    """The bundle cannot be read (missing file, invalid YAML, unknown target...); `fix`, when
    the message alone does not say it."""

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.fix = fix


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class PipelineResource:
    """One `resources.pipelines.<key>` entry, resolved for a target."""

    key: str
    name: str
    catalog: str | None
    schema: str | None
    root_path: Path | None
    #: ``libraries`` as written: glob patterns (or file / notebook paths), relative to source_file.
    libraries: list[str]
    #: Existing .py / .sql files those entries select: absolute, sorted, no duplicates.
    library_files: list[Path]
    configuration: dict[str, str]
    #: The YAML file that defines the pipeline.
    source_file: Path
    #: The whole resolved resource mapping, for anything not modelled above.
    spec: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Task:
    """One job task."""

    key: str
    #: The task type key: ``pipeline_task``, ``python_wheel_task``, ... (``None`` if none).
    kind: str | None
    #: For a ``pipeline_task`` on ``${resources.pipelines.<key>.id}``: that key.
    pipeline_key: str | None
    depends_on: list[str]
    #: ``ALL_SUCCESS`` (the default when not written), ``ALL_DONE``, ...
    run_if: str
    spec: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: For a quality gate task: the conventions pack its parameters name (`--pack acme`).
    gate_pack: str | None = None

    @property
    def is_gate(self) -> bool:
        """The task runs medallion-dq's quality gate (its `quality_gate` entry point)."""
        return self.spec.get("python_wheel_task", {}).get("entry_point") == "quality_gate"


@dataclass(frozen=True)
class JobResource:
    """One `resources.jobs.<key>` entry, resolved for a target."""

    key: str
    name: str
    tasks: list[Task]
    #: Job parameters: name -> default.
    parameters: dict[str, str]
    source_file: Path
    spec: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def task(self, key: str) -> Task:
        for task in self.tasks:
            if task.key == key:
                return task
        raise KeyError(key)

    def topological_order(self) -> list[Task]:
        """Tasks in an order that runs every task after the ones it depends on.

        Ties keep the order of the YAML file. Raises `BundleError` on a task key used twice, an
        unknown `depends_on` or a cycle (`validate_bundle` reports them with their location).
        """
        by_key = {task.key: task for task in self.tasks}
        if len(by_key) < len(self.tasks):
            keys = [task.key for task in self.tasks]
            twice = next(key for i, key in enumerate(keys) if key in keys[:i])
            raise BundleError(f"job {self.key!r}: task key {twice!r} is used twice")
        for task in self.tasks:
            for dep in task.depends_on:
                if dep not in by_key:
                    raise BundleError(
                        f"job {self.key!r}: task {task.key!r} depends on unknown task {dep!r}"
                    )
        try:
            order = order_tasks({task.key: task.depends_on for task in self.tasks})
        except graphlib.CycleError as exc:
            cycle = " -> ".join(exc.args[1])
            raise BundleError(
                f"job {self.key!r}: tasks depend on each other in a cycle: {cycle}"
            ) from None
        return [by_key[key] for key in order]

    def gates(self) -> Iterator[tuple[Task, set[str], set[str]]]:
        """Each quality gate task, with the keys of the pipelines it judges (those of the tasks
        it depends on) and of the pipelines run after it, directly or not."""
        tasks = self.topological_order()
        for gate in filter(lambda task: task.is_gate, tasks):
            after = {gate.key}
            for task in tasks:  # in run order: after a task that runs after the gate
                if after & set(task.depends_on):
                    after.add(task.key)
            judged = {self.task(key).pipeline_key for key in gate.depends_on}
            later = {task.pipeline_key for task in tasks if task.key in after - {gate.key}}
            yield gate, set(filter(None, judged)), set(filter(None, later))


def order_tasks(depends_on: Mapping[str, Sequence[str]]) -> list[str]:
    """The task keys of `depends_on` (task key -> the keys it depends on) in an order that puts
    every task after the ones it depends on, taking at each step the first ready task in the
    mapping's (file) order. Keys a task depends on that are not in the mapping are ignored.

    Raises `graphlib.CycleError` whose `args[1]` is the cycle in "depends on" order, starting
    (and ending) at its task that comes first in the mapping: `[a, c, b, a]` when a depends
    on c, c on b and b on a.
    """
    position = {key: i for i, key in enumerate(depends_on)}
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for key, deps in depends_on.items():
        sorter.add(key, *(d for d in deps if d in position))
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        # graphlib lists the cycle in run order (each task before the next), from any task.
        ring = list(reversed(exc.args[1][1:]))
        start = min(range(len(ring)), key=lambda i: position[ring[i]])
        ring = ring[start:] + ring[:start]
        raise graphlib.CycleError(exc.args[0], [*ring, ring[0]]) from None
    # static_order() would release the tasks level by level; taking one ready task at a time,
    # the first in file order, keeps the file's order wherever the dependencies allow it.
    ordered: list[str] = []
    ready: list[tuple[int, str]] = []
    while sorter.is_active():
        for key in sorter.get_ready():
            heapq.heappush(ready, (position[key], key))
        _, key = heapq.heappop(ready)
        ordered.append(key)
        sorter.done(key)
    return ordered


@dataclass(frozen=True)
class Bundle:
    name: str
    target: str
    #: ``development`` / ``production`` / ``None``.
    mode: str | None
    root: Path
    #: Resolved variable values (complex variables keep their list / mapping value).
    variables: dict[str, Any]
    pipelines: dict[str, PipelineResource]
    jobs: dict[str, JobResource]
    #: The YAML files read, databricks.yml first.
    files: list[Path] = field(default_factory=list, compare=False)

    def pipeline_keys(self, pipeline: str | None, job: str | None) -> list[str]:
        """The pipelines a run updates: `--pipeline`'s, or those of `--job`'s tasks."""
        if pipeline is not None:
            return [pipeline] if pipeline in self.pipelines else []
        if job is not None and job in self.jobs:
            keys = (t.pipeline_key for t in self.jobs[job].tasks)
            return list(dict.fromkeys(k for k in keys if k in self.pipelines))
        return list(self.pipelines) if job is None else []


# --------------------------------------------------------------------------- raw loading


def read_yaml(path: Path) -> Any:
    """A bundle file's YAML (`user_yaml.BoundedLoader`: no alias bomb), with errors turned into
    `BundleError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return user_yaml.load_yaml(text, strict=False)
    except RecursionError:
        raise BundleError(f"{path}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, user_yaml.YAMLTooLarge):
            raise BundleError(f"{path}: YAML refused{where}: {problem}", exc.fix) from None
        raise BundleError(
            f"{path}: invalid YAML{where}: {problem}", "fix the YAML syntax"
        ) from None


@dataclass
class RawBundle:
    """The bundle's files as parsed, before a target is applied."""

    root: Path
    #: (file, parsed document), databricks.yml first, then includes in glob order.
    documents: list[tuple[Path, Any]]
    #: Include patterns that matched no file.
    unmatched_includes: list[str]
    #: Merged top-level mapping (resources of all files together).
    config: dict[str, Any]
    #: (kind, key) -> files that define it (more than one is an error).
    resource_files: dict[tuple[str, str], list[Path]]


class ProjectFiles(Protocol):
    """The project's files as a command reads them, once (`medallion_dq.project.Project`)."""

    root: Path

    def raw_bundle(self) -> RawBundle: ...

    def pyproject(self) -> dict[str, Any]: ...


class FolderFiles:
    """A folder's files, read on each call: for a caller with a path and no `Project`."""

    def __init__(self, root: Path | str):
        self.root = Path(root).resolve()

    def raw_bundle(self) -> RawBundle:
        return load_raw(self.root)

    def pyproject(self) -> dict[str, Any]:
        return load_toml(self.root / "pyproject.toml")


def included_files(root: Path, patterns: list[Any]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    unmatched: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            continue
        matches = sorted(
            Path(p) for p in _glob.glob(str(root / pattern), recursive=True) if Path(p).is_file()
        )
        if not matches:
            unmatched.append(pattern)
        for match in matches:
            if match.resolve() not in {f.resolve() for f in files}:
                files.append(match)
    return files, unmatched


def load_raw(root: Path) -> RawBundle:
    root = Path(root).resolve()
    main = root / BUNDLE_FILE
    if not main.is_file():
        raise BundleError(f"{main}: not found (is {root} a bundle root?)")
    main_doc = read_yaml(main)
    if not isinstance(main_doc, dict):
        raise BundleError(f"{main}: the top level must be a mapping")
    includes = main_doc.get("include") or []
    if not isinstance(includes, list):
        includes = [includes]
    files, unmatched = included_files(root, includes)
    documents: list[tuple[Path, Any]] = [(main, main_doc)]
    for path in files:
        if path.resolve() == main.resolve():
            continue
        documents.append((path, read_yaml(path)))

    config: dict[str, Any] = {}
    resource_files: dict[tuple[str, str], list[Path]] = {}
    for path, doc in documents:
        if not isinstance(doc, dict):
            if doc is None:
                continue
            raise BundleError(f"{path}: the top level must be a mapping")
        for key, value in doc.items():
            if key == "resources" and isinstance(value, dict):
                resources = config.setdefault("resources", {})
                for kind, entries in value.items():
                    if not isinstance(entries, dict):
                        continue
                    bucket = resources.setdefault(kind, {})
                    for name, spec in entries.items():
                        resource_files.setdefault((kind, name), []).append(path)
                        bucket[name] = merge(bucket.get(name), spec)
            elif key in ("variables", "targets", "artifacts") and isinstance(value, dict):
                config[key] = merge(config.get(key), value)
            elif key == "include":
                continue
            else:
                config[key] = merge(config.get(key), value)
    return RawBundle(root, documents, unmatched, config, resource_files)


# --------------------------------------------------------------------------- merging


def merge(base: Any, override: Any) -> Any:
    """Deep merge as a target override does: mappings by key, keyed lists by item key."""
    if override is None:
        return copy.deepcopy(base)
    if isinstance(base, dict) and isinstance(override, dict):
        out = copy.deepcopy(base)
        for key, value in override.items():
            if (
                key in _LIST_MERGE_KEYS
                and isinstance(value, list)
                and isinstance(out.get(key), list)
            ):
                out[key] = _merge_keyed_list(out[key], value, _LIST_MERGE_KEYS[key])
            else:
                out[key] = merge(out.get(key), value)
        return out
    return copy.deepcopy(override)


def _merge_keyed_list(base: list[Any], override: list[Any], item_key: str) -> list[Any]:
    out = copy.deepcopy(base)
    index = {item.get(item_key): i for i, item in enumerate(out) if isinstance(item, dict)}
    for item in override:
        key = item.get(item_key) if isinstance(item, dict) else None
        if key is not None and key in index:
            out[index[key]] = merge(out[index[key]], item)
        else:
            out.append(copy.deepcopy(item))
    return out


def default_target(config: dict[str, Any]) -> str:
    targets = config.get("targets") or {}
    if not isinstance(targets, dict) or not targets:
        raise BundleError("databricks.yml defines no targets")
    defaults = [name for name, t in targets.items() if isinstance(t, dict) and t.get("default")]
    if len(defaults) == 1:
        return defaults[0]
    if len(targets) == 1:
        return next(iter(targets))
    raise BundleError(
        "no default target: mark one target with 'default: true' or pass target= "
        f"(targets: {', '.join(targets)})"
    )


def apply_target(config: dict[str, Any], target: str) -> dict[str, Any]:
    """The merged configuration of one target (`targets` removed)."""
    targets = config.get("targets") or {}
    if target not in targets:
        known = ", ".join(targets) or "none"
        raise BundleError(f"unknown target {target!r} (targets: {known})")
    override = targets[target] or {}
    effective = {k: copy.deepcopy(v) for k, v in config.items() if k != "targets"}
    for key, value in override.items():
        if key == "variables":
            continue  # values, not declarations: see variable_values
        if key == "default":
            continue
        effective[key] = merge(effective.get(key), value)
    effective.setdefault("bundle", {})
    effective["bundle"] = dict(effective["bundle"] or {})
    effective["bundle"]["target"] = target
    if override.get("mode") is not None:
        effective["bundle"]["mode"] = override.get("mode")
    return effective


def _is_declaration(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and set(value)
        <= {
            "default",
            "description",
            "type",
            "lookup",
        }
    )


def variable_values(
    config: dict[str, Any], target: str, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Variable values for a target: overrides > BUNDLE_VAR_x > target value > default.

    Variables with no value anywhere are left out (references to them stay unresolved).
    """
    declared = config.get("variables") or {}
    target_values = ((config.get("targets") or {}).get(target) or {}).get("variables") or {}
    overrides = overrides or {}
    values: dict[str, Any] = {}
    for name, decl in declared.items():
        decl = decl if isinstance(decl, dict) else {"default": decl}
        if name in overrides:
            values[name] = overrides[name]
        elif f"BUNDLE_VAR_{name}" in os.environ:
            values[name] = os.environ[f"BUNDLE_VAR_{name}"]
        elif name in target_values:
            value = target_values[name]
            values[name] = value.get("default") if _is_declaration(value) else value
        elif "default" in decl:
            values[name] = decl["default"]
    for name, value in overrides.items():
        values.setdefault(name, value)
    return values


# --------------------------------------------------------------------------- libraries


def library_entries(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, path) for each `libraries` entry: glob / file / notebook."""
    out: list[tuple[str, str]] = []
    for lib in spec.get("libraries") or []:
        if not isinstance(lib, dict):
            continue
        for kind, field_name in LIBRARY_PATH_FIELDS.items():
            entry = lib.get(kind)
            if isinstance(entry, dict) and isinstance(entry.get(field_name), str):
                out.append((kind, entry[field_name]))
                break
    return out


def _is_source(path: Path) -> bool:
    return (
        path.is_file()
        and path.suffix in SOURCE_SUFFIXES
        and not any(part == "__pycache__" or part.startswith(".") for part in path.parts[-4:])
    )


def expand_library(base: Path, kind: str, pattern: str) -> list[Path]:
    """Files an entry selects. Absolute workspace paths (`/Workspace/...`) select nothing."""
    if pattern.startswith("/") or REFERENCE.search(pattern):
        return []
    full = os.path.normpath(os.path.join(str(base), pattern))
    if kind != "glob" or not _glob.has_magic(full):
        path = Path(full)
        if path.is_dir():
            full = os.path.join(full, "**")
        else:
            return [path.resolve()] if path.is_file() else []
    return sorted(
        {Path(p).resolve() for p in _glob.glob(full, recursive=True) if _is_source(Path(p))}
    )


# --------------------------------------------------------------------------- public API


def _as_str_dict(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {
        str(k): ("true" if v is True else "false" if v is False else "" if v is None else str(v))
        for k, v in value.items()
    }


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def build_task(spec: dict[str, Any]) -> Task:
    kind = next((k for k in task_kinds() if spec.get(k) is not None), None)
    pipeline_key = None
    if kind == "pipeline_task" and isinstance(spec.get("pipeline_task"), dict):
        match = _PIPELINE_ID.match(str(spec["pipeline_task"].get("pipeline_id", "")))
        pipeline_key = match.group(1) if match else None
    depends_on = [
        str(d.get("task_key")) for d in spec.get("depends_on") or [] if isinstance(d, dict)
    ]
    wheel = spec.get("python_wheel_task")
    parameters = (wheel.get("parameters") or []) if isinstance(wheel, dict) else []
    return Task(
        key=str(spec.get("task_key")),
        kind=kind,
        pipeline_key=pipeline_key,
        depends_on=depends_on,
        run_if=str(spec.get("run_if") or "ALL_SUCCESS"),
        spec=spec,
        gate_pack=pack_argument(parameters),
    )


def load_bundle(
    root: Path | str,
    target: str | None = None,
    variables: dict[str, Any] | None = None,
) -> Bundle:
    """Parse databricks.yml + includes, apply `target` (default: the default target) and
    `variables` (like `--var`), and return the resolved pipelines and jobs.

    Raises `BundleError` with a one-line message when the bundle cannot be read; use
    `validate_bundle` for a full report. A command reads it through its `project.Project`.
    """
    return resolve_bundle(load_raw(Path(root)), target, variables)


def resolve_bundle(
    raw: RawBundle, target: str | None = None, variables: dict[str, Any] | None = None
) -> Bundle:
    """The bundle's files as read (`load_raw`), resolved for `target` and `variables`."""
    target = target or default_target(raw.config)
    effective = apply_target(raw.config, target)
    values = variable_values(raw.config, target, variables)
    config = resolve(effective, values)
    bundle_meta = config.get("bundle") or {}
    resources = config.get("resources") or {}

    def source_of(kind: str, key: str) -> Path:
        files = raw.resource_files.get((kind, key))
        return files[0] if files else raw.root / BUNDLE_FILE

    pipelines: dict[str, PipelineResource] = {}
    for key, spec in (resources.get("pipelines") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        source = source_of("pipelines", key)
        base = source.parent
        entries = library_entries(spec)
        files: list[Path] = []
        for kind, pattern in entries:
            for path in expand_library(base, kind, pattern):
                if path not in files:
                    files.append(path)
        root_path = spec.get("root_path")
        pipelines[key] = PipelineResource(
            key=key,
            name=str(spec.get("name") or key),
            catalog=_opt_str(spec.get("catalog")),
            schema=_opt_str(spec.get("schema") or spec.get("target")),
            root_path=(
                Path(os.path.normpath(base / root_path))
                if isinstance(root_path, str) and not root_path.startswith("/")
                else None
            ),
            libraries=[pattern for _, pattern in entries],
            library_files=files,
            configuration=_as_str_dict(spec.get("configuration")),
            source_file=source,
            spec=spec,
        )

    jobs: dict[str, JobResource] = {}
    for key, spec in (resources.get("jobs") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        tasks = [build_task(t) for t in spec.get("tasks") or [] if isinstance(t, dict)]
        parameters = {
            str(p.get("name")): _opt_str(p.get("default")) or ""
            for p in spec.get("parameters") or []
            if isinstance(p, dict)
        }
        jobs[key] = JobResource(
            key=key,
            name=str(spec.get("name") or key),
            tasks=tasks,
            parameters=parameters,
            source_file=source_of("jobs", key),
            spec=spec,
        )

    return Bundle(
        name=str(bundle_meta.get("name") or raw.root.name),
        target=target,
        mode=_opt_str(bundle_meta.get("mode")),
        root=raw.root,
        variables=config.get("variables") or {},
        pipelines=pipelines,
        jobs=jobs,
        files=[path for path, _ in raw.documents],
    )


def resource_docs(raw: RawBundle) -> Iterator[tuple[Path, str, str, Any, str]]:
    """(file, kind, key, spec, yaml path) for every resource mapping as written."""
    for file, doc in raw.documents:
        if not isinstance(doc, dict):
            continue
        resources = doc.get("resources")
        if isinstance(resources, dict):
            for kind, entries in resources.items():
                if isinstance(entries, dict):
                    for key, spec in entries.items():
                        yield file, kind, key, spec, f"resources.{kind}.{key}"
        targets = doc.get("targets")
        if isinstance(targets, dict):
            for tname, tdoc in targets.items():
                resources = (tdoc or {}).get("resources") if isinstance(tdoc, dict) else None
                if isinstance(resources, dict):
                    for kind, entries in resources.items():
                        if isinstance(entries, dict):
                            for key, spec in entries.items():
                                yield (
                                    file,
                                    kind,
                                    key,
                                    spec,
                                    (f"targets.{tname}.resources.{kind}.{key}"),
                                )
