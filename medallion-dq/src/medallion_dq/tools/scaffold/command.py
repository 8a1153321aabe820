"""`add source` and `remove source`: checks before anything is written, the files, the record
of what was written, and the CLI.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from medallion_dq.project import Project, writable
from medallion_dq.project.config import STATE_DIR
from medallion_dq.tools import console
from medallion_dq.tools.scaffold.model import (
    FORMATS,
    KINDS,
    MAX_SOURCE,
    NAME,
    RECORD,
    SAMPLE,
    Plan,
    SourceError,
    read_source,
)
from medallion_dq.tools.scaffold.render import render


def _package(project: Project) -> str:
    """The project package: the folder of src/ that holds the rule files."""
    rules_dir = Path(project.settings().get("rules", ""))
    if len(rules_dir.parts) >= 3 and rules_dir.parts[0] == "src":
        return rules_dir.parts[1]
    raise SourceError(
        "pyproject.toml: [tool.medallion] rules is not src/<package>/rules: add source writes "
        "the rule file there"
    )


def _refuse_taken(plan: Plan) -> None:
    from medallion_dq.project.bundle import BundleError

    name, root = plan.name, plan.root
    if not NAME.fullmatch(name):
        raise SourceError(
            f"source name {name!r} is not an identifier: use lowercase letters, digits and _, "
            "starting with a letter (it names bronze_<name> and silver_<name>)"
        )
    if len(name) > MAX_SOURCE:
        raise SourceError(
            f"source name {name[:20]}... is {len(name)} characters: give at most {MAX_SOURCE} "
            "(it names silver_<name>_quarantine and the source's files)"
        )
    try:
        bundle = plan.project.bundle()
    except BundleError as error:
        raise SourceError(f"databricks.yml: {error}") from None
    files = [f for p in bundle.pipelines.values() for f in p.library_files]
    taken = {f"bronze_{name}", f"silver_{name}", name} & plan.project.pipeline_code(files).names(
        views=True
    )
    if taken:
        raise SourceError(
            f"source {name!r} exists: the pipelines define {', '.join(sorted(taken))}"
        )
    paths = [*plan.files.values(), Path("fixtures/landing") / name, RECORD / f"{name}.json"]
    for path in paths:
        if (root / path).exists():
            raise SourceError(f"source {name!r} exists: {path.as_posix()} is there already")


def add_source(
    project: Project | Path,
    name: str,
    source: Path,
    *,
    file_format: str | None = None,
    kind: str = "stream",
    keys: Sequence[str] = (),
    sample: int = SAMPLE,
    owner: str | None = None,
    dry_run: bool = False,
    backend: str | None = None,
) -> list[Path]:
    """Write the source's files (or, dry, only say which); returns their paths."""
    plan = Plan(Project.of(project), name, _package(Project.of(project)), kind)
    root = plan.root
    _refuse_taken(plan)
    if sample < 1:
        raise SourceError(f"--sample {sample}: give at least 1 record")
    landed = read_source(source, file_format)
    missing = [k for k in keys if k not in landed.columns]
    if missing:
        raise SourceError(
            f"--key {missing[0]}: no such column in {source} (columns: {', '.join(landed.columns)})"
        )
    paths = [*plan.files.values(), plan.fixture(landed.file_format)]
    # Said by --dry-run too: its "would write" is a promise.
    writable.check_all([root / p for p in [*paths, RECORD]], "add source writes it", root)
    from medallion_dq.local import check_writable  # its profile's Spark state (findings.py)

    check_writable(backend, root / STATE_DIR / "profile", reuse=root)
    if dry_run:
        console.result(f"add source {name}: would write")
        for path in paths:
            console.result(f"  {path.as_posix()}")
        return paths
    texts = render(plan, landed, keys=list(keys), sample=sample, owner=owner, backend=backend)
    record = {}
    for path in paths:
        target = root / path
        with writable.writing(target, "add source writes it", root):
            target.parent.mkdir(parents=True, exist_ok=True)
            data = texts[path.as_posix()]
            if isinstance(data, bytes):
                target.write_bytes(data)
            else:
                target.write_text(data)
        record[path.as_posix()] = _digest(target)
        console.result(f"  wrote {path.as_posix()}")
    with writable.writing(root / RECORD, "add source records what it wrote there", root):
        (root / RECORD).mkdir(parents=True, exist_ok=True)
        (root / RECORD / f"{name}.json").write_text(json.dumps({"files": record}, indent=2) + "\n")
    return paths


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def remove_source(project: Project | Path, name: str) -> list[Path]:
    """Delete what `add source NAME` wrote, when none of it was edited since."""
    root = Project.of(project).root
    if not NAME.fullmatch(name):
        raise SourceError(f"source name {name!r} is not an identifier")
    record_file = root / RECORD / f"{name}.json"
    if not record_file.is_file():
        added = sorted(path.stem for path in (root / RECORD).glob("*.json"))
        close = difflib.get_close_matches(name, added, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        listed = f"(sources added here: {', '.join(added)})" if added else "(none was added here)"
        raise SourceError(
            f"remove source {name}: no record of `add source {name}` in this checkout "
            f"({(RECORD / f'{name}.json').as_posix()}): {hint}{listed}; a source that `add "
            "source` did not write, delete by hand"
        )
    files = json.loads(record_file.read_text())["files"]
    for relative, digest in files.items():
        path = root / relative
        if path.exists() and _digest(path) != digest:
            raise SourceError(
                f"remove source {name}: {relative} was edited since `add source`: "
                "delete the files by hand, or undo the edit"
            )
    # Removing a file writes its folder: none is removed unless all can be.
    folders = {(root / relative).parent for relative in [*files, record_file]}
    writable.check_all(sorted(folders), "remove source deletes its files there", root)
    removed = []
    for relative in files:
        path = root / relative
        if path.exists():
            path.unlink()
            removed.append(Path(relative))
            console.result(f"  removed {relative}")
        folder = path.parent
        while folder != root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # the fixture folder add made
            folder = folder.parent
    record_file.unlink(missing_ok=True)
    return removed


# --------------------------------------------------------------------------- the CLI


def add_parser(sub) -> argparse.ArgumentParser:
    """`add source`, on the CLI's subparsers."""
    add = sub.add_parser("add", help="add a source from its files: bronze, silver, rules, tests")
    add.add_argument("what", choices=["source"])
    add.add_argument("name", help="the source's name: bronze_<name>, silver_<name>")
    add.add_argument("--from", dest="source", required=True, help="a folder of files, or a file")
    add.add_argument("--format", choices=list(FORMATS), help="the files' format (default: theirs)")
    add.add_argument(
        "--kind",
        choices=KINDS,
        default="stream",
        help="stream: a streaming table, each record judged once, quarantine table (default); "
        "snapshot: a materialized view over all of bronze, quarantine view",
    )
    add.add_argument("--key", action="append", default=[], help="key column (repeatable)")
    add.add_argument(
        "--sample", type=int, default=SAMPLE, help=f"records in the fixture (default {SAMPLE})"
    )
    add.add_argument("--owner", help="owner: of the rule file (the team fixing the data)")
    add.add_argument("--dry-run", action="store_true", help="print the files it would write")
    add.add_argument("--backend", default=None, help="Spark backend (default: embedded)")
    return add


def remove_parser(sub) -> argparse.ArgumentParser:
    """`remove source`, on the CLI's subparsers."""
    remove = sub.add_parser("remove", help="remove a source `add source` wrote")
    remove.add_argument("what", choices=["source"])
    remove.add_argument("name")
    return remove


def cmd_add(args: argparse.Namespace, project: Project) -> int:
    """`add source`, in the project the CLI found."""
    try:
        add_source(
            project,
            args.name,
            Path(args.source).expanduser(),
            file_format=args.format,
            kind=args.kind,
            keys=args.key,
            sample=args.sample,
            owner=args.owner,
            dry_run=args.dry_run,
            backend=args.backend,
        )
    except SourceError as error:
        console.error(f"error: {error}")
        return 2
    if not args.dry_run:
        console.result(f"add source {args.name}: done; run `medallion-dq check` and `nox`")
    return 0


def cmd_remove(args: argparse.Namespace, project: Project) -> int:
    """`remove source`, in the project the CLI found."""
    try:
        remove_source(project, args.name)
    except SourceError as error:
        console.error(f"error: {error}")
        return 2
    console.result(f"remove source {args.name}: done")
    return 0
