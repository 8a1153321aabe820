"""`${...}` references of a bundle: found, and substituted where they can be known offline.

`resolve` substitutes `${var.x}`, `${bundle.*}` and `${workspace.*}` (the workspace's paths
defaulted as the Databricks CLI does) in a few passes, for chains; what only a deploy knows
stays as written. `iter_references` and `iter_strings` walk a parsed document for the checks.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from medallion_dq.problems import MedallionDQError

# Same shape as the Databricks CLI's reference regex (libs/dyn/dynvar/ref.go); "$${x}" escapes.
_NAME = r"_*[^\W\d_]+(?:[-_]*[^\W_]+)*"
REFERENCE = re.compile(
    r"(?<!\$)\$\{(" + _NAME + r"(?:\." + _NAME + r"(?:\[[0-9]+\])*)*(?:\[[0-9]+\])*)\}"
)


class _Unresolved(MedallionDQError):
    pass


def _lookup(context: dict[str, Any], path: str) -> Any:
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    if parts and parts[0] == "variables" and len(parts) >= 3 and parts[2] == "value":
        parts = ["var", parts[1], *parts[3:]]
    node: Any = context
    for part in parts:
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(node, list) or index >= len(node):
                raise _Unresolved(path)
            node = node[index]
        else:
            if not isinstance(node, dict) or part not in node:
                raise _Unresolved(path)
            node = node[part]
    return node  # may still hold references: the next pass of resolve() takes them


def _substitute(value: Any, context: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, context) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, context) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = REFERENCE.fullmatch(value)
    if whole:
        try:
            return copy.deepcopy(_lookup(context, whole.group(1)))
        except _Unresolved:
            return value

    def replace(match: re.Match[str]) -> str:
        try:
            found = _lookup(context, match.group(1))
        except _Unresolved:
            return match.group(0)
        if isinstance(found, (dict, list)):
            return match.group(0)
        if isinstance(found, bool):
            return "true" if found else "false"
        return str(found)

    return REFERENCE.sub(replace, value)


def _workspace_defaults(workspace: dict[str, Any]) -> dict[str, Any]:
    ws = dict(workspace or {})
    root = ws.get("root_path") or "~/.bundle/${bundle.name}/${bundle.target}"
    if isinstance(root, str) and root.startswith("~/"):
        root = "/Workspace/Users/${workspace.current_user.userName}/" + root[2:]
    ws["root_path"] = root
    ws.setdefault("file_path", "${workspace.root_path}/files")
    ws.setdefault("artifact_path", "${workspace.root_path}/artifacts")
    ws.setdefault("state_path", "${workspace.root_path}/state")
    ws.setdefault("resource_path", "${workspace.root_path}/resources")
    return ws


def resolve(effective: dict[str, Any], variables: dict[str, Any]) -> dict[str, Any]:
    """Substitute every reference that can be known offline (a few passes, for chains)."""
    config = copy.deepcopy(effective)
    config["workspace"] = _workspace_defaults(config.get("workspace") or {})
    values = copy.deepcopy(variables)
    for _ in range(10):
        context = {
            "var": values,
            "bundle": config.get("bundle") or {},
            "workspace": config.get("workspace") or {},
        }
        new_values = _substitute(values, context)
        new_config = _substitute(config, context)
        if new_values == values and new_config == config:
            break
        values, config = new_values, new_config
    config["variables"] = values
    return config


def iter_references(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(yaml path, reference) for every `${...}` in a parsed document."""
    for sub_path, text in iter_strings(value, path):
        for match in REFERENCE.finditer(text):
            yield sub_path, match.group(1)


def iter_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from iter_strings(item, join_path(path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from iter_strings(item, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def join_path(path: str, key: Any) -> str:
    key = str(key)
    if re.fullmatch(r"[A-Za-z0-9_\-]+", key):
        return f"{path}.{key}" if path else key
    return f'{path}["{key}"]'
