"""The conventions a project's `check` enforces: its conventions pack's policy, then its own table.

A pack (`library.py`) may hold a ``policy.yml``: the table a project writes as
``[tool.medallion.conventions]`` (``severity``, ``layers``, ``quarantine_suffix``) and ``locked``,
the settings a project may make stricter but never looser (a DQC code, ``layers`` or
``quarantine_suffix``). A project names its pack in ``[tool.medallion] pack`` (default: the
built-in ``medallion``, today's conventions, nothing locked). Every value keeps its origin, for
`medallion-dq conventions show`; a project line that loosens a locked setting is DQC017, naming
the pack, the setting and the line, and the pack's value holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from medallion_dq import library
from medallion_dq.problems import Problem
from medallion_dq.project import Project
from medallion_dq.user_yaml import load_yaml

POLICY_FILE = "policy.yml"
TABLE = "[tool.medallion.conventions]"
#: How strict a severity is: a locked code's may rise, never fall.
RANK = {"off": 0, "warning": 1, "error": 2}
_KEYS = {"severity", "layers", "quarantine_suffix", "locked"}
#: The settings other than severities, as they are when no one sets them.
_DEFAULTS: dict[str, Any] = {
    "layers": ["bronze", "silver", "gold"],
    "quarantine_suffix": "_quarantine",
}


@dataclass(frozen=True)
class Setting:
    """One setting's value and where it comes from: "built-in", "pack acme 1.1.0" or
    "pyproject.toml line 42"; `locked`: the pack forbids loosening it."""

    value: Any
    origin: str
    locked: bool = False


@dataclass
class Policy:
    pack: str
    version: str
    #: The merged table, as `conventions` reads a project's own.
    config: dict[str, Any] = field(default_factory=dict)
    #: "severity.DQC005", "layers", "quarantine_suffix" -> its value and origin.
    settings: dict[str, Setting] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def read_pack(pack: str, codes: Collection[str]) -> tuple[dict[str, Any], list[Problem]]:
    """The pack's policy.yml as written (none: empty); DQC000 naming the pack when it is wrong."""
    where = f"pack {pack} {POLICY_FILE}"

    def broken(message: str) -> tuple[dict[str, Any], list[Problem]]:
        fix = "the pack is broken: tell its owners, or pin the version before"
        return {}, [Problem("DQC000", where, message, fix)]

    try:
        path = library.pack_folder(pack) / POLICY_FILE
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    except library.LibraryError as error:
        return {}, [
            Problem("DQC000", "pyproject.toml [tool.medallion] pack", error.message, error.fix)
        ]
    except (OSError, UnicodeDecodeError) as error:
        return broken(f"cannot be read ({error})")
    try:
        data = load_yaml(text) if text.strip() else {}
    except Exception as error:  # the pack's own YAML: its owners fix it
        return broken(str(error).splitlines()[0])
    if not isinstance(data, dict):
        return broken("the top level must be a mapping")
    if unknown := sorted(set(data) - _KEYS, key=str):
        return broken(f"unknown key {unknown[0]!r} (use {', '.join(sorted(_KEYS))})")
    severity = data.get("severity", {})
    if not isinstance(severity, Mapping):
        return broken("'severity' must be a mapping of codes to error, warning or off")
    for code, value in severity.items():
        if code not in codes:
            return broken(f"severity: unknown code {code!r}")
        if value not in (*RANK, "warn"):
            return broken(f"severity of {code}: {value!r} is not one of error, warning, off")
    locked = data.get("locked", [])
    lockable = {*codes, "layers", "quarantine_suffix"}
    if not isinstance(locked, list) or not all(isinstance(x, str) for x in locked):
        return broken("'locked' must be a list of DQC codes, layers or quarantine_suffix")
    if unknown := [x for x in locked if x not in lockable]:
        return broken(f"locked: {unknown[0]!r} is no code, layers or quarantine_suffix")
    return data, []


def _line(text: str, key: str) -> str:
    """Where pyproject.toml sets `key` (a code, layers, quarantine_suffix): "line N"."""
    pattern = re.compile(rf"^\s*(?:[^#]*[{{,]\s*)?\"?{re.escape(key)}\"?\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return f"line {number}"
    return TABLE


def load(project: Project, defaults: Mapping[str, str]) -> Policy:
    """The project's policy: `defaults` (code -> built-in severity), the pack's, the project's.
    Never raises: what cannot be read is a DQC000 problem, a loosened lock a DQC017."""
    problems: list[Problem] = []
    try:
        settings = project.settings()
        own = settings.get("conventions", {})
    except ValueError as error:  # it does not parse, or [tool.medallion] is no table
        fix = "correct the TOML where it says" if "does not parse" in str(error) else None
        return Policy(library.BUILT_IN, "", problems=[_unread(str(error), fix)])
    if not isinstance(own, Mapping):
        problems.append(_unread(f"{TABLE} must be a table"))
        own = {}
    pack = settings.get("pack", library.BUILT_IN)
    if not isinstance(pack, str) or not pack:
        problems.append(
            Problem(
                "DQC000",
                "pyproject.toml [tool.medallion] pack",
                f"{pack!r} is not a pack name",
                'write pack = "<the pack\'s name>", or remove it for the built-in conventions',
            )
        )
        pack = library.BUILT_IN
    packed, pack_problems = read_pack(pack, defaults)
    problems += pack_problems
    version = library.pack_version(pack) if not pack_problems else ""
    origin = "built-in" if pack == library.BUILT_IN else f"pack {pack} {version}".strip()
    locked = set(packed.get("locked", []))
    policy = Policy(pack, version, problems=problems)
    policy.settings = {
        f"severity.{code}": Setting(value, "built-in") for code, value in defaults.items()
    }
    for key, value in _flat(packed).items():
        policy.settings[key] = Setting(value, origin, key.removeprefix("severity.") in locked)
    for name in locked:  # a lock holds the value the pack leaves as it is, too
        key = name if name in _DEFAULTS else f"severity.{name}"
        kept = policy.settings.get(key) or Setting(_DEFAULTS.get(name), "built-in")
        policy.settings[key] = Setting(kept.value, kept.origin, locked=True)
    text = _text(project)
    for key, value in _flat(own).items():
        name = key.removeprefix("severity.")
        before = policy.settings.get(key)
        if before is not None and before.locked and _looser(key, value, before.value):
            policy.problems.append(
                Problem(
                    "DQC017",
                    f"pyproject.toml {_line(text, name)}",
                    f"{TABLE} sets {name} = {value!r}: looser than {before.value!r}, which"
                    f" conventions pack {pack} locks",
                    f"remove the line (the pack's {before.value!r} applies) or make it stricter",
                )
            )
            continue
        policy.settings[key] = Setting(value, f"pyproject.toml {_line(text, name)}")
    policy.config = _table(policy.settings, defaults)
    return policy


def _unread(message: str, fix: str | None = None) -> Problem:
    return Problem("DQC000", "pyproject.toml", message, fix or f"write {TABLE} as a table")


def _text(project: Project) -> str:
    try:
        return project.text(project.root / "pyproject.toml")
    except (OSError, UnicodeDecodeError):
        return ""


def _flat(table: Mapping[str, Any]) -> dict[str, Any]:
    """ "severity.<code>" per code, "layers" and "quarantine_suffix" as written; what is not a
    table where one is due is kept as written, for `conventions` to refuse."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key == "severity" and isinstance(value, Mapping):
            out |= {f"severity.{code}": v for code, v in value.items()}
        elif key != "locked":
            out[key] = value
    return out


def _table(settings: Mapping[str, Setting], defaults: Mapping[str, str]) -> dict[str, Any]:
    """The merged settings as a project's table; the built-in severities left out."""
    table: dict[str, Any] = {}
    for key, setting in settings.items():
        if key.startswith("severity."):
            if setting.origin != "built-in":
                table.setdefault("severity", {})[key.removeprefix("severity.")] = setting.value
        else:
            table[key] = setting.value
    return table


def _looser(key: str, value: Any, locked: Any) -> bool:
    """Whether a project's `value` loosens the pack's locked one: a lower severity, or any other
    layers or quarantine suffix (a folder layout has no stricter side)."""
    if key.startswith("severity."):
        normal = {"warn": "warning"}
        return RANK.get(normal.get(value, value), 0) < RANK.get(normal.get(locked, locked), 0)
    return bool(value != locked)


def shown(policy: Policy, described: Mapping[str, str]) -> str:
    """The policy as `conventions show` prints it: the pack, then one line per setting."""
    built_in = policy.pack == library.BUILT_IN
    pack = "built-in (medallion-dq)" if built_in else f"{policy.pack} {policy.version}".strip()
    lines = [f"conventions pack: {pack}"]
    rows = []
    for key, setting in sorted(policy.settings.items()):
        name = key.removeprefix("severity.")
        origin = setting.origin + (", locked" if setting.locked else "")
        rows.append((name, _value(setting.value), origin, described.get(name, "")))
    for key, default in (("layers", "bronze, silver, gold"), ("quarantine_suffix", "_quarantine")):
        if key not in policy.settings:
            rows.append((key, default, "built-in", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        lines.append(f"{line}  {row[3]}".rstrip())
    return "\n".join(lines)


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_value(v)}" for k, v in value.items())
    return str(value)
