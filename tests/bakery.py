"""Bake the template and inspect what it produced: shared by the template's own tests.

Every bake uses a cookiecutter config file in a temporary folder, so that no test reads the
user's ~/.cookiecutterrc or writes replay files into the home folder.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

TEMPLATE_DIR = Path(__file__).resolve().parents[1]
TESTS_DIR = TEMPLATE_DIR / "tests"
MANIFEST = TESTS_DIR / "expected_files.txt"

DEFAULT_SLUG = "acme-orders"
DEFAULT_PACKAGE = "acme_orders"

# Never template content: caches a developer's tools may leave in the template folder.
IGNORED_PARTS = frozenset({"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".nox"})

# Databricks job "dynamic value references" look like Jinja and must survive the bake.
DATABRICKS_REF = re.compile(
    r"\{\{\s*(?:(?:tasks?|job|workspace|backfill)\.[\w.\[\]-]+"
    r"|job_run[\w.]*|job_id|run_id|parent_run_id|task_key|task_retry_count|start_date"
    r"|start_time)\s*\}\}"
)
# GitHub Actions expressions, allowed in .github/ only.
GITHUB_EXPR = re.compile(r"\$\{\{[^{}]*\}\}")


def write_config(folder: Path) -> Path:
    """Write a cookiecutter user config whose replay and clone folders live in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "cookiecutter-config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cookiecutters_dir": str(folder / "cookiecutters"),
                "replay_dir": str(folder / "replay"),
                "default_context": {},
            }
        ),
        encoding="utf-8",
    )
    return config


def bake(output_dir: Path, config_file: Path, **answers: Any) -> Path:
    """Bake the template in-process with ``answers`` and return the project folder."""
    from cookiecutter.main import cookiecutter

    project = cookiecutter(
        str(TEMPLATE_DIR),
        no_input=True,
        extra_context=answers,
        output_dir=str(output_dir),
        config_file=str(config_file),
    )
    return Path(project)


def bake_cli(
    output_dir: Path,
    config_file: Path,
    answers: Mapping[str, Any],
    directory: str | None = None,
    env: Mapping[str, str] | None = None,
):
    """Bake through the ``cookiecutter`` command line: answers as key=value arguments;
    `directory`: the template in that folder of the repository (``pack``); `env`: variables
    set for it."""
    command = [
        sys.executable,
        "-m",
        "cookiecutter",
        str(TEMPLATE_DIR),
        *(["--directory", directory] if directory else []),
        "--no-input",
        "--config-file",
        str(config_file),
        "--output-dir",
        str(output_dir),
        *(f"{key}={value}" for key, value in answers.items()),
    ]
    return _run(command, env)


def bake_api_subprocess(output_dir: Path, config_file: Path, answers: Mapping[str, Any]):
    """Bake through the Python API in a child process, for answers that are not strings."""
    script = (
        "import json, sys\n"
        "from cookiecutter.main import cookiecutter\n"
        "cookiecutter(sys.argv[1], no_input=True, extra_context=json.loads(sys.argv[2]),\n"
        "             output_dir=sys.argv[3], config_file=sys.argv[4])\n"
    )
    command = [
        sys.executable,
        "-c",
        script,
        str(TEMPLATE_DIR),
        json.dumps(dict(answers)),
        str(output_dir),
        str(config_file),
    ]
    return _run(command)


def _run(
    command: list[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="backslashreplace",
        timeout=300,
        check=False,
        env={**_child_env(), **(env or {})},
    )


def _child_env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


# Commits the tests make: a fixed author, no user or system git config (hooks, signing).
GIT_ENV = {
    "GIT_AUTHOR_NAME": "template-tests",
    "GIT_AUTHOR_EMAIL": "template-tests@localhost",
    "GIT_COMMITTER_NAME": "template-tests",
    "GIT_COMMITTER_EMAIL": "template-tests@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """What ``git -C repo args`` prints; a failure fails the test with git's message."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    """Commit every file of ``repo`` (a new repository if it is none yet); return the commit."""
    if not (repo / ".git").exists():
        git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def template_repository(folder: Path) -> Path:
    """This checkout's files (tracked, and new ones not ignored) as one commit of a new git
    repository in ``folder``: a template repository as a team bakes from it."""
    listed = git(TEMPLATE_DIR, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    for name in filter(None, listed.split("\0")):
        if (TEMPLATE_DIR / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(TEMPLATE_DIR / name, folder / name)
    commit_all(folder, "the template")
    return folder


def iter_files(root: Path) -> Iterator[Path]:
    """Yield every generated file under ``root`` (not folders), skipping tool caches."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if IGNORED_PARTS.intersection(relative.parts) or path.suffix == ".pyc":
            continue
        if path.is_file():
            yield path


def file_set(root: Path) -> set[str]:
    """Relative POSIX paths of every generated file under ``root``."""
    return {path.relative_to(root).as_posix() for path in iter_files(root)}


def read_manifest(path: Path = MANIFEST) -> set[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def describe_difference(actual: set[str], expected: set[str], expected_name: str) -> str:
    """A readable diff of two file sets: what a bake added and what it is missing."""
    added, missing = sorted(actual - expected), sorted(expected - actual)
    lines = [f"generated files differ from {expected_name}:"]
    lines += [f"  + {path}   (generated, not expected)" for path in added]
    lines += [f"  - {path}   (expected, not generated)" for path in missing]
    lines.append("If intended, regenerate the manifest: python tests/make_manifest.py")
    return "\n".join(lines)


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is binary or not UTF-8."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _load_json_or_lines(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        # JSON lines (landing fixtures): every non-empty line is one document.
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def parse(path: Path, text: str) -> Any:
    """Parse a Python, YAML, TOML or JSON file; raise on a syntax error. Others: None."""
    suffix = path.suffix
    if suffix == ".py":
        with warnings.catch_warnings():
            warnings.simplefilter("error", SyntaxWarning)
            return compile(text, str(path), "exec", dont_inherit=True)
    if suffix in (".yml", ".yaml"):
        return list(yaml.safe_load_all(text))
    if suffix == ".toml":
        return tomllib.loads(text)
    if suffix == ".json":
        return _load_json_or_lines(text)
    return None


# Landing data is dirty on purpose (a malformed record tests bronze's rescue): not parsed.
UNPARSED_PREFIXES = ("fixtures/",)


def parse_problems(root: Path) -> list[str]:
    """Every Python, YAML, TOML and JSON file that does not parse, with the error."""
    problems = []
    for path in iter_files(root):
        text = read_text(path)
        if text is None or path.relative_to(root).as_posix().startswith(UNPARSED_PREFIXES):
            continue
        try:
            parse(path, text)
        except Exception as error:  # report all of them, whatever the parser raises
            relative = path.relative_to(root).as_posix()
            problems.append(f"{relative}: {type(error).__name__}: {error}")
    return problems


COOKIECUTTER_EXPR = re.compile(r"\{\{-?\s*cookiecutter\b")


def _blank_strings(text: str) -> str:
    """``text`` with every string literal blanked: ``{{`` there is an f-string/format escape."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans, depth, opened = [], 0, (0, 0)
    for token in tokens:
        name = tokenize.tok_name[token.type]
        if name == "STRING":
            spans.append((token.start, token.end))
        elif name == "FSTRING_START":  # Python 3.12+
            opened = token.start if depth == 0 else opened
            depth += 1
        elif name == "FSTRING_END":
            depth -= 1
            if depth == 0:
                spans.append((opened, token.end))
    chars = list(text)
    for (row1, col1), (row2, col2) in spans:
        for offset in range(starts[row1 - 1] + col1, starts[row2 - 1] + col2):
            if chars[offset] not in "\r\n":
                chars[offset] = " "
    return "".join(chars)


def markup_problems(root: Path) -> tuple[list[str], list[str]]:
    """Leftover ``{{``/``{%`` markup (problems) and the Databricks references found.

    Databricks references are allowed in resources/*.yml only; ``${{ }}`` in .github/ only;
    ``{{`` inside a Python string is a format escape, unless ``cookiecutter`` follows it.
    """
    problems: list[str] = []
    references: list[str] = []
    for path in iter_files(root):
        text = read_text(path)
        if text is None:
            continue
        relative = path.relative_to(root).as_posix()
        in_resources = relative.startswith("resources/") and path.suffix in (".yml", ".yaml")
        checked = _blank_strings(text) if path.suffix == ".py" else text
        pairs = zip(text.splitlines(), checked.splitlines(), strict=True)
        for number, (line, rest) in enumerate(pairs, start=1):
            if "{%" in line or COOKIECUTTER_EXPR.search(line):
                problems.append(f"{relative}:{number}: Jinja markup left: {line.strip()[:120]}")
                continue
            if relative.startswith(".github/"):
                rest = GITHUB_EXPR.sub("", rest)
            for match in DATABRICKS_REF.finditer(rest):
                if in_resources:
                    references.append(f"{relative}:{number}: {match.group(0)}")
                else:
                    problems.append(
                        f"{relative}:{number}: Databricks reference outside resources/*.yml: "
                        f"{match.group(0)}"
                    )
            if "{{" in DATABRICKS_REF.sub("", rest):
                problems.append(f"{relative}:{number}: '{{{{' left: {line.strip()[:120]}")
    return problems, references


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(data, (list, tuple)):
        for item in data:
            yield from _strings(item)


def _python_inert(text: str, value: str, canary: str) -> str | None:
    """None when ``canary`` occurs only in string literals and comments, and ``value`` whole."""
    kinds = {tokenize.STRING, tokenize.COMMENT}
    for name in ("FSTRING_MIDDLE", "TSTRING_MIDDLE"):  # Python 3.12+ splits f-strings
        if hasattr(tokenize, name):
            kinds.add(getattr(tokenize, name))
    comments = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if canary in token.string and token.type not in kinds:
            return f"the answer reached code: {tokenize.tok_name[token.type]} {token.string!r}"
        if token.type == tokenize.COMMENT:
            comments.append(token.string)
    constants = [
        node.value
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    if not any(value in item for item in constants + comments):
        return (
            "the answer is not kept whole in any string or comment: split into code "
            "(injection), escaped or cut"
        )
    return None


def inert_problems(root: Path, value: str, canary: str) -> list[str]:
    """Check that a hostile answer stayed data wherever it landed.

    Python: the canary occurs only inside string literals or comments, and the whole answer is
    kept in one of them. YAML/TOML/JSON: the file parses and the whole answer is one of its
    strings (or sits on a full-line comment). A value cut short by an unquoted ``#`` or changed
    by an escape fails here even though the file parses.
    """
    problems = []
    for path in iter_files(root):
        text = read_text(path)
        if text is None or canary not in text:
            continue
        relative = path.relative_to(root).as_posix()
        try:
            data = parse(path, text)
        except Exception as error:
            problems.append(f"{relative}: does not parse: {type(error).__name__}: {error}")
            continue
        if path.suffix == ".py":
            why = _python_inert(text, value, canary)
            if why:
                problems.append(f"{relative}: {why}")
        elif data is not None:
            if any(value in item for item in _strings(data)):
                continue
            comment_lines = [
                line for line in text.splitlines() if canary in line and line.lstrip()[:1] == "#"
            ]
            all_lines = [line for line in text.splitlines() if canary in line]
            if comment_lines != all_lines or not any(value in line for line in comment_lines):
                problems.append(f"{relative}: the answer is not kept whole as a value")
    return problems


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Relative path -> content, to compare two bakes exactly."""
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in iter_files(root)}
