"""Offline checks of the bundle, run by `medallion-dq check`.

`databricks bundle validate` needs a workspace login; these checks do not. They catch, with the
file and YAML path of the mistake:

======  ====================================================================================
BND000  the validator itself failed (please report it; the message says where)
BND001  a file cannot be read or is not valid YAML, or its top level is not a mapping
BND002  schema: unknown field, wrong type or value (Databricks' own resource models); also
        once, when those models (the databricks-bundles package) cannot be imported
BND003  quality gate order: publish must depend on the gate, the gate on the validation run
BND004  a `${resources...}` or other reference names something that does not exist
BND005  a `${var.x}` is not declared, or a variable has no value in a target
BND006  a pipeline `libraries` entry or `root_path` matches no file
BND007  a task `depends_on` names an unknown task, or two tasks share a key
BND008  the job's tasks depend on each other in a cycle
BND009  a pipeline's catalog or schema does not resolve in a target, or is a name Unity
        Catalog refuses (a period, space, slash or control character; over 255 characters)
BND010  a secret-looking literal (token, password...) is written in the YAML
BND011  bundle structure: name, include globs, targets, duplicate resources
BND012  a python_wheel_task's package or entry point is not declared
======  ====================================================================================
"""

from __future__ import annotations

import difflib
import graphlib
import re
from pathlib import Path
from typing import Any

from medallion_dq.problems import Problem
from medallion_dq.project.bundle.model import (
    LIBRARY_PATH_FIELDS,
    BundleError,
    FolderFiles,
    ProjectFiles,
    RawBundle,
    Task,
    apply_target,
    build_task,
    expand_library,
    library_entries,
    order_tasks,
    resource_docs,
    variable_values,
)
from medallion_dq.project.bundle.references import (
    REFERENCE,
    iter_references,
    iter_strings,
    resolve,
)
from medallion_dq.project.bundle.report import Report
from medallion_dq.project.bundle.schema import check_schemas
from medallion_dq.project.config import BUNDLE_FILE
from medallion_dq.text import word_name

__all__ = ["Problem", "validate_bundle"]

GATE_TASK = "quality_gate"

_TOP_LEVEL_KEYS = {
    "bundle",
    "include",
    "variables",
    "targets",
    "resources",
    "artifacts",
    "workspace",
    "sync",
    "permissions",
    "run_as",
    "presets",
    "experimental",
    "scripts",
    "python",
    "environments",
    "git",
}
_REFERENCE_ROOTS = {"var", "variables", "bundle", "workspace", "resources", "artifacts"}
_SECRET_KEY = re.compile(
    r"(?:^|[_.\-])(password|passwd|pwd|token|secret|api_?key|access_?key|private_?key|"
    r"client_?secret|credentials?)$",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"dapi[0-9a-f]{32}|dose[0-9a-f]{32}|ghp_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
_SECRET_REF_PREFIX = "{" * 2 + "secrets/"  # Databricks secret reference in a Spark conf value


# --------------------------------------------------------------------------- helpers


def _ref(path: str) -> str:
    """`${path}`."""
    return "${" + path + "}"


def _dep(task_key: str) -> str:
    return "[{task_key: " + task_key + "}]"


# --------------------------------------------------------------------------- checks


def _check_structure(report: Report, raw: RawBundle) -> None:
    main_file, main_doc = raw.documents[0]
    bundle = main_doc.get("bundle")
    if not isinstance(bundle, dict) or not bundle.get("name"):
        report.add(
            "BND011",
            main_file,
            "bundle.name",
            "the bundle has no name",
            "add bundle: {name: <project>}",
        )
    for pattern in raw.unmatched_includes:
        report.add(
            "BND011",
            main_file,
            "include",
            f"include pattern {pattern!r} matches no file",
            "fix the pattern or remove it",
        )
    targets = raw.config.get("targets")
    if not isinstance(targets, dict) or not targets:
        report.add(
            "BND011",
            main_file,
            "targets",
            "no targets defined",
            "add targets dev (mode: development, default: true) and prod",
        )
    else:
        defaults = [t for t, v in targets.items() if isinstance(v, dict) and v.get("default")]
        if len(defaults) > 1:
            report.add(
                "BND011",
                main_file,
                "targets",
                f"more than one default target: {', '.join(defaults)}",
                "keep default: true on one target only",
            )
    for (kind, key), files in raw.resource_files.items():
        if len(files) > 1:
            names = ", ".join(report.rel(f) for f in files)
            report.add(
                "BND011",
                files[1],
                f"resources.{kind}.{key}",
                f"{kind[:-1] if kind.endswith('s') else kind} {key!r} is defined in several "
                f"files ({names})",
                "define each resource in one file",
            )
    for file, doc in raw.documents:
        if not isinstance(doc, dict):
            continue
        for key in doc:
            if key not in _TOP_LEVEL_KEYS:
                close = difflib.get_close_matches(str(key), sorted(_TOP_LEVEL_KEYS), n=1)
                report.add(
                    "BND002",
                    file,
                    str(key),
                    f"unknown top-level key {key!r}",
                    f"rename it to {close[0]!r}" if close else "remove it",
                )


def _check_references(report: Report, raw: RawBundle) -> None:
    declared = raw.config.get("variables") or {}
    resources: dict[str, set[str]] = {}
    for _file, kind, key, _spec, _path in resource_docs(raw):
        resources.setdefault(kind, set()).add(key)
    for file, doc in raw.documents:
        for path, ref in iter_references(doc):
            parts = re.findall(r"[^.\[\]]+", ref)
            root = parts[0]
            if root not in _REFERENCE_ROOTS:
                close = difflib.get_close_matches(root, sorted(_REFERENCE_ROOTS), n=1)
                report.add(
                    "BND004",
                    file,
                    path,
                    f"{_ref(ref)}: unknown reference root {root!r}",
                    f"did you mean {_ref(close[0] + '.…')}?"
                    if close
                    else "use ${var.…}, ${bundle.…}, ${workspace.…} or ${resources.…}",
                )
                continue
            if root in ("var", "variables"):
                name = parts[1] if len(parts) > 1 else ""
                if name not in declared:
                    close = difflib.get_close_matches(name, list(declared), n=1)
                    report.add(
                        "BND005",
                        file,
                        path,
                        f"{_ref(ref)}: variable {name!r} is not declared",
                        f"use {_ref('var.' + close[0])}"
                        if close
                        else f"declare it under variables: in {BUNDLE_FILE}",
                    )
            elif root == "resources":
                if len(parts) < 3:
                    report.add(
                        "BND004",
                        file,
                        path,
                        f"{_ref(ref)}: incomplete resource reference",
                        "use ${resources.<kind>.<key>.<field>}, e.g. "
                        "${resources.pipelines.validation.id}",
                    )
                    continue
                kind, key = parts[1], parts[2]
                known = resources.get(kind)
                if known is None:
                    close = difflib.get_close_matches(kind, sorted(resources), n=1)
                    report.add(
                        "BND004",
                        file,
                        path,
                        f"{_ref(ref)}: no resources of kind {kind!r}",
                        f"did you mean resources.{close[0]}?"
                        if close
                        else "define the resource or fix the reference",
                    )
                elif key not in known:
                    close = difflib.get_close_matches(key, sorted(known), n=1)
                    suggestion = ".".join(["resources", kind, close[0], *(parts[3:] or ["id"])])
                    hint = (
                        f"use {_ref(suggestion)}"
                        if close
                        else f"known {kind}: {', '.join(sorted(known))}"
                    )
                    report.add(
                        "BND004",
                        file,
                        path,
                        f"{_ref(ref)}: there is no {kind[:-1] if kind.endswith('s') else kind} "
                        f"{key!r}",
                        hint,
                    )


def _check_variables(report: Report, raw: RawBundle) -> None:
    main_file = raw.documents[0][0]
    declared = raw.config.get("variables") or {}
    targets = raw.config.get("targets") or {}
    if not isinstance(targets, dict):
        return
    for tname, tdoc in targets.items():
        tvalues = (tdoc or {}).get("variables") if isinstance(tdoc, dict) else None
        tvalues = tvalues if isinstance(tvalues, dict) else {}
        for name in tvalues:
            if name not in declared:
                report.add(
                    "BND005",
                    main_file,
                    f"targets.{tname}.variables.{name}",
                    f"variable {name!r} is set but not declared",
                    f"declare it under variables: in {BUNDLE_FILE}",
                )
        for name, decl in declared.items():
            has_default = isinstance(decl, dict) and ("default" in decl or "lookup" in decl)
            if not isinstance(decl, dict):
                has_default = True
            if not has_default and name not in tvalues:
                report.add(
                    "BND005",
                    main_file,
                    f"targets.{tname}.variables",
                    f"variable {name!r} has no value in target {tname!r} and no default",
                    f"add {name}: <value> under targets.{tname}.variables",
                )


def _check_libraries(report: Report, raw: RawBundle) -> None:
    for file, kind, _key, spec, path in resource_docs(raw):
        if kind != "pipelines" or not isinstance(spec, dict):
            continue
        base = file.parent
        libs = spec.get("libraries")
        if isinstance(libs, list):
            for i, lib in enumerate(libs):
                entries = library_entries({"libraries": [lib]})
                for lkind, pattern in entries:
                    if pattern.startswith("/") or REFERENCE.search(pattern):
                        continue  # a workspace path: only checkable on Databricks
                    if not expand_library(base, lkind, pattern):
                        field = f"{lkind}.{LIBRARY_PATH_FIELDS[lkind]}"
                        what = (
                            "matches no .py or .sql file" if lkind == "glob" else "does not exist"
                        )
                        report.add(
                            "BND006",
                            file,
                            f"{path}.libraries[{i}].{field}",
                            f"{pattern!r} {what} (paths are relative to {report.rel(file)})",
                            "point it at the pipeline's source folder, e.g. "
                            "../src/pipelines/<pipeline>/<layer>/**",
                        )
        root_path = spec.get("root_path")
        if (
            isinstance(root_path, str)
            and not root_path.startswith("/")
            and not REFERENCE.search(root_path)
            and not (base / root_path).is_dir()
        ):
            report.add(
                "BND006",
                file,
                f"{path}.root_path",
                f"root_path {root_path!r} is not a folder "
                f"(paths are relative to {report.rel(file)})",
                "point it at the pipeline's source folder",
            )


def _is_gate(task: dict[str, Any]) -> bool:
    """A task is the quality gate when "gate" is in its key or in the name of the code it runs
    (these fields name that code; the other task types cannot run it)."""
    texts = [str(task.get("task_key", ""))]
    for kind, field in (
        ("python_wheel_task", "entry_point"),
        ("spark_python_task", "python_file"),
        ("notebook_task", "notebook_path"),
    ):
        sub = task.get(kind)
        if isinstance(sub, dict):
            texts.append(str(sub.get(field, "")))
    return any("gate" in t.lower() for t in texts)


def _check_job(
    report: Report,
    file: Path,
    key: str,
    spec: dict[str, Any],
    validation_key: str,
    publish_key: str,
) -> None:
    base = f"resources.jobs.{key}"
    tasks = spec.get("tasks")
    if not isinstance(tasks, list):
        return
    index, built = _job_tasks(report, file, base, tasks)
    upstream = _upstream(report, file, base, index, built)
    if upstream is None:
        return  # no run order to check the quality gate against until the cycle is broken
    publish = [t for t in built.values() if t.pipeline_key == publish_key]
    if not publish:
        return
    gates = [t for t in built.values() if _is_gate(t.spec)]
    if not gates:
        for task in publish:
            report.add(
                "BND003",
                file,
                f"{base}.tasks[{index[task.key]}]",
                f"{task.key} refreshes the {publish_key} pipeline but no quality gate task "
                "runs before it",
                f"add a {GATE_TASK} task (depends on the {validation_key} pipeline task) "
                f"and make {task.key} depend on it",
            )
        return
    validates = {t.key for t in built.values() if t.pipeline_key == validation_key}
    for gate in gates:
        gi, above = index[gate.key], upstream[gate.key]
        _check_gate(report, file, f"{base}.tasks", gi, gate, validation_key, validates, above)
    gate_keys = {g.key for g in gates}
    gate_names = ", ".join(g.key for g in gates)
    for task in publish:
        pi = index[task.key]
        ancestors = upstream[task.key]
        if not ancestors & gate_keys:
            report.add(
                "BND003",
                file,
                f"{base}.tasks[{pi}]",
                f"{task.key} does not depend on {gate_names}",
                f"add depends_on: {_dep(gates[0].key)}",
            )
            continue
        # Every task between the gate and publish (and publish) must need its upstream to succeed.
        chain = [task.key] + [
            a for a in upstream if a in ancestors and a not in gate_keys and upstream[a] & gate_keys
        ]
        for tkey in chain:
            if built[tkey].run_if != "ALL_SUCCESS":
                report.add(
                    "BND003",
                    file,
                    f"{base}.tasks[{index[tkey]}].run_if",
                    f"{tkey} has run_if: {built[tkey].run_if}, so {task.key} runs even "
                    f"when {gate_names} fails",
                    "remove run_if or set run_if: ALL_SUCCESS",
                )


def _job_tasks(
    report: Report, file: Path, base: str, tasks: list[Any]
) -> tuple[dict[str, int], dict[str, Task]]:
    """The job's tasks by key, with their index in `tasks`; a key used twice (BND007) and a
    `depends_on` on an unknown task (BND007) reported."""
    index: dict[str, int] = {}
    built: dict[str, Task] = {}
    for i, raw_task in enumerate(tasks):
        if not isinstance(raw_task, dict) or not raw_task.get("task_key"):
            continue
        tkey = str(raw_task["task_key"])
        if tkey in index:
            report.add(
                "BND007",
                file,
                f"{base}.tasks[{i}].task_key",
                f"task key {tkey!r} is used twice (also tasks[{index[tkey]}])",
                "give every task its own task_key",
            )
            continue
        index[tkey] = i
        built[tkey] = build_task(raw_task)
    for tkey, i in index.items():
        for j, dep in enumerate(built[tkey].depends_on):
            if dep not in index:
                close = difflib.get_close_matches(dep, list(index), n=1)
                report.add(
                    "BND007",
                    file,
                    f"{base}.tasks[{i}].depends_on[{j}]",
                    f"{tkey} depends on unknown task {dep!r}",
                    f"use task_key: {close[0]}" if close else f"use one of: {', '.join(index)}",
                )
    return index, built


def _upstream(
    report: Report, file: Path, base: str, index: dict[str, int], built: dict[str, Task]
) -> dict[str, set[str]] | None:
    """Every task's direct and indirect upstream tasks, in run order; None (and BND008) when
    tasks depend on each other in a cycle."""
    known = {tkey: [d for d in t.depends_on if d in index] for tkey, t in built.items()}
    try:
        order = order_tasks(known)
    except graphlib.CycleError as exc:
        cycle = exc.args[1]  # in "depends on" order, from the cycle's first task in the file
        report.add(
            "BND008",
            file,
            f"{base}.tasks[{index[cycle[0]]}].depends_on",
            f"tasks depend on each other in a cycle: {' -> '.join(cycle)}",
            "remove one of these depends_on entries",
        )
        return None
    upstream: dict[str, set[str]] = {}
    for tkey in order:
        upstream[tkey] = {a for d in known[tkey] for a in (d, *upstream[d])}
    return upstream


def _check_gate(
    report: Report,
    file: Path,
    tasks: str,
    gi: int,
    gate: Task,
    validation_key: str,
    validates: set[str],
    upstream: set[str],
) -> None:
    """The gate runs after the validation pipeline, only when it succeeded, and is given its id
    (BND003)."""
    if not (upstream & validates):
        target = next(iter(sorted(validates)), "<validation task>")
        if validates:
            report.add(
                "BND003",
                file,
                f"{tasks}[{gi}]",
                f"{gate.key} does not depend on {target} (the {validation_key} pipeline task)",
                f"add depends_on: {_dep(target)}",
            )
        else:
            report.add(
                "BND003",
                file,
                tasks,
                f"the job never runs the {validation_key} pipeline before {gate.key}",
                "add a pipeline_task on "
                f"{_ref('resources.pipelines.' + validation_key + '.id')} "
                f"and make {gate.key} depend on it",
            )
    if gate.run_if != "ALL_SUCCESS":
        report.add(
            "BND003",
            file,
            f"{tasks}[{gi}].run_if",
            f"{gate.key} has run_if: {gate.run_if}, so it runs (and may pass on old "
            "metrics) even when the validation pipeline failed",
            "remove run_if or set run_if: ALL_SUCCESS",
        )
    params = (
        (gate.spec.get("python_wheel_task") or {}).get("parameters")
        if isinstance(gate.spec.get("python_wheel_task"), dict)
        else None
    )
    wanted = _ref(f"resources.pipelines.{validation_key}.id")
    if isinstance(params, list) and not any(wanted in str(p) for p in params):
        report.add(
            "BND003",
            file,
            f"{tasks}[{gi}].python_wheel_task.parameters",
            f"{gate.key} is not given the {validation_key} pipeline id",
            f"add parameters: [--pipeline-id, {wanted}]",
        )


def _check_jobs(report: Report, raw: RawBundle, validation_key: str, publish_key: str) -> None:
    targets = raw.config.get("targets") or {}
    names = list(targets) if isinstance(targets, dict) and targets else [None]
    for tname in names:
        config = apply_target(raw.config, tname) if tname else raw.config
        for key, spec in ((config.get("resources") or {}).get("jobs") or {}).items():
            if not isinstance(spec, dict):
                continue
            files = raw.resource_files.get(("jobs", key)) or [raw.documents[0][0]]
            _check_job(report, files[0], key, spec, validation_key, publish_key)


_UC_REFUSED = re.compile(r"[. /\x00-\x1f\x7f]")


def _refused_by_unity_catalog(name: str) -> str:
    """Why Unity Catalog refuses `name` for a catalog or schema, or "" when it takes it: at
    most 255 characters, no period, space, forward slash, ASCII control character or DELETE
    (docs.databricks.com/aws/en/data-governance/unity-catalog/requirements)."""
    if len(name) > 255:
        return f"{len(name)} characters, and Unity Catalog takes at most 255 in a name"
    found = _UC_REFUSED.search(name)
    return f"Unity Catalog refuses {found.group()!r} in a name" if found else ""


def _check_catalog_schema(report: Report, raw: RawBundle) -> None:
    targets = raw.config.get("targets") or {}
    if not isinstance(targets, dict):
        return
    for tname in targets:
        config = resolve(apply_target(raw.config, tname), variable_values(raw.config, tname))
        for key, spec in ((config.get("resources") or {}).get("pipelines") or {}).items():
            if not isinstance(spec, dict):
                continue
            file = (raw.resource_files.get(("pipelines", key)) or [raw.documents[0][0]])[0]
            for fld in ("catalog", "schema"):
                value = spec.get(fld)
                if fld == "schema" and value is None:
                    value = spec.get("target")
                path = f"resources.pipelines.{key}.{fld}"
                if value is None or (isinstance(value, str) and not value.strip()):
                    report.add(
                        "BND009",
                        file,
                        path,
                        f"pipeline {key!r} has no {fld} in target {tname!r}",
                        f"set {fld}: {_ref('var.' + fld)} and give {fld} a value in every target",
                    )
                    continue
                pending = [
                    m.group(1)
                    for m in REFERENCE.finditer(str(value))
                    if not m.group(1).startswith("workspace.current_user")
                ]
                if pending:
                    report.add(
                        "BND009",
                        file,
                        path,
                        f"{fld} of pipeline {key!r} does not resolve in target {tname!r} "
                        f"(left: {_ref(pending[0])})",
                        f"give the variable a value under targets.{tname}.variables",
                    )
                elif refused := _refused_by_unity_catalog(REFERENCE.sub("x", str(value))):
                    suggestion = word_name(str(value))[:255]
                    report.add(
                        "BND009",
                        file,
                        path,
                        f"{fld} {value!r} of pipeline {key!r} in target {tname!r}: {refused}",
                        f"use letters, digits and underscores, e.g. {fld}: {suggestion or 'dev'}",
                    )


def _check_secrets(report: Report, raw: RawBundle) -> None:
    for file, doc in raw.documents:
        for path, text in iter_strings(doc):
            value = text.strip()
            if not value or value.startswith(_SECRET_REF_PREFIX):
                continue
            last = re.split(r'[.\]\["]+', path.rstrip('"]'))[-1] if path else ""
            literal = REFERENCE.sub("", value).strip()
            masked = (value[:4] + "…") if len(value) > 4 else "…"
            if _SECRET_VALUE.search(value):
                report.add(
                    "BND010",
                    file,
                    path,
                    f"value {masked!r} looks like a credential; it would be committed and "
                    "deployed in clear text",
                    "store it in a Databricks secret scope and reference it "
                    "(e.g. a secrets/<scope>/<key> reference), or pass it at deploy time",
                )
            elif _SECRET_KEY.search(last) and literal:
                report.add(
                    "BND010",
                    file,
                    path,
                    f"{last!r} holds a literal value ({masked!r}); secrets do not belong "
                    "in bundle YAML",
                    "use a secret scope reference or a variable set from the environment "
                    "(BUNDLE_VAR_<name>)",
                )


def _declared_entry_points(files: ProjectFiles, report: Report) -> dict[str, set[str]]:
    """Entry points by wheel package name: the project's own (pyproject.toml) and this
    package's (the gate task runs `medallion_dq`'s `quality_gate`)."""
    from importlib.metadata import PackageNotFoundError, distribution

    declared: dict[str, set[str]] = {}
    try:
        ours = distribution("medallion-dq").entry_points
        declared["medallion_dq"] = {e.name for e in ours if e.group == "console_scripts"}
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        declared["medallion_dq"] = {"medallion-dq", "quality_gate"}
    try:
        project = files.pyproject().get("project") or {}
    except ValueError:  # `check` says so once, as DQC000; the entry points cannot be known
        return declared
    names = set((project.get("scripts") or {}).keys())
    for group in (project.get("entry-points") or {}).values():
        if isinstance(group, dict):
            names |= set(group)
    package = _dist_key(str(project.get("name", "")))
    declared[package] = declared.get(package, set()) | names
    return declared


def _dist_key(name: str) -> str:
    """A distribution name as pip compares them: acme-orders, Acme.Orders -> acme_orders."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _check_entry_points(report: Report, raw: RawBundle, files: ProjectFiles) -> None:
    declared = _declared_entry_points(files, report)
    for file, kind, _key, spec, path in resource_docs(raw):
        if kind != "jobs" or not isinstance(spec, dict):
            continue
        for i, task in enumerate(spec.get("tasks") or []):
            wheel = task.get("python_wheel_task") if isinstance(task, dict) else None
            if not isinstance(wheel, dict):
                continue
            entry, package = wheel.get("entry_point"), wheel.get("package_name")
            if not isinstance(entry, str) or REFERENCE.search(entry):
                continue
            if not isinstance(package, str) or REFERENCE.search(package):
                continue
            where = f"{path}.tasks[{i}].python_wheel_task"
            names = declared.get(_dist_key(package))
            if names is None:
                ours = sorted(p for p in declared if p and p != "medallion_dq")
                report.add(
                    "BND012",
                    file,
                    f"{where}.package_name",
                    f"package {package!r} is neither this project's nor medallion_dq",
                    "write package_name: medallion_dq (the quality gate) or "
                    + (f"{ours[0]} (this project)" if ours else "the project's package"),
                )
            elif entry not in names:
                known = ", ".join(sorted(names)) or "none"
                close = difflib.get_close_matches(entry, sorted(names), n=1)
                report.add(
                    "BND012",
                    file,
                    f"{where}.entry_point",
                    f"entry point {entry!r} is not declared by {package} (it has: {known})",
                    f"use entry_point: {close[0]}"
                    if close
                    else "use one of those, or declare it under [project.scripts] in pyproject.toml",
                )


# --------------------------------------------------------------------------- entry points


def validate_bundle(
    project: ProjectFiles | Path | str,
    *,
    validation_key: str = "validation",
    publish_key: str = "publish",
) -> list[Problem]:
    """Check the bundle of `project` (a folder, or its files as a command read them); an empty
    list means it is clean. Never raises."""
    files = FolderFiles(project) if isinstance(project, (Path, str)) else project
    root = files.root
    report = Report(root)
    try:
        try:
            raw = files.raw_bundle()
        except BundleError as exc:
            text = str(exc)
            file, _, message = text.partition(": ")
            report.add(
                "BND001",
                file if message else root / BUNDLE_FILE,
                "",
                message or text,
                exc.fix,
            )
            return report.problems
        _check_structure(report, raw)
        check_schemas(report, raw)
        _check_references(report, raw)
        _check_variables(report, raw)
        _check_libraries(report, raw)
        _check_jobs(report, raw, validation_key, publish_key)
        _check_catalog_schema(report, raw)
        _check_secrets(report, raw)
        _check_entry_points(report, raw, files)
    except Exception as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb else ""
        report.add(
            "BND000",
            root / BUNDLE_FILE,
            "",
            f"the validator failed: {type(exc).__name__}: {exc}{where}",
            "please report this; the other checks may be incomplete",
        )
    return report.problems
