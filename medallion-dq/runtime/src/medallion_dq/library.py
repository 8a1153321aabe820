"""Rule libraries: named, parametrised rules a conventions pack ships, used from a rule file.

    rules:
      - name: valid_email
        use: medallion.email(column=email)
        action: drop

`use` names a pack and one of its rules, with the rule's parameters (keywords: a column name,
a text in quotes, a number, or a list of texts or numbers). The entry keeps its own `name`,
`action`, `threshold` and `owner`; the library gives the constraint, a description and, for
a rule whose parameters are all columns, its examples (the team may write its own instead).

A pack is an installed Python package that names itself in the entry point group
`medallion_dq.packs` and holds a `library.yml`; a project depends on it, so on Databricks it
is installed with the project's wheel and the runtime resolves a library rule there as here, with
no local engine. `medallion` is the built-in pack, this package's own `library.yml`.

A library rule's constraint is its SQL with `{parameter}` slots. A column is put in as an
identifier (backticked when it needs it), a text as a SQL string literal, a number as written
(digits, a sign, a decimal point, an exponent: what Spark reads as the same number): a value can
never add SQL of its own, and the result is checked as any constraint is (`constraints`).

A pack that is wrong says so, against its own file: a library rule whose constraint is no
constraint (checked with every slot filled), whose parameters or fields are wrong, or a policy
with a layer or key no one reads, is a problem of `pack <name> library.yml` (or policy.yml),
with the fix for the pack's owners, wherever a rule file uses it.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

import sqlglot
import yaml
from sqlglot import TokenType

from medallion_dq.constraints import constraint_errors
from medallion_dq.problems import MedallionDQError
from medallion_dq.rule_fields import LAYERS
from medallion_dq.text import sql_column, sql_string
from medallion_dq.user_yaml import load_yaml

__all__ = [
    "BUILT_IN",
    "KINDS",
    "PACKS_GROUP",
    "Library",
    "LibraryError",
    "LibraryRule",
    "expand",
    "for_owners",
    "is_pack_file",
    "library",
    "pack_file",
    "pack_folder",
    "pack_thresholds",
    "pack_version",
    "trying",
    "yaml_said",
]

PACKS_GROUP = "medallion_dq.packs"
BUILT_IN = "medallion"
LIBRARY_FILE = "library.yml"
POLICY_FILE = "policy.yml"
#: What a parameter takes: a column of the dataset, a text, a number, a list of either.
KINDS = ("column", "text", "number", "texts", "numbers")
#: The fields of a library rule, and of its examples.
RULE_KEYS = ("name", "params", "constraint", "description", "owner", "examples")
EXAMPLE_KEYS = ("pass", "fail", "with")
_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A number as SQL writes it, in ASCII digits: Python's 0x10, 1_000 or 1j are no SQL numbers.
_NUMBER = re.compile(r"([+-]?)\s*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
#: The most digits a Spark decimal holds: a longer number without an exponent is refused by
#: Spark's parser; one with an exponent is a double, which must be finite and not vanish.
MAX_DIGITS = 38
_USE = "write use: <pack>.<rule>(<parameter>=<value>, ...), e.g. medallion.not_null(column=id)"
#: Filled into a library rule's slots to check its constraint before any team uses it.
_PLACEHOLDER: dict[str, object] = {"text": "x", "number": "0", "texts": ["x"], "numbers": ["0"]}
_WANTED = {
    "column": "a column name",
    "text": "a text in quotes",
    "number": "a number, as SQL writes it (e.g. 10, -0.5, 1e3)",
    "texts": "a list of texts, e.g. ['DE', 'FR']",
    "numbers": "a list of numbers, e.g. [1, 2]",
}


def pack_file(pack: str, name: str) -> str:
    """Where a problem of pack `pack`'s own file `name` is said: "pack acme library.yml"."""
    return f"pack {pack} {name}"


def is_pack_file(where: str) -> bool:
    """Whether a problem's `file` is a pack's (no rule file's path starts so)."""
    return where.startswith("pack ")


def for_owners(fix: str) -> str:
    """The fix of a pack's own file, as a team that uses the pack reads it."""
    return f"{fix} (the pack's owners fix it: tell them, or pin the version before)"


class LibraryError(MedallionDQError, ValueError):
    """A `use:` that does not resolve, or a pack that cannot be found or read: what is wrong,
    and the fix. `file` (and `rule`): the pack's own file (and library rule) when the pack is
    wrong, not the `use:` (None); `code`: the problem's code there."""

    def __init__(
        self,
        message: str,
        fix: str,
        *,
        file: str | None = None,
        rule: str | None = None,
        code: str = "DQ031",
    ) -> None:
        where = f"{file}: " + (f"rule {rule!r}: " if rule is not None else "") if file else ""
        super().__init__(f"{where}{message}; {fix}")
        self.message, self.fix, self.file, self.rule, self.code = message, fix, file, rule, code


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


class Library(dict[str, LibraryRule]):
    """A pack's rules by name; `broken`: the rules that do not read, each with its problem
    (said where a rule file uses it, and by the pack's own tests)."""

    def __init__(self, rules: Mapping[str, LibraryRule], broken: Mapping[str, LibraryError]):
        super().__init__(rules)
        self.broken = dict(broken)


def _sql(kind: str, value: object) -> str:
    if kind == "column":
        return sql_column(str(value))
    if kind in ("texts", "numbers"):
        assert isinstance(value, (list, tuple))
        return ", ".join(_sql(kind[:-1], item) for item in value)
    if kind == "number":  # as written; a negative one in parentheses: `x - -1` holds no comment
        text = str(value)
        return f"({text})" if text.startswith("-") else text
    return sql_string(str(value))


#: Packs read from a folder instead of their installed version: a candidate tried (`trying`).
_TRIED: dict[str, tuple[Traversable, str]] = {}


@contextmanager
def trying(pack: str, folder: Traversable, version: str) -> Iterator[None]:
    """Within it, pack `pack` is the one in `folder` at `version` (a candidate release,
    tried on a project before its pin moves), not the installed one. Nested, the outer one
    holds again after (a team's own pin, with a candidate tried inside it)."""
    outer = _TRIED.get(pack)
    _TRIED[pack] = (folder, version)
    library.cache_clear()
    pack_thresholds.cache_clear()
    try:
        yield
    finally:
        if outer is None:
            _TRIED.pop(pack, None)
        else:
            _TRIED[pack] = outer
        library.cache_clear()
        pack_thresholds.cache_clear()


def pack_folder(pack: str) -> Traversable:
    """The folder of installed pack `pack` (LibraryError: none such, or it does not import)."""
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
    """The installed version of the distribution that holds pack `pack` ("" when unknown)."""
    from medallion_dq import __version__

    if pack in _TRIED:
        return _TRIED[pack][1]
    if pack == BUILT_IN:
        return __version__
    found = [e for e in entry_points(group=PACKS_GROUP) if e.name == pack]
    dist = found[0].dist if found else None
    return dist.version if dist is not None else ""


def yaml_said(error: Exception) -> str:
    """A YAML error of a pack's file as one line: where and what ("line 3, column 5: duplicate
    key 'silver'"), not only the first line PyYAML writes ("while reading a mapping")."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem:
        mark = error.problem_mark
        return (f"line {mark.line + 1}, column {mark.column + 1}: " if mark else "") + error.problem
    return (str(error).splitlines() or [type(error).__name__])[0]


def _read_yaml(pack: str, name: str) -> object:
    """A pack's YAML file as written (absent: None); a LibraryError against it when it does
    not read."""
    path = pack_folder(pack) / name
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        return load_yaml(text) if text.strip() else None
    except Exception as error:  # unreadable or not YAML: the pack's owners fix it
        said = yaml_said(error)
        raise LibraryError(
            said, for_owners(f"correct {name}"), file=pack_file(pack, name)
        ) from None


@cache
def pack_thresholds(pack: str) -> dict[str, float]:
    """By layer, the failed fraction the gate allows a rule whose rule file sets no threshold:
    `thresholds:` of the pack's policy.yml (none: empty). The gate reads it on Databricks as
    here; `check` validates the rest of the policy."""
    data = _read_yaml(pack, POLICY_FILE) or {}
    where = {"file": pack_file(pack, POLICY_FILE)}
    if not isinstance(data, dict):
        fix = for_owners("write severity:, thresholds: ... keys")
        raise LibraryError("the top level must be a mapping", fix, **where)
    table = data.get("thresholds", {})
    if not isinstance(table, Mapping):
        fix = for_owners("write thresholds: {silver: 0.05, gold: 0}")
        raise LibraryError("'thresholds' must map layers to fractions", fix, **where)
    out: dict[str, float] = {}
    for layer, value in table.items():
        if layer not in LAYERS:  # a misspelt layer would leave the real one without its default
            fix = for_owners(f"use {', '.join(LAYERS)}")
            raise LibraryError(f"thresholds: unknown layer {layer!r}", fix, **where)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            message = f"thresholds.{layer} = {_shown(value)} is not a fraction between 0 and 1"
            raise LibraryError(message, for_owners(f"write {layer}: 0.05 (5 %)"), **where)
        out[str(layer)] = float(value)
    return out


@cache
def library(pack: str) -> Library:
    """The rules of pack `pack` by name (read once per process), and those that do not read."""
    where = {"file": pack_file(pack, LIBRARY_FILE)}
    if not (pack_folder(pack) / LIBRARY_FILE).is_file():
        raise LibraryError(f"pack {pack!r} has no {LIBRARY_FILE}", "reinstall the pack")
    data = _read_yaml(pack, LIBRARY_FILE)
    entries = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        fix = for_owners("write a list 'rules:' of '- name: ...' entries")
        raise LibraryError("it has no list 'rules:'", fix, **where)
    assert isinstance(data, dict)
    if unknown := sorted(set(data) - {"rules"}, key=str):
        fix = for_owners("remove it: a library holds its rules under 'rules:'")
        raise LibraryError(f"unknown key {unknown[0]!r}", fix, **where)
    rules: dict[str, LibraryRule] = {}
    broken: dict[str, LibraryError] = {}
    for number, entry in enumerate(entries, 1):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            fix = for_owners("give each rule a name: (a word)")
            raise LibraryError(f"rule #{number} has no name ({entry!r:.60})", fix, **where)
        try:
            if name in rules or name in broken:
                fix = for_owners("give each rule its own name")
                raise LibraryError("two rules of this name", fix, **where, rule=name)
            rules[name] = _library_rule(pack, name, entry)
        except LibraryError as error:
            rules.pop(name, None)
            broken[name] = error
    return Library(rules, broken)


def _library_rule(pack: str, name: str, entry: dict[str, Any]) -> LibraryRule:
    """One rule of the library, or the LibraryError that says, against the pack's file and
    the rule, what is wrong with it."""

    def wrong(message: str, fix: str, code: str = "DQ031") -> LibraryError:
        where = pack_file(pack, LIBRARY_FILE)
        return LibraryError(message, for_owners(fix), file=where, rule=name, code=code)

    if not _WORD.fullmatch(name):
        raise wrong("the name is not a word: no `use:` can call it", "use letters, digits and _")
    if unknown := sorted(set(entry) - set(RULE_KEYS), key=str):
        raise wrong(f"unknown field {unknown[0]!r}", f"use only {', '.join(RULE_KEYS)}")
    params = entry.get("params") or {}
    kinds = ", ".join(KINDS)
    if not isinstance(params, dict) or any(k not in KINDS for k in params.values()):
        raise wrong(f"params must map names to {kinds}", "write params: {column: column}")
    if bad := [p for p in params if not isinstance(p, str) or not _WORD.fullmatch(p)]:
        raise wrong(f"parameter {bad[0]!r} is not a word", "name parameters with letters and _")
    constraint = entry.get("constraint")
    if not isinstance(constraint, str) or not constraint.strip():
        raise wrong("it has no constraint", "write constraint: with a {slot} for each parameter")
    # A brace that names no parameter ({2,} in a pattern) stays as written.
    if missing := sorted(set(params) - set(_SLOT.findall(constraint))):
        raise wrong(f"the constraint has no slot for {missing}", "write {<parameter>} for each")
    examples = entry.get("examples")
    if examples is not None and (
        not isinstance(examples, dict) or set(examples) - set(EXAMPLE_KEYS)
    ):
        raise wrong(
            "examples must map pass, fail and with to rows", "write examples: {pass: [...]}"
        )
    rule = LibraryRule(
        pack=pack,
        name=name,
        params=dict(params),
        constraint=constraint,
        description=str(entry.get("description") or ""),
        owner=str(entry.get("owner") or ""),
        examples=examples,
    )
    # Every slot filled, the constraint is checked as any rule's (its syntax, what it calls):
    # a value fills a slot as a literal, so what is wrong then is the pack's, whatever the use.
    filled = rule.bind(
        {p: p if kind == "column" else _PLACEHOLDER[kind] for p, kind in params.items()}
    )
    if errors := constraint_errors(filled):
        code, message, fix = errors[0]
        raise wrong(f"constraint: {message}", fix, code)
    if stray := _stray_slot(filled):  # a typo of a parameter: SQL has no braces
        known = ", ".join(params) or "none"
        raise wrong(f"constraint: {stray} names no parameter", f"use one of {known}", "DQ007")
    return rule


def _stray_slot(constraint: str) -> str:
    """The first `{word}` of `constraint` outside its quotes (a slot naming no parameter), or
    ""; one inside quotes (a pattern's `{2,}`) is text."""
    tokens = sqlglot.tokenize(constraint, read="spark")
    for brace, word in zip(tokens, tokens[1:], strict=False):
        if brace.token_type == TokenType.L_BRACE:
            return "{" + word.text + "}"
    return ""


def _shown(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _number(text: str) -> str:
    """A number as SQL writes it, from its text in `use:`; ValueError: none, or out of range."""
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        raise ValueError(_WANTED["number"])
    sign, digits = match[1].replace("+", ""), match[2]
    number = sign + digits
    mantissa, _, exponent = digits.lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    if exponent:  # Spark reads it as a double: infinite or vanished, it is no longer the number
        value = float(number)
        if not math.isfinite(value) or (value == 0 and mantissa.strip("0.")):
            raise ValueError(f"a number a double holds (4.9e-324 to 1.7e308), not {number}")
    elif len(whole.lstrip("0")) + len(fraction) > MAX_DIGITS:
        raise ValueError(f"a number of at most {MAX_DIGITS} digits, or with an exponent (1e40)")
    return number


def _value(kind: str, node: ast.expr, use: str) -> object:
    """The parameter's value as written in `use:`, or ValueError saying what it takes."""
    written = ast.get_source_segment(use, node) or ""
    if kind in ("texts", "numbers"):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            return [_value(kind[:-1], item, use) for item in node.elts]
    elif kind == "number":
        return _number(written)
    elif kind == "column" and isinstance(node, ast.Name):
        return written  # as written: Python would read a full-width `ｉｄ` as `id`
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value  # a column in quotes: any name but an empty or unprintable one
        if kind == "text" or (text and text.isprintable()):
            return text
    raise ValueError(_WANTED[kind])


def _call(use: str) -> ast.Call:
    """`use` read as `<pack>.<rule>(...)`: a LibraryError saying where it is not."""
    try:
        call = ast.parse(use.strip(), mode="eval").body
    except SyntaxError as error:
        at = use.strip()[(error.offset or 1) - 1 : (error.offset or 1)] if error.lineno == 1 else ""
        near = f" at character {error.offset} ({at!r})" if at else ""
        raise LibraryError(
            f"use {use!r} is not <pack>.<rule>(...): unreadable{near}", _USE
        ) from None
    if isinstance(call, ast.Attribute):  # `medallion.not_null`, without parameters
        call = ast.Call(func=call, args=[], keywords=[])
    if not isinstance(call, ast.Call):
        raise LibraryError(f"use {use!r} is not <pack>.<rule>(...)", _USE)
    if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)):
        raise LibraryError(f"use {use!r} names no pack", _USE)
    return call


def expand(use: str) -> tuple[dict[str, Any], LibraryRule]:
    """The rule-file fields `use` stands for (`constraint`, `description` and, when the
    rule's parameters are all columns, `examples`) and the library rule. A `use` that does
    not resolve raises LibraryError, whose message ends with the fix; one whose library rule is
    wrong raises the pack's (`file`, `rule`)."""
    call = _call(use)
    use = use.strip()  # the offsets of the nodes are in the stripped text
    assert isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
    pack, name = call.func.value.id, call.func.attr
    rules = library(pack)
    if name in rules.broken:
        raise rules.broken[name]
    if name not in rules:
        fix = f"use one of {', '.join(sorted(rules))}" if rules else "it has none: remove the use"
        raise LibraryError(f"pack {pack!r} has no rule {name!r}", fix)
    rule = rules[name]
    signature = ", ".join(f"{p}=<{kind}>" for p, kind in rule.params.items())
    write = f"write {pack}.{name}({signature})"
    if call.args or any(k.arg is None for k in call.keywords):
        raise LibraryError(f"use {use!r}: a parameter without its name", write)
    names = [k.arg for k in call.keywords if k.arg is not None]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise LibraryError(
            f"use {use!r}: parameter {twice[0]!r} given twice", f"give each once: {write}"
        )
    given = {k.arg: k.value for k in call.keywords if k.arg is not None}
    unknown, missing = sorted(set(given) - set(rule.params)), sorted(set(rule.params) - set(given))
    if unknown or missing:
        wrong = f"unknown parameter {unknown}" if unknown else f"missing parameter {missing}"
        raise LibraryError(f"use {use!r}: {wrong}", write)
    values: dict[str, object] = {}
    for param, node in given.items():
        try:
            values[param] = _value(rule.params[param], node, use)
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
