"""Rule libraries: named, parametrised rules a conventions pack ships, used from a rule file.

    rules:
      - name: valid_email
        use: medallion.email(column=email)
        action: drop

``use`` names a pack and one of its rules, with the rule's parameters (keywords: a column name,
a text in quotes, a number, or a list of texts or numbers). The entry keeps its own ``name``,
``action``, ``threshold`` and ``owner``; the library gives the constraint, a description and, for
a rule whose parameters are all columns, its examples (the team may write its own instead).

A pack is an installed Python package that names itself in the entry point group
``medallion_dq.packs`` and holds a ``library.yml``; a project depends on it, so on Databricks it
is installed with the project's wheel and the runtime resolves a library rule there as here, with
no local engine. ``medallion`` is the built-in pack, this package's own ``library.yml``.

A library rule's constraint is its SQL with ``{parameter}`` slots. A column is put in as an
identifier (backticked when it needs it), a text as a SQL string literal: a value can never add
SQL of its own, and the result is checked as any constraint is (``constraints``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from medallion_dq.problems import MedallionDQError
from medallion_dq.text import sql_string
from medallion_dq.user_yaml import load_yaml

__all__ = [
    "BUILT_IN",
    "KINDS",
    "PACKS_GROUP",
    "LibraryError",
    "LibraryRule",
    "expand",
    "library",
    "pack_folder",
    "pack_thresholds",
    "pack_version",
    "trying",
]

PACKS_GROUP = "medallion_dq.packs"
BUILT_IN = "medallion"
LIBRARY_FILE = "library.yml"
POLICY_FILE = "policy.yml"
#: What a parameter takes: a column of the dataset, a text, a number, a list of either.
KINDS = ("column", "text", "number", "texts", "numbers")
_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_USE = "write use: <pack>.<rule>(<parameter>=<value>, ...), e.g. medallion.not_null(column=id)"
_PACK_FIX = "the pack is broken: tell its owners, or pin the version before"


class LibraryError(MedallionDQError, ValueError):
    """A `use:` that does not resolve, or a pack that cannot be found or read: what is wrong,
    and the fix."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(f"{message}; {fix}")
        self.message, self.fix = message, fix


@dataclass(frozen=True)
class LibraryRule:
    """One rule of a pack's library, as its library.yml writes it."""

    pack: str
    name: str
    params: Mapping[str, str]  # parameter -> its kind (KINDS)
    constraint: str  # SQL with {parameter} slots
    description: str = ""
    owner: str = ""  # who maintains the rule's definition (the pack's team)
    examples: Mapping[str, Any] | None = None  # pass / fail rows keyed by column parameters

    def bind(self, values: Mapping[str, object]) -> str:
        """The constraint with each slot filled: columns as identifiers, values as literals."""
        return _SLOT.sub(
            lambda m: _sql(self.params[m[1]], values[m[1]]) if m[1] in self.params else m[0],
            self.constraint,
        )


def _sql(kind: str, value: object) -> str:
    if kind == "column":
        text = str(value)
        return text if _IDENTIFIER.match(text) else "`" + text.replace("`", "``") + "`"
    if kind in ("texts", "numbers"):
        assert isinstance(value, (list, tuple))
        return ", ".join(_sql(kind[:-1], item) for item in value)
    return sql_string(value) if isinstance(value, str) else repr(value)


#: Packs read from a folder instead of their installed version: a candidate tried (`trying`).
_TRIED: dict[str, tuple[Traversable, str]] = {}


@contextmanager
def trying(pack: str, folder: Traversable, version: str) -> Iterator[None]:
    """Within it, pack ``pack`` is the one in ``folder`` at ``version`` (a candidate release,
    tried on a project before its pin moves), not the installed one."""
    _TRIED[pack] = (folder, version)
    library.cache_clear()
    pack_thresholds.cache_clear()
    try:
        yield
    finally:
        _TRIED.pop(pack, None)
        library.cache_clear()
        pack_thresholds.cache_clear()


def pack_folder(pack: str) -> Traversable:
    """The folder of installed pack ``pack`` (LibraryError: none such, or it does not import)."""
    if pack in _TRIED:
        return _TRIED[pack][0]
    if pack == BUILT_IN:
        return files("medallion_dq")
    found = [e for e in entry_points(group=PACKS_GROUP) if e.name == pack]
    if not found:
        installed = sorted({BUILT_IN, *(e.name for e in entry_points(group=PACKS_GROUP))})
        raise LibraryError(
            f"no conventions pack {pack!r} is installed (installed: {', '.join(installed)})",
            "add the pack to the project's dependencies, or correct the name",
        )
    try:
        return files(found[0].value)
    except Exception as error:  # an entry point naming no importable package: a broken install
        raise LibraryError(
            f"pack {pack!r} names package {found[0].value!r}, which does not import"
            f" ({type(error).__name__}: {str(error)[:120]})",
            "reinstall the pack (pip install --force-reinstall <its distribution>)",
        ) from None


def pack_version(pack: str) -> str:
    """The installed version of the distribution that holds pack ``pack`` ("" when unknown)."""
    from medallion_dq import __version__

    if pack in _TRIED:
        return _TRIED[pack][1]
    if pack == BUILT_IN:
        return __version__
    found = [e for e in entry_points(group=PACKS_GROUP) if e.name == pack]
    dist = found[0].dist if found else None
    return dist.version if dist is not None else ""


@cache
def pack_thresholds(pack: str) -> dict[str, float]:
    """By layer, the failed fraction the gate allows a rule whose rule file sets no threshold:
    ``thresholds:`` of the pack's policy.yml (none: empty). The gate reads it on Databricks as
    here; `check` validates the rest of the policy."""
    path = pack_folder(pack) / POLICY_FILE
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        data = load_yaml(text) if text.strip() else {}
    except Exception as error:  # unreadable or not YAML: the pack is broken
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise LibraryError(f"pack {pack!r}: {POLICY_FILE}: {first}", _PACK_FIX) from None
    table = data.get("thresholds", {}) if isinstance(data, dict) else None
    if not isinstance(table, Mapping):
        raise LibraryError(
            f"pack {pack!r}: {POLICY_FILE}: 'thresholds' must map layers to fractions", _PACK_FIX
        )
    out: dict[str, float] = {}
    for layer, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise LibraryError(
                f"pack {pack!r}: {POLICY_FILE}: thresholds.{layer} = {_shown(value)} is not a"
                " fraction between 0 and 1",
                _PACK_FIX,
            )
        out[str(layer)] = float(value)
    return out


@cache
def library(pack: str) -> dict[str, LibraryRule]:
    """The rules of pack ``pack`` by name (read once per process)."""
    path = pack_folder(pack) / LIBRARY_FILE
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LibraryError(f"pack {pack!r} has no {LIBRARY_FILE}", "reinstall the pack") from None
    except Exception as error:  # a YAML error of the pack's own file: the pack is broken
        first = str(error).splitlines()[0]
        raise LibraryError(f"pack {pack!r}: {LIBRARY_FILE}: {first}", _PACK_FIX) from None
    entries = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise LibraryError(f"pack {pack!r}: {LIBRARY_FILE} has no list 'rules:'", _PACK_FIX)
    rules: dict[str, LibraryRule] = {}
    for entry in entries:
        rule = _library_rule(pack, entry)
        rules[rule.name] = rule
    return rules


def _library_rule(pack: str, entry: object) -> LibraryRule:
    where = f"pack {pack!r}: {LIBRARY_FILE}"
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise LibraryError(f"{where}: a rule with no name ({entry!r:.60})", _PACK_FIX)
    name, params = entry["name"], entry.get("params") or {}
    if not isinstance(params, dict) or any(k not in KINDS for k in params.values()):
        kinds = ", ".join(KINDS)
        raise LibraryError(f"{where}: rule {name!r}: params must map names to {kinds}", _PACK_FIX)
    constraint = entry.get("constraint")
    if not isinstance(constraint, str) or not constraint.strip():
        raise LibraryError(f"{where}: rule {name!r} has no constraint", _PACK_FIX)
    # A brace that names no parameter ({2,} in a pattern) stays as written.
    missing = sorted(set(params) - set(_SLOT.findall(constraint)))
    if missing:
        message = f"{where}: rule {name!r}: the constraint has no slot for {missing}"
        raise LibraryError(message, _PACK_FIX)
    examples = entry.get("examples")
    return LibraryRule(
        pack=pack,
        name=name,
        params=dict(params),
        constraint=constraint,
        description=str(entry.get("description") or ""),
        owner=str(entry.get("owner") or ""),
        examples=examples if isinstance(examples, dict) else None,
    )


def _shown(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _value(kind: str, node: ast.expr) -> object:
    """The parameter's value as written in `use:`, or ValueError saying what it takes."""
    if kind == "column" and isinstance(node, ast.Name):
        return node.id
    if kind in ("texts", "numbers") and isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return [_value(kind[:-1], item) for item in node.elts]
    if isinstance(node, ast.Constant):
        value = node.value
        if kind in ("column", "text") and isinstance(value, str):
            return value
        if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    wanted = {
        "column": "a column name",
        "text": "a text in quotes",
        "number": "a number",
        "texts": "a list of texts, e.g. ['DE', 'FR']",
        "numbers": "a list of numbers, e.g. [1, 2]",
    }[kind]
    raise ValueError(wanted)


def expand(use: str) -> tuple[dict[str, Any], LibraryRule]:
    """The rule-file fields ``use`` stands for (``constraint``, ``description`` and, when the
    rule's parameters are all columns, ``examples``) and the library rule. A ``use`` that does
    not resolve raises LibraryError, whose message ends with the fix."""
    try:
        call = ast.parse(use.strip(), mode="eval").body
    except SyntaxError:
        raise LibraryError(f"use {use!r} is not <pack>.<rule>(...)", _USE) from None
    if isinstance(call, ast.Attribute):  # `medallion.not_null`, without parameters
        call = ast.Call(func=call, args=[], keywords=[])
    if not isinstance(call, ast.Call):
        raise LibraryError(f"use {use!r} is not <pack>.<rule>(...)", _USE)
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        raise LibraryError(f"use {use!r} names no pack", _USE)
    pack, name = func.value.id, func.attr
    rules = library(pack)
    if name not in rules:
        raise LibraryError(
            f"pack {pack!r} has no rule {name!r}", f"use one of {', '.join(sorted(rules))}"
        )
    rule = rules[name]
    signature = ", ".join(f"{p}=<{kind}>" for p, kind in rule.params.items())
    write = f"write {pack}.{name}({signature})"
    if call.args or any(k.arg is None for k in call.keywords):
        raise LibraryError(f"use {use!r}: a parameter without its name", write)
    given = {k.arg: k.value for k in call.keywords if k.arg is not None}
    unknown, missing = sorted(set(given) - set(rule.params)), sorted(set(rule.params) - set(given))
    if unknown or missing:
        wrong = f"unknown parameter {unknown}" if unknown else f"missing parameter {missing}"
        raise LibraryError(f"use {use!r}: {wrong}", write)
    values: dict[str, object] = {}
    for param, node in given.items():
        try:
            values[param] = _value(rule.params[param], node)
        except ValueError as wanted:
            raise LibraryError(f"use {use!r}: {param} takes {wanted}", write) from None
    fields: dict[str, Any] = {
        "constraint": rule.bind(values),
        "description": _SLOT.sub(lambda m: _shown(values.get(m[1], m[0])), rule.description),
    }
    columns = {p: str(v) for p, v in values.items() if rule.params[p] == "column"}
    if rule.examples and len(columns) == len(rule.params):  # rows keyed by the team's columns
        fields["examples"] = {
            expect: [{columns.get(k, k): v for k, v in row.items()} for row in rows]
            for expect, rows in rule.examples.items()
            if isinstance(rows, list) and all(isinstance(row, dict) for row in rows)
        }
    return fields, rule
