"""The conventions a project's `check` enforces: its conventions pack's policy, then its own table.

A pack (`library.py`) may hold a `policy.yml`: the table a project writes as
`[tool.medallion.conventions]` (`severity`, `layers`, `quarantine_suffix`) and `locked`,
the settings a project may make stricter but never looser (a DQC code, `layers`,
`quarantine_suffix` or `thresholds`). Three more keys are the pack's alone, checked in every
rule file (DQC019): `thresholds` (by layer, the failed fraction the gate allows where a rule
file sets none; locked, a rule file may set a lower one, never a higher one: DQC017),
`quarantine` (by layer, the form every rule file declares: view or table) and `required`
(the fields every rule has: description, owner, examples, threshold). A project names its pack in `[tool.medallion] pack` (default: the
built-in `medallion`, today's conventions, nothing locked). Every value keeps its origin, for
`medallion-dq conventions show`; a project line that loosens a locked setting is DQC017, naming
the pack, the setting and the line, and the pack's value holds.

A team may hold an exception to a locked setting, with an owner and an expiry, in its table::

    [[tool.medallion.conventions.exceptions]]
    setting = "DQC005"              # a DQC code, layers or quarantine_suffix
    value = "warning"
    reason = "owners of the legacy feeds are being named (JIRA-1234)"
    approved_by = "platform-team"
    expires = 2027-03-31            # the last day it holds

Until it expires the value applies and `check` warns (DQC017, a warning naming the exception);
after, it is the DQC017 error and the pack's value holds. The day is today (UTC), or the table's
`as_of` (a date, as `[tool.medallion.local] as_of` sets the engine's clock). A pack's
`no_exceptions: [DQC005]` refuses exceptions to those settings. A pack's `preview` holds
tightenings that warn first: `preview: {"1.1.0": {DQC004: error}}` warns from 1.1.0 and is
the pack's severity from the next minor (1.2.0) on.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq import library, rules
from medallion_dq.problems import SEVERITIES, Problem
from medallion_dq.rules import RuleSet
from medallion_dq.user_yaml import load_yaml

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.project.bundle import Bundle
    from medallion_dq.project.config import Settings

POLICY_FILE = "policy.yml"
#: The pack's own words on its conventions, and the file a project keeps them in (written from
#: the pack: `conventions_file`).
CONVENTIONS_FILE = "CONVENTIONS.md"
TABLE = "[tool.medallion.conventions]"
#: How strict a severity is: a locked code's may rise, never fall.
RANK = {"off": 0, "warning": 1, "error": 2}
_KEYS = {
    "severity",
    "layers",
    "quarantine_suffix",
    "locked",
    "thresholds",
    "quarantine",
    "required",
    "no_exceptions",
    "preview",
}
#: The fields of an exception, every one required.
EXCEPTION_FIELDS = ("setting", "value", "reason", "approved_by", "expires")
_EXCEPTION_FIXES = {
    "setting": 'write setting = "DQC005" (a DQC code, layers or quarantine_suffix)',
    "value": 'write value = "warning" (the setting\'s value while the exception holds)',
    "reason": 'write reason = "<why the team needs it, and its plan>"',
    "approved_by": 'write approved_by = "<who of the pack\'s owners approved it>"',
    "expires": "write expires = 2027-03-31 (the last day it holds, YYYY-MM-DD)",
}
#: The project's own keys that are no setting: its exceptions and the day they are judged at.
_PROJECT_ONLY = {"exceptions", "as_of"}
#: The rule fields a pack may require of every rule.
REQUIRABLE = ("description", "owner", "examples", "threshold")
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
    #: "severity.DQC005", "layers", "quarantine_suffix", "thresholds.silver", "quarantine.silver",
    #: "required" -> its value and origin.
    settings: dict[str, Setting] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: The pack's alone, by layer: the gate's default threshold; the quarantine form.
    thresholds: dict[str, float] = field(default_factory=dict)
    quarantine: dict[str, str] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    thresholds_locked: bool = False
    #: The project's exceptions, each with its state (PackException.state).
    exceptions: list[PackException] = field(default_factory=list)
    #: Tightenings still in preview: code -> (its severity once it turns, the version it turns).
    preview: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: What the pack writes into a project's CONVENTIONS.md, read with its policy (a pack other
    #: than the built-in one): its policy.yml as written, its own CONVENTIONS.md (None: it has
    #: none), its library's rules; `pack_unread`: the pack's files could not be read.
    packed: dict[str, Any] = field(default_factory=dict)
    pack_text: str | None = None
    pack_rules: tuple[library.LibraryRule, ...] = ()
    pack_unread: bool = False


@dataclass(frozen=True)
class PackException:
    """One exception a project holds to a locked setting (module doc)."""

    setting: str
    value: Any
    reason: str
    approved_by: str
    expires: date
    where: str  # "pyproject.toml line N"
    #: "held" (it loosens a lock, until its expiry), "expired", "forbidden" (the pack allows
    #: none to that setting), "unneeded" (nothing locks it looser: it applies as a setting).
    state: str = "unneeded"

    def said(self) -> str:
        return (
            f"exception to {self.setting} = {value_text(self.value)!r} (approved by"
            f" {self.approved_by}, until {self.expires.isoformat()}: {self.reason})"
        )


def read_pack(pack: str, codes: Collection[str]) -> tuple[dict[str, Any], list[Problem]]:
    """The pack's policy.yml as written (none: empty); DQC000 naming the pack's file when it is
    wrong: every key and layer it sets is one something reads (a misspelt one would leave the
    real setting at its default, unsaid)."""
    where = library.pack_file(pack, POLICY_FILE)

    def broken(message: str, fix: str = "correct it") -> tuple[dict[str, Any], list[Problem]]:
        return {}, [Problem("DQC000", where, message, library.for_owners(fix))]

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
        return broken(library.yaml_said(error))
    if not isinstance(data, dict):
        return broken("the top level must be a mapping", "write severity:, thresholds: ... keys")
    if unknown := sorted(set(data) - _KEYS, key=str):
        return broken(f"unknown key {unknown[0]!r}", f"use {', '.join(sorted(_KEYS))}")
    for problem in (
        _severity_problem(data.get("severity", {}), codes),
        _locked_problem(data.get("locked", []), codes),
        _layered_problem(data),
        _settings_problem(data),
        _preview_problem(data, codes),
    ):
        if problem:
            return broken(*problem)
    try:  # the gate reads them on Databricks too: one reader
        library.pack_thresholds(pack)
    except library.LibraryError as error:
        return {}, [Problem("DQC000", where, error.message, error.fix)]
    return data, []


def _severity_problem(severity: object, codes: Collection[str]) -> tuple[str, str] | None:
    if not isinstance(severity, Mapping):
        return (
            "'severity' must be a mapping of codes to error, warning or off",
            "write DQC005: error",
        )
    for code, value in severity.items():
        if code not in codes:
            return (
                f"severity: unknown code {code!r}",
                "use a DQC code of the project's CONVENTIONS.md",
            )
        if value not in (*RANK, "warn"):
            return f"severity of {code}: {value!r} is not one of error, warning, off", "use one"
    return None


def _locked_problem(locked: object, codes: Collection[str]) -> tuple[str, str] | None:
    lockable = "DQC codes, layers, quarantine_suffix, thresholds"
    if not isinstance(locked, list) or not all(isinstance(x, str) for x in locked):
        return f"'locked' must be a list of {lockable}", "write locked: [DQC005, thresholds]"
    if unknown := [
        x for x in locked if x not in {*codes, "layers", "quarantine_suffix", "thresholds"}
    ]:
        return (
            f"locked: {unknown[0]!r} is no code, layers, quarantine_suffix, thresholds",
            "remove it",
        )
    return None


def _layered_problem(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """`quarantine` (by layer: view or table) and `required`; `thresholds`: `pack_thresholds`."""
    forms = data.get("quarantine", {})
    if not isinstance(forms, Mapping) or not all(v in ("view", "table") for v in forms.values()):
        return "'quarantine' must map layers to view or table", "write quarantine: {silver: view}"
    if unknown := [layer for layer in forms if layer not in rules.LAYERS]:
        return f"quarantine: unknown layer {unknown[0]!r}", f"use {', '.join(rules.LAYERS)}"
    required = data.get("required", [])
    if not isinstance(required, list) or not all(x in REQUIRABLE for x in required):
        return f"'required' must list rule fields of {', '.join(REQUIRABLE)}", "list only those"
    return None


def _settings_problem(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The pack's `layers` and `quarantine_suffix`, read as a project's table reads them."""
    if "layers" in data:
        _, problems = layer_folders(data["layers"])
        if problems:  # said as a project's table says it; written here in YAML
            return problems[0][0], "write layers: [bronze, silver, gold] or layers: {silver: clean}"
    suffix = data.get("quarantine_suffix", "_quarantine")
    if not isinstance(suffix, str) or not suffix:
        return (
            "'quarantine_suffix' must be a non-empty string",
            "write quarantine_suffix: _quarantine",
        )
    return None


def layer_folders(raw: object) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """`layers` (a list of the three layers' folder names, or a mapping of layer to folder names)
    as `folder -> layer`, and what is wrong with it (message, fix)."""
    folders_of = {layer: layer for layer in rules.LAYERS}
    if isinstance(raw, list) and len(raw) == len(rules.LAYERS):
        raw = dict(zip(rules.LAYERS, raw, strict=True))
    if not isinstance(raw, Mapping) or not set(raw) <= set(rules.LAYERS):
        return folders_of, [
            (
                "'layers' must list the folder names of bronze, silver and gold, in that order",
                'write layers = ["bronze", "silver", "gold"] or layers = {silver = "clean"}',
            )
        ]
    problems = []
    layer_of = {layer: layer for layer in rules.LAYERS if layer not in raw}
    for layer, folders in raw.items():
        folders = [folders] if isinstance(folders, str) else folders
        if not isinstance(folders, list) or not all(isinstance(f, str) and f for f in folders):
            message = f"layers: {layer} must be a folder name or a list of them"
            problems.append((message, f'write {layer} = "{layer}"'))
            continue
        layer_of.update({folder: layer for folder in folders})
    return layer_of, problems


def _line(text: str, key: str) -> str:
    """Where pyproject.toml sets `key` (a code, layers, quarantine_suffix): "line N"."""
    pattern = re.compile(rf"^\s*(?:[^#]*[{{,]\s*)?\"?{re.escape(key)}\"?\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return f"line {number}"
    return TABLE


def load(settings: Settings, defaults: Mapping[str, str], today: date | None = None) -> Policy:
    """The project's policy, from its `[tool.medallion]` (a manifest's `settings`): `defaults`
    (code -> built-in severity), the pack's, the project's. Never raises: what cannot be read is
    a DQC000 problem, a loosened lock a DQC017. `today`: the day exceptions are judged at
    (default: the table's as_of, else today, UTC)."""
    problems: list[Problem] = []
    if unread := settings.table_unread:  # it does not parse, or [tool.medallion] is no table
        fix = "correct the TOML where it says" if "does not parse" in unread else None
        return Policy(library.BUILT_IN, "", problems=[_unread(unread, fix)])
    table = settings.table
    own = table.get("conventions", {})
    if not isinstance(own, Mapping):
        problems.append(_unread(f"{TABLE} must be a table"))
        own = {}
    pack = table.get("pack", library.BUILT_IN)
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
    policy = Policy(
        pack,
        version,
        problems=problems,
        thresholds={str(k): float(v) for k, v in packed.get("thresholds", {}).items()},
        quarantine={str(k): str(v) for k, v in packed.get("quarantine", {}).items()},
        required=tuple(packed.get("required", [])),
        thresholds_locked="thresholds" in locked,
        packed=packed,
    )
    if pack != library.BUILT_IN and not pack_problems:
        _read_words(policy)
    policy.settings = {
        f"severity.{code}": Setting(value, "built-in") for code, value in defaults.items()
    }
    for key, value in _flat(packed).items():
        name = key.split(".")[0] if key.startswith("thresholds.") else key.removeprefix("severity.")
        policy.settings[key] = Setting(value, origin, name in locked)
    _previewed(policy, packed.get("preview") or {}, origin)
    for name in locked - {"thresholds"}:  # a lock holds the value the pack leaves, too
        key = name if name in _DEFAULTS else f"severity.{name}"
        kept = policy.settings.get(key) or Setting(_DEFAULTS.get(name), "built-in")
        policy.settings[key] = Setting(kept.value, kept.origin, locked=True)
    text = settings.text
    for key in sorted(set(own) & _PACKS_ALONE):
        policy.problems.append(
            _unread(
                f"{TABLE} sets {key}, which only a conventions pack sets",
                "remove it; a rule file sets its own threshold: (stricter than the pack's)"
                if key == "thresholds"
                else "remove it; ask the pack's owners to change it",
            )
        )
    held, wrong = read_exceptions(own.get("exceptions"), text, defaults)
    policy.problems += wrong
    if today is None:
        today, wrong_day = _today(own.get("as_of"))
        policy.problems += wrong_day
    covered = {(e.setting, repr(e.value)) for e in held}
    own = {k: v for k, v in own.items() if k not in _PACKS_ALONE | _PROJECT_ONLY}
    for key, value in _flat(own).items():
        name = key.removeprefix("severity.")
        before = policy.settings.get(key)
        if (name, repr(value)) in covered:
            continue  # the exception's own line says it (`_hold`)
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
    forbidden = set(packed.get("no_exceptions", []))
    policy.exceptions = [_hold(policy, one, today, one.setting in forbidden) for one in held]
    policy.config = _table(policy.settings, defaults)
    return policy


_PACKS_ALONE = {"thresholds", "quarantine", "required", "locked"}


def defaults() -> dict[str, str]:
    """Each code's built-in severity, the base of every pack's policy (DQC000 and DQC017, which
    say the policy itself is wrong, are always errors)."""
    return dict(SEVERITIES)


def _read_words(policy: Policy) -> None:
    """The pack's own CONVENTIONS.md and its library's rules, into `policy` (`pack_unread`
    when they cannot be read: the pack is broken, which DQC000 / DQ031 say elsewhere)."""
    try:
        own = library.pack_folder(policy.pack) / CONVENTIONS_FILE
        policy.pack_text = own.read_text(encoding="utf-8") if own.is_file() else None
        policy.pack_rules = tuple(library.library(policy.pack).values())
    except (OSError, UnicodeDecodeError, library.LibraryError):
        policy.pack_unread = True


def _unread(message: str, fix: str | None = None) -> Problem:
    return Problem("DQC000", "pyproject.toml", message, fix or f"write {TABLE} as a table")


def _flat(table: Mapping[str, Any]) -> dict[str, Any]:
    """ "severity.<code>" per code, "layers" and "quarantine_suffix" as written; what is not a
    table where one is due is kept as written, for `conventions` to refuse."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key in ("severity", "thresholds", "quarantine") and isinstance(value, Mapping):
            out |= {f"{key}.{name}": v for name, v in value.items()}
        elif key not in ("locked", "preview", "no_exceptions"):
            out[key] = value
    return out


def _table(settings: Mapping[str, Setting], defaults: Mapping[str, str]) -> dict[str, Any]:
    """The merged settings as a project's table; the built-in severities left out."""
    table: dict[str, Any] = {}
    for key, setting in settings.items():
        if key.split(".")[0] in _PACKS_ALONE:
            continue  # the pack's alone: `rule_file_problems`
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


def rule_file_problems(
    policy: Policy, ruleset: RuleSet, layer: str | None, where: str
) -> list[Problem]:
    """What a rule file of `layer` does against the pack's own keys: a required field a rule
    lacks, another quarantine form (DQC019), a threshold above a locked default (DQC017)."""
    out: list[Problem] = []
    pack = f"conventions pack {policy.pack}"
    wanted = policy.quarantine.get(layer or "")
    if wanted and any(r.action == "drop" for r in ruleset.rules) and ruleset.quarantine != wanted:
        out.append(
            Problem(
                "DQC019",
                where,
                f"quarantine: {ruleset.quarantine}, but {pack} keeps the dropped rows of {layer}"
                f" as a {wanted}",
                f"write quarantine: {wanted} in the rule file",
            )
        )
    default = policy.thresholds.get(layer or "")
    for rule in ruleset.rules:
        have = {
            "description": bool(rule.description.strip()),
            "owner": bool(rule.owner.strip() or ruleset.owner.strip()),
            "examples": bool(rule.examples),
            "threshold": rule.threshold is not None
            or ruleset.threshold is not None
            or default is not None
            or rule.action == "fail",
        }
        if missing := [name for name in policy.required if not have[name]]:
            out.append(
                Problem(
                    "DQC019",
                    where,
                    f"rule has no {' and no '.join(missing)}, which {pack} requires of every rule",
                    f"add {', '.join(f'{m}:' for m in missing)} to the rule"
                    + (" (owner: once for the file also does)" if "owner" in missing else ""),
                    rule.name,
                )
            )
    if policy.thresholds_locked and default is not None:
        limit = f"the {default:g} {pack} locks for {layer}"
        if ruleset.threshold is not None and ruleset.threshold > default:
            out.append(
                Problem(
                    "DQC017",
                    where,
                    f"threshold: {ruleset.threshold:g} is looser than {limit}",
                    f"lower it to {default:g} or less, or remove it (the pack's applies)",
                )
            )
        for rule in ruleset.rules:
            if rule.threshold is not None and rule.threshold > default:
                out.append(
                    Problem(
                        "DQC017",
                        where,
                        f"threshold: {rule.threshold:g} is looser than {limit}",
                        f"lower it to {default:g} or less, or remove it (the pack's applies)",
                        rule.name,
                    )
                )
    return out


def gate_task_problems(policy: Policy, bundle: Bundle, where: Mapping[Path, str]) -> list[Problem]:
    """A quality_gate task that does not name the pack whose default thresholds it must apply
    (DQC019): on Databricks, the gate knows the pack only from its parameters. (A bundle that
    does not load has no job: the bundle checks say why.) `where`: how problems name a bundle
    file (a manifest's)."""
    if not policy.thresholds or policy.pack == library.BUILT_IN:
        return []
    out = []
    for job in bundle.jobs.values():
        for task in job.tasks:
            if task.is_gate and task.gate_pack != policy.pack:
                out.append(
                    Problem(
                        "DQC019",
                        where[job.source_file],
                        f"task {task.key} runs the quality gate without --pack {policy.pack}: it"
                        f" would not apply the default thresholds of {policy.pack}",
                        f"add - --pack and - {policy.pack} to the task's parameters",
                    )
                )
    return out


# --------------------------------------------------------------------------- exceptions


def read_exceptions(
    raw: object, text: str, codes: Collection[str]
) -> tuple[list[PackException], list[Problem]]:
    """The project's exceptions, and one DQC000 per wrong field (the file, the field, the fix):
    a wrong exception holds nothing."""
    if raw is None:
        return [], []
    if not isinstance(raw, list) or not all(isinstance(x, Mapping) for x in raw):
        fix = "write each as [[tool.medallion.conventions.exceptions]] with " + ", ".join(
            EXCEPTION_FIELDS
        )
        return [], [_unread(f"{TABLE} exceptions must be an array of tables", fix)]
    headers = [
        f"line {n}"
        for n, line in enumerate(text.splitlines(), 1)
        if re.match(r"\s*\[\[\s*tool\.medallion\.conventions\.exceptions\s*\]\]", line)
    ]
    found: list[PackException] = []
    problems: list[Problem] = []
    for index, entry in enumerate(raw):
        where = f"pyproject.toml {headers[index] if index < len(headers) else TABLE}"
        said = len(problems)

        def bad(message: str, fix: str, where: str = where, index: int = index) -> None:
            problems.append(Problem("DQC000", where, f"exceptions[{index + 1}]: {message}", fix))

        for key in sorted(set(entry) - set(EXCEPTION_FIELDS), key=str):
            bad(f"unknown field {key!r}", f"use only {', '.join(EXCEPTION_FIELDS)}")
        for key in EXCEPTION_FIELDS:
            value = entry.get(key)
            if value is None or (isinstance(value, str) and not value.strip()):
                bad(f"no {key!r}", _EXCEPTION_FIXES[key])
        setting, value = entry.get("setting"), entry.get("value")
        if setting is not None and setting not in {*codes, *_DEFAULTS}:
            bad(f"setting {setting!r} is no setting a pack locks", _EXCEPTION_FIXES["setting"])
        elif setting in codes and value is not None and value not in (*RANK, "warn"):
            bad(
                f"value {value!r} of {setting} is not error, warning or off",
                'write value = "warning"',
            )
        expires = _day(entry.get("expires"))
        if entry.get("expires") is not None and expires is None:
            bad(
                f"expires = {value_text(entry['expires'])!r} is not a date",
                _EXCEPTION_FIXES["expires"],
            )
        if len(problems) == said and expires is not None:
            value = "warning" if value == "warn" else value
            found.append(PackException(str(setting), value, str(entry["reason"]),
                                       str(entry["approved_by"]), expires, where))  # fmt: skip
    return found, problems


def _day(value: object) -> date | None:
    """A TOML date (or date-time), or a YYYY-MM-DD text, as a date; None: it is none."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip()).date()
        except ValueError:
            return None
    return None


def _today(as_of: object) -> tuple[date, list[Problem]]:
    """The day exceptions are judged at: the table's as_of, else today (UTC)."""
    today = datetime.now(timezone.utc).date()
    if as_of is None:
        return today, []
    day = _day(as_of)
    if day is None:
        return today, [
            _unread(f"{TABLE} as_of = {as_of!r} is not a date", "write as_of = 2027-01-31")
        ]
    return day, []


def _hold(policy: Policy, one: PackException, today: date, forbidden: bool) -> PackException:
    """Apply one exception to `policy`; it, with its state."""
    key = one.setting if one.setting in _DEFAULTS else f"severity.{one.setting}"
    before = policy.settings.get(key)
    looser = before is not None and before.locked and _looser(key, one.value, before.value)
    pack = f"conventions pack {policy.pack}"
    if looser and forbidden:
        policy.problems.append(
            Problem(
                "DQC017",
                one.where,
                f"{one.said()}: {pack} allows no exception to {one.setting}",
                f"remove the exception and meet the pack's {before.value!r}",  # type: ignore[union-attr]
            )
        )
        return replace(one, state="forbidden")
    if today > one.expires:
        if looser:
            policy.problems.append(
                Problem(
                    "DQC017",
                    one.where,
                    f"{one.said()} expired on {one.expires.isoformat()}: {one.setting} is"
                    f" {before.value!r} again, which {pack} locks",  # type: ignore[union-attr]
                    "meet the pack's setting and remove the exception, or have the pack's"
                    " owners renew it (a later expires)",
                )
            )
        return replace(one, state="expired")
    if looser:
        policy.problems.append(
            Problem(
                "DQC017",
                one.where,
                f"{TABLE} holds {one.said()}: looser than {before.value!r}, which {pack} locks",  # type: ignore[union-attr]
                f"by {one.expires.isoformat()}, meet the pack's setting and remove the exception"
                " (after that day this is an error)",
                severity="warning",
            )
        )
    until = f"exception until {one.expires.isoformat()}, {one.where}"
    policy.settings[key] = Setting(one.value, until)
    return replace(one, state="held" if looser else "unneeded")


# --------------------------------------------------------------------------- previews


_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")


def _minor(version: str) -> tuple[int, int] | None:
    found = _VERSION.match(str(version))
    return (int(found[1]), int(found[2])) if found else None


def turns_at(since: str) -> str:
    """The version a tightening in preview since `since` turns: the next minor."""
    major, minor = _minor(since) or (0, 0)
    return f"{major}.{minor + 1}.0"


def _preview_problem(data: Mapping[str, Any], codes: Collection[str]) -> tuple[str, str] | None:
    """`preview` (by the version it came in: codes -> severity) and `no_exceptions`."""
    preview = data.get("preview", {})
    example = 'write preview: {"1.1.0": {DQC004: error}}'
    if not isinstance(preview, Mapping):
        return "'preview' must map the version a tightening came in to severities", example
    for since, severity in preview.items():
        if _minor(str(since)) is None:
            return f"preview: {since!r} is no version (major.minor.patch)", example
        if problem := _severity_problem(severity, codes):
            return f"preview {since}: {problem[0]}", problem[1]
    refused = data.get("no_exceptions", [])
    if not isinstance(refused, list) or any(x not in {*codes, *_DEFAULTS} for x in refused):
        return (
            "'no_exceptions' must list DQC codes, layers or quarantine_suffix",
            "write no_exceptions: [DQC005]",
        )
    return None


def _previewed(policy: Policy, preview: Mapping[str, Any], origin: str) -> None:
    """Tightenings in preview warn; from the next minor after they came in, they are the
    pack's severity."""
    now = _minor(policy.version)
    for since, severities in preview.items():
        turn = turns_at(str(since))
        for code, severity in (severities or {}).items():
            severity = "warning" if severity == "warn" else severity
            key = f"severity.{code}"
            before = policy.settings.get(key, Setting("off", "built-in"))
            was = "warning" if before.value == "warn" else str(before.value)
            if now is not None and now >= _minor(turn):  # type: ignore[operator]
                policy.settings[key] = Setting(severity, f"{origin}, preview since {since}")
            elif RANK[severity] > RANK.get(was, 0):
                shown = "warning" if RANK[severity] > 1 else severity
                policy.settings[key] = Setting(shown, f"{origin}, preview: {severity} from {turn}")
                policy.preview[code] = (severity, turn)


def in_preview(policy: Policy, code: str) -> bool:
    """Whether `code`'s severity is a tightening in preview (the project sets none of its own)."""
    setting = policy.settings.get(f"severity.{code}")
    return code in policy.preview and setting is not None and ", preview: " in setting.origin


def marked(policy: Policy, problems: list[Problem]) -> list[Problem]:
    """Each problem of a tightening still in preview says so, and when it turns."""
    out = []
    for problem in problems:
        if in_preview(policy, problem.code):
            severity, turn = policy.preview[problem.code]
            note = f" (preview: an {severity} from pack {policy.pack} {turn})"
            problem = replace(problem, message=problem.message + note)
        out.append(problem)
    return out


def value_text(value: Any) -> str:
    """A setting's value as a person reads it: a list or a table on one line."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={value_text(v)}" for k, v in value.items())
    return str(value)
