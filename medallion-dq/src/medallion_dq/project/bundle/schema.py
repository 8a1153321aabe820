"""BND002: the bundle's resources against Databricks' own resource models (databricks-bundles),
with the YAML path of each unknown field, wrong type or value."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import re
import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any, Union, get_args, get_origin

from medallion_dq.project.bundle.model import RawBundle, merge, resource_docs
from medallion_dq.project.bundle.references import join_path
from medallion_dq.project.bundle.report import Report


def _resource_models() -> dict[str, Any]:
    """databricks-bundles' models of the resource kinds checked, by their `resources` key.

    Raises ImportError when databricks-bundles (medallion-dq's [tools] extra) cannot be imported.
    """
    from databricks.bundles.jobs import Job
    from databricks.bundles.pipelines import Pipeline

    models: dict[str, Any] = {"jobs": Job, "pipelines": Pipeline}
    for kind, module, name in (
        ("schemas", "databricks.bundles.schemas", "Schema"),
        ("volumes", "databricks.bundles.volumes", "Volume"),
    ):
        with contextlib.suppress(ImportError, AttributeError):
            models[kind] = getattr(__import__(module, fromlist=[name]), name)
    return models


def _transform_fn() -> Callable[[Any, Any], Any] | None:
    try:
        from databricks.bundles.core._transform import _transform
    except ImportError:  # private helper: without it, errors point at the resource itself
        return None
    return _transform


def _candidates(tpe: Any) -> list[Any]:
    """The concrete types behind Optional / VariableOr / Union wrappers."""
    origin = get_origin(tpe)
    if origin is Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        out: list[Any] = []
        for arg in get_args(tpe):
            if arg is type(None):
                continue
            if getattr(get_origin(arg), "__name__", "") == "Variable":
                continue
            out.extend(_candidates(arg))
        return out
    import types

    if isinstance(tpe, types.UnionType):
        return [a for arg in get_args(tpe) for a in _candidates(arg) if a is not type(None)]
    return [tpe]


Segment = str | int


def _locate(
    tpe: Any, value: Any, segments: list[Segment], transform: Callable[[Any, Any], Any]
) -> tuple[list[Segment], str | None, list[str]]:
    """Deepest place under which `transform(tpe, value)` fails.

    Returns (path segments, the unknown field there or None, the field names allowed there).
    """
    for cand in _candidates(tpe):
        if is_dataclass(cand) and isinstance(value, dict):
            names = [f.name for f in fields(cand)]
            for key in value:
                if key not in names:
                    return [*segments, key], str(key), names
            try:
                hints = typing.get_type_hints(cand)
            except Exception:
                return segments, None, names
            for key, item in value.items():
                try:
                    transform(hints[key], item)
                except Exception:
                    return _locate(hints[key], item, [*segments, key], transform)
            return segments, None, names
        if get_origin(cand) is list and isinstance(value, list):
            (arg,) = get_args(cand) or (Any,)
            for i, item in enumerate(value):
                try:
                    transform(arg, item)
                except Exception:
                    return _locate(arg, item, [*segments, i], transform)
        elif get_origin(cand) is dict and isinstance(value, dict):
            args = get_args(cand)
            if len(args) == 2:
                for key, item in value.items():
                    try:
                        transform(args[1], item)
                    except Exception:
                        return _locate(args[1], item, [*segments, key], transform)
    return segments, None, []


def _path_of(prefix: str, segments: list[Segment]) -> str:
    path = prefix
    for seg in segments:
        path = f"{path}[{seg}]" if isinstance(seg, int) else join_path(path, seg)
    return path


def _remove(spec: Any, segments: list[Segment]) -> bool:
    """Drop the node at `segments` (to look for the next error). False if not possible."""
    if not segments:
        return False
    node = spec
    for seg in segments[:-1]:
        try:
            node = node[seg]
        except (KeyError, IndexError, TypeError):
            return False
    last = segments[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = {} if isinstance(node[last], dict) else None
        if node[last] is None:
            del node[last]
        return True
    return False


def _schema_message(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    match = re.match(r"Unexpected field '([^']+)' for class (\w+)", text)
    if match:
        return f"unknown field {match.group(1)!r} (not a field of {match.group(2)})"
    match = re.search(r"missing \d+ required keyword-only arguments?: (.+)$", text)
    if match:
        names = re.findall(r"'(\w+)'", match.group(1))
        return f"required field{'s' if len(names) > 1 else ''} {', '.join(names)} missing"
    match = re.match(r"'([^']*)' is not a valid (\w+)", text)
    if match:
        return f"{match.group(1)!r} is not a valid {match.group(2)}"
    match = re.match(r"Unexpected type: (.+) for '?(.*?)'?$", text)
    if match:
        return f"{match.group(2)!r} has the wrong type (expected {match.group(1)})"
    match = re.match(r"invalid literal for int\(\) with base 10: '(.*)'$", text)
    if match:
        return f"{match.group(1)!r} is not a whole number"
    match = re.match(r"could not convert string to float: '(.*)'$", text)
    if match:
        return f"{match.group(1)!r} is not a number"
    return text


def _enum_fix(message: str, model: Any) -> str | None:
    """For "'X' is not a valid SomeEnum": the allowed values, closest first. The enum is looked
    up in the package of the resource's model (`databricks.bundles.jobs` for a job...)."""
    match = re.match(r"'([^']*)' is not a valid (\w+)$", message)
    if not match:
        return None
    package = str(getattr(model, "__module__", "")).split("._", 1)[0]
    try:
        enum = getattr(importlib.import_module(package), match.group(2))
        values = [str(member.value) for member in enum]
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    close = difflib.get_close_matches(match.group(1), values, n=1)
    allowed = ", ".join(values)
    return f"use {close[0]!r} (allowed: {allowed})" if close else f"use one of: {allowed}"


def _schema_errors(
    model: Any, kind: str, spec: Any, path: str, limit: int = 20
) -> tuple[list[tuple[str, str, str]], Any]:
    """Every schema error of a resource mapping (checked with `model`, none if `None`) as
    (yaml path, message, fix), and the mapping with the faulty nodes removed (to check target
    overrides against)."""
    if model is None or spec is None:
        return [], spec
    if not isinstance(spec, dict):
        return [(path, f"a {kind} entry must be a mapping", "write it as key: value pairs")], {}
    import copy

    spec = copy.deepcopy(spec)
    transform = _transform_fn()
    errors: list[tuple[str, str, str]] = []
    for _ in range(limit):
        try:
            model.from_dict(copy.deepcopy(spec))
            break
        except Exception as exc:
            message = _schema_message(exc)
            segments: list[Segment] = []
            unknown: str | None = None
            allowed: list[str] = []
            if transform is not None:
                try:
                    segments, unknown, allowed = _locate(model, spec, [], transform)
                except Exception:
                    segments = []
            fix = "see https://docs.databricks.com/dev-tools/bundles/reference.html"
            if unknown is not None:
                close = difflib.get_close_matches(unknown, allowed, n=1)
                fix = f"rename it to {close[0]!r}" if close else "remove it"
            elif "required field" in message:
                fix = "add it"
            elif _enum_fix(message, model):
                fix = _enum_fix(message, model) or fix
            errors.append((_path_of(path, segments), message, fix))
            if "required field" in message or not _remove(spec, segments):
                break
    return errors, spec


def check_schemas(report: Report, raw: RawBundle) -> None:
    try:
        models = _resource_models()
    except ImportError as exc:
        # A broken environment: not a clean bill of health, so `medallion-dq check` fails.
        report.add(
            "BND002",
            raw.documents[0][0],
            "",
            "the schema checks cannot run: databricks-bundles (Databricks' resource models, "
            f"medallion-dq's [tools] extra) cannot be imported ({exc})",
            "pip install databricks-bundles (or install medallion-dq with its [tools] extra)",
        )
        return
    repaired: dict[tuple[str, str], Any] = {}
    overrides = []
    for file, kind, key, spec, path in resource_docs(raw):
        if path.startswith("targets."):
            overrides.append((file, kind, key, spec, path))
            continue
        errors, fixed = _schema_errors(models.get(kind), kind, spec, path)
        repaired[(kind, key)] = merge(repaired.get((kind, key)), fixed)
        for error in errors:
            report.add("BND002", file, *error)
    # A target override is partial: check it merged into the resource, as a deploy would (the
    # resource's own errors removed, so that what is left comes from the override).
    for file, kind, key, spec, path in overrides:
        model = models.get(kind)
        if (kind, key) in repaired:
            errors, _ = _schema_errors(model, kind, merge(repaired[(kind, key)], spec), path)
        else:  # a resource only this target defines
            errors, _ = _schema_errors(model, kind, spec, path)
        for error in errors:
            report.add("BND002", file, *error)
