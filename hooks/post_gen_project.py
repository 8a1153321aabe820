"""Remove the files that an answer switches off, and nothing else.

Cookiecutter renders this file with Jinja before it runs it, in the new project's folder. As in
``pre_gen_project.py``, the answers arrive as one JSON line in the comment marked
``cookiecutter-answers`` and are read back as data, never as code. Every removal comes from the
one table ``REMOVALS``; this hook writes nothing, needs no network and no Docker.
"""

from __future__ import annotations

import json
import shutil
import sys
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
    for relative in paths_to_remove(load_answers(Path(__file__))):
        remove(root, relative)
    return 0


if __name__ == "__main__":
    sys.exit(main())
