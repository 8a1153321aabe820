"""`medallion-dq conventions diff --to <candidate>`: a new version of the project's conventions
pack, tried on the project's own data before its pin moves.

A candidate is read, never run: it is a wheel, a folder of the pack's data, or a requirement
(`acme-conventions==1.1.0`, `acme-conventions @ <url of a .whl>`) fetched as a wheel by uv or pip
into a throwaway folder, never into the project's environment. A folder is one of: a pack's
package folder (its library.yml, policy.yml, named by the .dist-info beside it or the
pyproject.toml above it), an installed one (`pip install --target`, an unzipped wheel: its
.dist-info names it), or a pack's source folder whose pyproject.toml names the pack in its
`[project]` table. Nothing is built: no build backend and no setup.py runs, so a source
distribution, a requirement that resolves to one, and a source folder whose metadata only a
build gives are refused in one line (exit 2): build the wheel and give that. Its library
and policy stand in for the installed pack's (`library.trying`), and three things are compared:

- every rule file as the installed pack and as the candidate resolve it, judged on the landing
  files as `medallion-dq diff` judges two revisions: per rule, the rows failing before and after,
  newly dropped and newly kept;
- the quality gate's verdict on those counts (each warn and drop rule's failed fraction against
  its threshold, the pack's default for the layer where the rule file sets none; a fail rule
  that fails a row fails the update), before and after; a dataset whose rules do not change but
  whose layer's default threshold does is judged too;
- the problems of `check` that appear or disappear under the candidate's policy.

Exit 0 when the upgrade leaves the gate passing, 1 when the gate (or an update) would fail after
it, 2 on bad input (no pack named, a candidate that is not that pack, a rule file that does not
resolve under it). Nothing is written to the project.
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq import gate, library
from medallion_dq.problems import DataQualityError, MedallionDQError, Problem
from medallion_dq.project import Project, config, policy, writable
from medallion_dq.project.judging import conventions
from medallion_dq.project.markup import md_code, md_text
from medallion_dq.text import relative_path
from medallion_dq.tools import console, diff

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local import LocalSpark
    from medallion_dq.rules import RuleSet


class NotAPack(MedallionDQError, ValueError):
    """The candidate is no conventions pack, or another one than the project's."""


@dataclass
class Candidate:
    pack: str
    version: str
    folder: Path  # the pack's package folder (library.yml, policy.yml)


@dataclass
class Outcome:
    pack: str
    before: str  # versions
    after: str
    diffs: list[diff.DatasetDiff]
    verdict: dict[str, list[str]]  # "before" / "after": why the gate fails (empty: it passes)
    appeared: list[Problem] = field(default_factory=list)
    disappeared: list[Problem] = field(default_factory=list)
    #: Problems said under both, at another severity: (problem after, severity before).
    reclassed: list[tuple[Problem, str]] = field(default_factory=list)
    #: The pack's default thresholds that change, by layer: (before, after; None: unset).
    thresholds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    @property
    def fails(self) -> bool:
        return bool(self.verdict["after"])


# --------------------------------------------------------------------------- the candidate


_NOT_RUN = "a candidate is read, never run"
_BUILD = "build its wheel (uv build --wheel) and give that"
_SDISTS = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
#: A wheel holding more than this, unzipped, is refused before a byte is written: a conventions
#: pack is a few YAML files.
MAX_UNPACKED = 100 * 1024 * 1024
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# What uv says when the requirement has no wheel (uv 0.4-0.13 words it so).
_NO_WHEEL = re.compile(r"building (?:from )?source(?: distributions)? is disabled", re.IGNORECASE)


def _entry_point(pairs: dict[str, str], where: str) -> tuple[str, str]:
    """(pack, package) of the one entry point of group medallion_dq.packs."""
    if len(pairs) != 1:
        raise NotAPack(
            f"{where} names {len(pairs)} packs in entry point group {library.PACKS_GROUP}"
            " (a conventions pack names itself there once)"
        )
    ((pack, package),) = pairs.items()
    package = str(package).split(":")[0].strip()
    if not _PACKAGE.fullmatch(package):  # a path would read files outside the candidate
        raise NotAPack(f"{where}: pack {pack!r} names {package!r}, which is no package name")
    return pack, package


def _installed(folder: Path, where: str, package: Path | None = None) -> Candidate:
    """A pack installed (or unpacked) into `folder`: its .dist-info names it (with `package`,
    the one whose package folder that is: a site may hold several packs)."""
    for info in sorted(folder.glob("*.dist-info")):
        points = configparser.ConfigParser(interpolation=None)
        points.optionxform = str  # type: ignore[assignment,method-assign]  # names keep their case
        try:
            points.read(info / "entry_points.txt", encoding="utf-8")
            metadata = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
        except (OSError, configparser.Error) as error:
            raise NotAPack(f"{where}: {info.name} does not read ({error})") from None
        if not points.has_section(library.PACKS_GROUP):
            continue
        pack, name = _entry_point(dict(points[library.PACKS_GROUP]), where)
        found = folder / name.replace(".", "/")
        if package is not None and found.resolve() != package:
            continue
        version = next(
            (line.split(":", 1)[1].strip() for line in metadata.splitlines()
             if line.startswith("Version:")),
            "",
        )  # fmt: skip
        return Candidate(pack, version, found)
    raise NotAPack(f"{where} is no conventions pack: no entry point of {library.PACKS_GROUP}")


def _source_folder(folder: Path) -> Candidate:
    """A pack's source folder, read as data: its pyproject.toml's [project] table names the pack,
    its src/ (or top) holds the package. Nothing is built."""
    try:
        data = config.load_toml(folder / "pyproject.toml")
    except (OSError, ValueError) as error:
        raise NotAPack(f"{folder}: {error}") from None
    project = data.get("project", {})
    dynamic = project.get("dynamic", []) if isinstance(project, dict) else []
    if not isinstance(project, dict) or not project or "entry-points" in dynamic:
        raise NotAPack(
            f"{folder}: its pack is named only by a build (no [project] table, or dynamic"
            f" entry-points), and {_NOT_RUN}: {_BUILD}"
        )
    points = project.get("entry-points", {}).get(library.PACKS_GROUP, {})
    pack, package = _entry_point(points if isinstance(points, dict) else {}, str(folder))
    path = package.replace(".", "/")
    found = next((p for p in (folder / "src" / path, folder / path) if p.is_dir()), None)
    if found is None:
        raise NotAPack(f"{folder}: no package folder {path} (in src/ or at the top)")
    return Candidate(pack, str(project.get("version") or "source"), found)


def _package_folder(folder: Path) -> Candidate:
    """A pack's package folder (its library.yml): named by the .dist-info beside it (installed)
    or the pyproject.toml of the source folder above it."""
    if any(folder.parent.glob("*.dist-info")):
        found = _installed(folder.parent, str(folder), folder)
    elif root := next((p for p in folder.parents[:2] if (p / "pyproject.toml").is_file()), None):
        found = _source_folder(root)
    else:
        raise NotAPack(
            f"{folder}: holds {library.LIBRARY_FILE}, but no .dist-info beside it nor"
            " pyproject.toml above it names its pack: give the pack's source folder or its wheel"
        )
    if found.folder.resolve() != folder:
        raise NotAPack(f"{folder}: its pack {found.pack!r} is the package in {found.folder}")
    return found


def _folder(folder: Path) -> Candidate:
    """A folder of the pack's data (the module doc says which); a source folder is read, not
    built."""
    if (folder / library.LIBRARY_FILE).is_file():
        return _package_folder(folder)
    if (folder / "pyproject.toml").is_file():
        return _source_folder(folder)
    if any(folder.glob("*.dist-info")):
        return _installed(folder, str(folder))
    if (folder / "setup.py").is_file() or (folder / "setup.cfg").is_file():
        raise NotAPack(
            f"{folder}: a source folder whose pack only its setup.py names, and {_NOT_RUN}:"
            f" {_BUILD}"
        )
    raise NotAPack(
        f"{folder}: no conventions pack here (no library.yml, .dist-info or pyproject.toml)"
    )


def _unpacked(wheel: Path, into: Path) -> Candidate:
    """A wheel, unzipped as an installer would: a member that would land outside is refused."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = archive.infolist()
            for member in members:
                target = (into / member.filename).resolve()
                if not target.is_relative_to(into.resolve()):
                    raise NotAPack(
                        f"{wheel.name}: member {member.filename!r} would be written outside"
                    )
            if sum(m.file_size for m in members) > MAX_UNPACKED:
                raise NotAPack(f"{wheel.name}: unzips to more than {MAX_UNPACKED:,} bytes")
            archive.extractall(into)
    except (OSError, zipfile.BadZipFile) as error:
        raise NotAPack(f"{wheel}: not a readable wheel ({error})") from None
    return _installed(into, wheel.name)


def _source_only(requirement: str) -> str:
    """Why `requirement` names a source to build (a folder, an archive, a repository), or ""."""
    if "@" not in requirement:
        return ""
    url = requirement.split("@", 1)[1].split(";", 1)[0].strip()
    path = url.split("#", 1)[0].split("?", 1)[0]
    return "" if path.endswith(".whl") else f"it names {url}, no wheel"


def _fetched(requirement: str, into: Path) -> Candidate:
    """A requirement, fetched into `into` by uv (or pip) as a wheel, without its dependencies:
    nothing is built."""
    if why := _source_only(requirement):
        raise NotAPack(f"--to {requirement}: {why}; {_NOT_RUN}: {_BUILD}")
    uv = shutil.which("uv")
    command = (
        [uv, "pip", "install", "--target", str(into), "--no-deps", "--python", sys.executable,
         "--only-binary", ":all:"]
        if uv
        else [sys.executable, "-m", "pip", "install", "--target", str(into), "--no-deps",
              "--only-binary=:all:"]
    )  # fmt: skip
    done = subprocess.run(
        [*command, "--", requirement], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        if _NO_WHEEL.search(done.stderr):
            raise NotAPack(
                f"--to {requirement}: it resolves to a source distribution, no wheel;"
                f" {_NOT_RUN}: {_BUILD}"
            )
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NotAPack(f"--to {requirement}: it could not be fetched ({said})")
    return _installed(into, requirement)


def candidate(given: str, scratch: Path, cwd: Path) -> Candidate:
    """The candidate named by `--to`: a wheel file, a folder of the pack's data or a
    requirement."""
    path = (cwd / given).expanduser()
    if path.is_dir():
        return _folder(path.resolve())
    if path.is_file():
        if path.name.lower().endswith(_SDISTS):
            raise NotAPack(
                f"--to {given}: a source distribution is built to be read, and {_NOT_RUN}: {_BUILD}"
            )
        return _unpacked(path, scratch)
    # A requirement names a distribution, with versions or a URL (name @ file:///...whl).
    if not any(mark in given for mark in "@=<>~!;") and ("/" in given or given.endswith(".whl")):
        raise NotAPack(f"--to {given}: no such file or folder")
    return _fetched(given, scratch)


# --------------------------------------------------------------------------- the comparison


def _by_dataset(project: Project) -> dict[str, RuleSet]:
    return {ruleset.dataset: ruleset for ruleset in project.rule_sets()}


def _verdict(diffs: list[diff.DatasetDiff], side: str, by_layer: dict[str, float]) -> list[str]:
    """Why the gate would fail on one side's counts ('base' | 'head'), with that side's
    default thresholds `by_layer`; empty: it passes."""
    metrics: list[dict[str, Any]] = []
    thresholds: dict[str, float] = {}
    layer: dict[str, float] = {}
    why = []
    for one in diffs:
        ruleset = one.base if side == "base" else one.head
        if ruleset is None or one.rows is None:
            continue
        thresholds |= ruleset.thresholds()
        layer |= gate.layer_defaults([ruleset], by_layer)
        for rule in one.rules:
            version = rule.base if side == "base" else rule.head
            failed = rule.failed_before if side == "base" else rule.failed_after
            if version is None or failed is None:
                continue
            if version.action == "fail":
                if failed:
                    why.append(f"{one.dataset}.{rule.name}: fail rule, {failed} row(s) fail it")
                continue
            metrics.append(
                {"dataset": one.dataset, "name": rule.name, "passed": one.rows - failed,
                 "failed": failed}
            )  # fmt: skip
    result = gate.evaluate(metrics, thresholds, allow_empty=True, layer=layer)
    why += [
        f"{row.dataset}.{row.rule}: {row.failed} of {row.total} row(s) fail"
        f" ({row.failed_fraction:.1%}), over its threshold {row.threshold:.1%}"
        for row in result.rows
        if not row.ok
    ]
    return why


def project_pack(project: Project) -> policy.Policy:
    """The project's policy, of the pack it names (NotAPack: it names none)."""
    installed = project.manifest(lenient=True).policy
    if installed.pack == library.BUILT_IN:
        raise NotAPack(
            "the project uses the built-in conventions: name its pack in pyproject.toml"
            ' ([tool.medallion] pack = "<name>") and depend on it first'
        )
    return installed


def compare(
    project: Project,
    chosen: Candidate,
    *,
    landing: Path,
    backend: str | None = None,
    examples: int = diff.EXAMPLES,
    local: LocalSpark | None = None,
) -> Outcome:
    """The project under its installed pack and under `chosen`, judged on `landing`."""
    installed = project_pack(project)
    if chosen.pack != installed.pack:
        raise NotAPack(
            f"the candidate is pack {chosen.pack!r}; the project uses {installed.pack!r}"
        )
    before = _by_dataset(project)
    said_before = conventions.check(project.manifest(lenient=True))
    layer_before = _pack_thresholds(installed.pack)
    with library.trying(chosen.pack, chosen.folder, chosen.version):
        tried = Project(project.root)
        after = _by_dataset(tried)
        said_after = conventions.check(tried.manifest(lenient=True))
        layer_after = _pack_thresholds(chosen.pack)
    moved = {
        layer: (layer_before.get(layer), layer_after.get(layer))
        for layer in sorted({*layer_before, *layer_after})
        if layer_before.get(layer) != layer_after.get(layer)
    }
    names = sorted({*before, *after})
    diffs = {
        name: diff.DatasetDiff(
            name, before.get(name), after.get(name), diff.compare(before.get(name), after.get(name))
        )
        for name in names
        if (before.get(name) or after.get(name)) is not None
    }
    changed = {
        name: d
        for name, d in diffs.items()
        if d.status != "unchanged" or _takes_layer_default(d.head, moved)
    }
    if changed:
        diff.judge_all(project, changed, None, landing, backend, examples, local=local)
    key = lambda p: (p.code, p.file, p.rule, p.message)  # noqa: E731
    was = {key(p): p.severity for p in said_before}
    now = {key(p): p.severity for p in said_after}
    ordered = list(changed.values())
    return Outcome(
        installed.pack,
        installed.version,
        chosen.version,
        ordered,
        {
            "before": _verdict(ordered, "base", layer_before),
            "after": _verdict(ordered, "head", layer_after),
        },
        appeared=[p for p in said_after if key(p) not in was],
        disappeared=[p for p in said_before if key(p) not in now],
        reclassed=[
            (p, was[key(p)]) for p in said_after if was.get(key(p), p.severity) != p.severity
        ],
        thresholds=moved,
    )


def _pack_thresholds(pack: str) -> dict[str, float]:
    try:
        return library.pack_thresholds(pack)
    except library.LibraryError as error:  # `check` says it too; the diff cannot judge
        raise NotAPack(str(error)) from None


def _takes_layer_default(ruleset: RuleSet | None, moved: dict[str, Any]) -> bool:
    """Whether a rule of `ruleset` is judged by its layer's default threshold, which moves."""
    return (
        ruleset is not None
        and bool(gate.layer_defaults([ruleset], dict.fromkeys(moved, 0.0)))  # of its layer
        and ruleset.threshold is None
        and any(r.threshold is None and r.action != "fail" for r in ruleset.rules)
    )


# --------------------------------------------------------------------------- the reports


_GATE_SCOPE = "the quality gate, on the datasets whose rules the upgrade changes:"


def _threshold_lines(outcome: Outcome, arrow: str = "->") -> list[str]:
    def shown(value: float | None) -> str:
        return "none" if value is None else f"{value:.1%}"

    return [
        f"default threshold of {layer}: {shown(was)} {arrow} {shown(now)}"
        for layer, (was, now) in outcome.thresholds.items()
    ]


def _gate_lines(outcome: Outcome) -> list[str]:
    lines = [*_threshold_lines(outcome), _GATE_SCOPE]
    for side in ("before", "after"):
        reasons = outcome.verdict[side]
        lines.append(f"gate {side}: {'FAIL' if reasons else 'PASS'}")
        lines += [f"  {reason}" for reason in reasons]
    return lines


def text_report(outcome: Outcome) -> console.Document:
    title = f"conventions diff: pack {outcome.pack} {outcome.before} -> {outcome.after}"
    blocks: list[console.Block] = [title]
    if outcome.diffs:
        report = {"base": outcome.before, "head": outcome.after, "data": "the landing files"}
        blocks += diff.text_blocks(report, outcome.diffs)
    else:
        blocks.append("no rule of the project changes")
    blocks += _gate_lines(outcome)
    blocks += [f"check, new: {p.severity}: {p}" for p in outcome.appeared]
    blocks += [f"check, gone: {p}" for p in outcome.disappeared]
    blocks += [f"check, {was} -> {p.severity}: {p}" for p, was in outcome.reclassed]
    return console.document(blocks)


def markdown_report(outcome: Outcome) -> str:
    parts = [f"### conventions pack {md_code(outcome.pack)}: {outcome.before} → {outcome.after}"]
    if outcome.diffs:
        report = {"base": outcome.before, "head": outcome.after, "data": "the landing files"}
        parts.append(diff.markdown_report(report, outcome.diffs))
    parts += [f"- {md_text(line)}" for line in _threshold_lines(outcome, "→")]
    parts.append(_GATE_SCOPE.capitalize())
    for side in ("before", "after"):
        reasons = outcome.verdict[side]
        parts.append(f"**gate {side}: {'FAIL' if reasons else 'PASS'}**")
        parts += [f"- {md_text(reason)}" for reason in reasons]
    for title, found in (
        ("appear", [f"{p.severity}: {p}" for p in outcome.appeared]),
        ("disappear", [str(p) for p in outcome.disappeared]),
        ("change severity", [f"{was} → {p.severity}: {p}" for p, was in outcome.reclassed]),
    ):
        if found:
            parts.append(f"`check` problems that {title}:")
            parts += [f"- {md_text(line)}" for line in found]
    return "\n\n".join(parts) + "\n"


def json_report(outcome: Outcome) -> dict[str, Any]:
    return {
        "pack": outcome.pack,
        "before": outcome.before,
        "after": outcome.after,
        "datasets": [d.to_dict() for d in outcome.diffs],
        "gate": {side: {"passes": not why, "why": why} for side, why in outcome.verdict.items()},
        "thresholds": {
            layer: {"before": was, "after": now} for layer, (was, now) in outcome.thresholds.items()
        },
        "check": {
            "appeared": [f"{p.severity}: {p}" for p in outcome.appeared],
            "disappeared": [str(p) for p in outcome.disappeared],
            "severity_changed": [f"{was} -> {p.severity}: {p}" for p, was in outcome.reclassed],
        },
    }


def command(
    project: Project,
    to: str,
    *,
    landing: str | None = None,
    backend: str | None = None,
    markdown_path: str | None = None,
    json_path: str | None = None,
    examples: int = diff.EXAMPLES,
    local: LocalSpark | None = None,
) -> int:
    """The whole command; its exit code (see the module doc). `local`: a Spark session the
    caller keeps, instead of the project's warm server."""
    from medallion_dq.project.judging import run_options

    cwd = Path.cwd()
    outputs = {"--markdown": markdown_path, "--json": json_path}
    unwritable = [
        f"error: {option} {path}: {problem.message}; fix: {problem.fix}"
        for option, path in outputs.items()
        if path
        for problem in run_options.check_json_path(path)
        if problem.severity == "error"
    ]
    if unwritable:  # said before the candidate is fetched and the data judged
        for line in unwritable:
            console.error(line)
        return 2
    folder = (cwd / landing).resolve() if landing else project.root / "fixtures" / "landing"
    if not folder.is_dir():
        where = relative_path(folder, project.root)
        console.error(f"error: --landing {where}: no such folder")
        return 2
    with tempfile.TemporaryDirectory(prefix="medallion-dq-pack-") as scratch:
        try:
            project_pack(project)  # before fetching a candidate
            with console.waiting(f"conventions diff: installing {to} aside"):
                chosen = candidate(to, Path(scratch), cwd)
            outcome = compare(
                project, chosen, landing=folder, backend=backend, examples=examples, local=local
            )
        except (NotAPack, DataQualityError, library.LibraryError, ValueError) as error:
            for line in str(error).splitlines():
                console.error(f"error: {line}")
            return 2
        except diff.UpdateFailed as error:
            console.error(f"error: {error}")
            return 1
    console.result(text_report(outcome))
    for path, text in (
        (markdown_path, markdown_report(outcome)),
        (json_path, json.dumps(json_report(outcome), indent=2) + "\n"),
    ):
        if path:
            with writable.writing(Path(path), "conventions diff was asked to write it"):
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text(text, encoding="utf-8")
    return 1 if outcome.fails else 0
