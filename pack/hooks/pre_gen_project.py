"""Refuse answers that would bake a broken pack, before cookiecutter writes a file: the checks
of the project template's hook (hooks/pre_gen_project.py of the template repository, which this
template sits in) and the pack's own name. The answers arrive as one JSON line in the comment
marked ``cookiecutter-answers`` and are read back as data, as in that hook."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

# cookiecutter-answers: {{ cookiecutter | tojson }}
ANSWERS_MARKER = "# cookiecutter-answers: "
PACK_RE = re.compile(r"[a-z][a-z0-9_]{0,39}\Z")
BUILT_IN = "medallion"  # medallion-dq's own pack


def answers() -> dict[str, Any]:
    for line in Path(__file__).read_text(encoding="utf-8").splitlines():
        if line.startswith(ANSWERS_MARKER):
            found = json.loads(line[len(ANSWERS_MARKER) :])
            if isinstance(found, dict):
                return found
    raise SystemExit("ERROR: hook: no rendered answers; run it through cookiecutter")


def repository_hook(given: dict[str, Any], name: str):
    """The project template's hook module `name`, from the repository holding this template
    (cookiecutter gives this template's folder as typed: relative to the shell's folder)."""
    here = Path(str(given.get("_repo_dir") or ""))
    if not here.is_absolute():
        here = Path(os.environ.get("PWD", "")) / here
    path = here.resolve().parent / "hooks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"medallion_template_{name}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise SystemExit(f"ERROR: hook: {path} is missing: bake the pack from the whole repository")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate_pack(value: Any) -> list[str]:
    """The name rule files use (`use: <pack>.<rule>(...)`) and projects name the pack by."""
    if not isinstance(value, str) or not PACK_RE.match(value):
        return [
            (
                "must be a lowercase identifier of at most 40 characters (letters, digits, _; "
                "a letter first): rule files write use: <pack>.<rule>(...)"
            )
        ]
    if value == BUILT_IN:
        return ["is medallion-dq's built-in pack; choose your organisation's name, e.g. 'acme'"]
    return []


def main() -> int:
    given = answers()
    project = repository_hook(given, "pre_gen_project")
    checks = {
        "pack_name": project.validate_project_name,
        "pack_slug": project.validate_project_slug,
        "package_name": project.validate_package_name,
        "pack": validate_pack,
        "owner": lambda value: project._free_text(value, "the owning team", 80, "data-platform"),
        "description": project.validate_description,
        "medallion_dq_source": project.validate_medallion_dq_source,
    }
    lines = [
        f"ERROR: {field}: {project.show(given.get(field))}: {why}"
        for field, check in checks.items()
        for why in check(given.get(field))
    ]
    for line in lines:
        print(line, file=sys.stderr)
    if lines:
        print(f"{len(lines)} answer problem(s): nothing was generated.", file=sys.stderr)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
