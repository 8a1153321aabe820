"""Remove the files that an answer switches off, and nothing else.

Cookiecutter renders this file with Jinja before it runs it, in the new project's folder. As in
``pre_gen_project.py``, the answers arrive as one JSON line in the comment marked
``cookiecutter-answers`` and are read back as data, never as code. Every removal comes from the
one table ``REMOVALS``. The one thing it writes is where uv gets medallion-dq
(``medallion_dq_source: template``): the template repository this project is baked from, at the
commit it is baked from, found with ``git`` in cookiecutter's copy of the template (no network).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

# cookiecutter-answers: {{ cookiecutter | tojson }}
ANSWERS_MARKER = "# cookiecutter-answers: "

# The file of each CI answer.
CI_FILES = {
    "github": ".github",
    "azure_devops": "azure-pipelines.yml",
    "gitlab": ".gitlab-ci.yml",
}

# (answer, the value that switches the paths off, paths relative to the project root).
REMOVALS: tuple[tuple[str, object, tuple[str, ...]], ...] = (
    # Sample landing files come in both formats; keep the one the project reads.
    *(
        (
            "source_format",
            keep,
            tuple(
                f"fixtures/{folder}/{source}/{source}-{day}.{drop}"
                for folder, source, day in (
                    ("landing", "orders", "2026-11-01"),
                    ("landing", "orders", "2026-11-04"),
                    ("landing", "customers", "2026-11-01"),
                    ("bad_day", "orders", "2026-11-07"),
                )
            ),
        )
        for keep, drop in (("json", "csv"), ("csv", "json"))
    ),
    # One CI file, the answer's (none: no file at all).
    *(
        ("ci", other, (path,))
        for system, path in CI_FILES.items()
        for other in ("github", "azure_devops", "gitlab", "none")
        if other != system
    ),
)


# Placeholders the template leaves for the source (pyproject.toml) and pip's requirement (README).
SOURCE_LINE = 'medallion-dq = "@medallion-dq-source@"'
REQUIREMENT = "@medallion-dq-requirement@"
PACKAGE_DIR = "medallion-dq"  # medallion-dq-dev's folder in the template repository
RUNTIME_DIR = "runtime"  # medallion-dq's (the runtime's) folder inside it


def _git(repo: Path, *args: str) -> str | None:
    """What ``git -C repo args`` prints, or None when git is missing or says no."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def remote_url(url: str, repo: Path) -> str:
    """A git remote as a URL uv takes, with no credentials in it: ``git@host:org/repo`` becomes
    ``ssh://git@host/org/repo``, a folder a ``file://`` URL, and an https user or token goes."""
    scp = re.match(r"([\w.-]+@)?([\w.-]+):(?!//)(.+)\Z", url)
    if "://" not in url and scp and len(scp[2]) > 1:  # not a Windows drive letter
        return f"ssh://{scp[1] or ''}{scp[2]}/{scp[3]}"
    if "://" not in url:
        return (repo / url).resolve().as_uri()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https") and (parts.username or parts.password):
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


def template_source(repo: Path, checkout: str | None = None) -> dict[str, str]:
    """Where the project's uv gets medallion-dq: the template's origin at the baked commit, when
    that commit is published there and the package folder has no local change; otherwise the
    checkout's folder (a path only this machine has)."""
    commit = _git(repo, "rev-parse", "--verify", "HEAD")
    origin = _git(repo, "remote", "get-url", "origin")
    if commit and origin:
        changed = _git(repo, "status", "--porcelain", "--", PACKAGE_DIR)
        published = checkout or _git(repo, "branch", "--remotes", "--contains", commit)
        if changed == "" and published:
            return {"git": remote_url(origin, repo), "subdirectory": PACKAGE_DIR, "rev": commit}
    return {"path": str((repo / PACKAGE_DIR).resolve())}


def distribution_sources(source: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each distribution's source, from medallion-dq-dev's: the runtime is in its folder."""
    if "path" in source:
        runtime = {"path": str(Path(source["path"]) / RUNTIME_DIR)}
    else:
        runtime = {**source, "subdirectory": f"{source['subdirectory']}/{RUNTIME_DIR}"}
    return {"medallion-dq": runtime, "medallion-dq-dev": source}


def source_lines(source: dict[str, str]) -> str:
    """The [tool.uv.sources] entries (JSON strings are TOML basic strings), with a comment."""
    entries = [
        name + " = { " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in where.items())
        + " }"
        for name, where in distribution_sources(source).items()
    ]  # fmt: skip
    note = ""
    if "path" in source:
        note = (
            "# A folder of this machine (the template was a local checkout with no published\n"
            '# commit): replace it with { git = "<template repository URL>", subdirectory =\n'
            '# "medallion-dq", rev = "<commit>" } (subdirectory "medallion-dq/runtime" for\n'
            "# medallion-dq) before others clone this repository.\n"
        )
    return note + "\n".join(entries)


def pip_requirements(source: dict[str, str]) -> list[str]:
    """The same sources as requirements pip understands (pip ignores [tool.uv.sources]): the
    runtime and the local engine with its tools."""
    found = []
    for name, where in distribution_sources(source).items():
        wanted = f"{name}[local]" if name == "medallion-dq-dev" else name
        if "path" in where:
            found.append(f"{wanted} @ {Path(where['path']).as_uri()}")
            continue
        url = where["git"] if where["git"].startswith("git+") else f"git+{where['git']}"
        found.append(f"{wanted} @ {url}@{where['rev']}#subdirectory={where['subdirectory']}")
    return found


def template_copy(repo_dir: str) -> Path:
    """The template's folder, absolute. Cookiecutter gives it as the user typed it, and runs this
    hook in the new project: a relative path is the shell's, whose folder is $PWD."""
    repo = Path(repo_dir)
    if not repo.is_absolute():
        repo = Path(os.environ.get("PWD", "")) / repo
    return repo.resolve()


def write_source(root: Path, source: dict[str, str]) -> None:
    """Fill the placeholders of pyproject.toml and README.md with ``source``."""
    pyproject, readme = root / "pyproject.toml", root / "README.md"
    text = pyproject.read_text(encoding="utf-8")
    if SOURCE_LINE not in text:
        raise SystemExit(f"ERROR: hook: pyproject.toml has no {SOURCE_LINE!r}; fix the template")
    pyproject.write_text(text.replace(SOURCE_LINE, source_lines(source)), encoding="utf-8")
    command = "pip install " + " ".join(map(shlex.quote, pip_requirements(source)))
    readme.write_text(
        readme.read_text(encoding="utf-8").replace(REQUIREMENT, command), encoding="utf-8"
    )


PACK_SOURCE = '"@pack-source@"'


def write_pack_source(root: Path, requirement: str) -> None:
    """The pack's `name @ <URL>` as uv's source: a path for a file URL (uv refuses file:// as a
    URL source), else the URL."""
    url = requirement.split("@", 1)[1].strip()
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        where = {"path": urllib.request.url2pathname(parsed.path)}
    else:
        where = {"url": url}
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    if PACK_SOURCE not in text:
        raise SystemExit(f"ERROR: hook: pyproject.toml has no {PACK_SOURCE}; fix the template")
    entry = "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in where.items()) + " }"
    pyproject.write_text(text.replace(PACK_SOURCE, entry), encoding="utf-8")


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


def paths_to_remove(answers: dict[str, Any]) -> list[str]:
    """Return the relative paths that these answers switch off, in table order."""
    return [
        path
        for answer, off_value, paths in REMOVALS
        if answers.get(answer) == off_value and type(answers.get(answer)) is type(off_value)
        for path in paths
    ]


def remove(root: Path, relative: str) -> None:
    """Delete ``root/relative`` (file or folder) if it exists; never leave ``root``."""
    target = root / relative
    if not target.resolve().is_relative_to(root.resolve()) or target.resolve() == root.resolve():
        raise SystemExit(f"ERROR: hook: {relative!r} is outside the project; fix REMOVALS")
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()


def main() -> int:
    root = Path.cwd()
    answers = load_answers(Path(__file__))
    for relative in paths_to_remove(answers):
        remove(root, relative)
    if "@" in str(answers.get("conventions_pack_requirement") or ""):
        write_pack_source(root, str(answers["conventions_pack_requirement"]))
    if answers.get("medallion_dq_source") == "template" and answers.get("_commit"):
        # cruft (create, update): its clone is gone by now, but it names the URL and commit.
        url = remote_url(str(answers["_template"]), Path.cwd())
        write_source(root, {"git": url, "subdirectory": PACKAGE_DIR, "rev": answers["_commit"]})
    elif answers.get("medallion_dq_source") == "template":
        repo = template_copy(str(answers.get("_repo_dir") or ""))
        unzipped = str(answers.get("_template", "")).lower().endswith(".zip")  # removed after
        if unzipped or not (repo / PACKAGE_DIR / "pyproject.toml").is_file():
            raise SystemExit(
                f"ERROR: medallion_dq_source: 'template': {PACKAGE_DIR}/ is not in the template "
                f"copy {str(repo)!r} (a zip archive?); bake from a git URL or a checkout, or "
                "answer 'index' if your package index has medallion-dq"
            )
        write_source(root, template_source(repo, answers.get("_checkout")))
    return 0


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
