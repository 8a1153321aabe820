"""Write where the pack gets medallion-dq (``medallion_dq_source: template``): the template
repository this pack is baked from, at that commit, as the project template's hook does (its
functions, from hooks/post_gen_project.py of the repository). The answers are read as data."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

# cookiecutter-answers: {{ cookiecutter | tojson }}
ANSWERS_MARKER = "# cookiecutter-answers: "


def repository_hook(answers: dict[str, Any]):
    """The project template's post_gen_project.py, from the repository holding this template
    (cookiecutter gives this template's folder as typed: relative to the shell's folder)."""
    here = Path(str(answers.get("_repo_dir") or ""))
    if not here.is_absolute():
        here = Path(os.environ.get("PWD", "")) / here
    path = here.resolve().parent / "hooks" / "post_gen_project.py"
    spec = importlib.util.spec_from_file_location("medallion_template_post_gen", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise SystemExit(f"ERROR: hook: {path} is missing: bake the pack from the whole repository")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    text = Path(__file__).read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith(ANSWERS_MARKER))
    answers = json.loads(line[len(ANSWERS_MARKER) :])
    project = repository_hook(answers)
    if answers.get("medallion_dq_source") != "template":
        return 0
    if answers.get("_commit"):  # cruft: its clone is gone by now, but it names URL and commit
        url = project.remote_url(str(answers["_template"]), Path.cwd())
        source = {"git": url, "subdirectory": project.PACKAGE_DIR, "rev": answers["_commit"]}
    else:
        repo = project.template_copy(str(answers.get("_repo_dir") or "")).parent
        source = project.template_source(repo, answers.get("_checkout"))
    project.write_source(Path.cwd(), source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
