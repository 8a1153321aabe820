"""`medallion-dq conventions fleet --to <candidate> <team>...`: a conventions release judged in
every team repository before it ships.

A team is a folder, a git URL with a ref (`file:///srv/team.git@v1`, `git+https://...@main`;
cloned into a throwaway folder) or a file listing them, one a line. For each team, in a throwaway
environment of its own, the team's own pin of the pack (its `[tool.uv.sources]` path or URL, else
its requirement; fetched as `conventions diff --to` fetches a candidate: read, never run) stands
for the installed pack, and `conventions diff --to <candidate>` runs on the team's own landing
files (upgrade.compare). A team that cannot be judged is a row with its reason.

The impact decides the version the release needs (ESLint's rule: more errors is a major): a gate
that flips to FAIL, or a new `check` error, in any team is a major; more rows dropped or warned,
or a new warning, a minor; nothing, a patch. The problems a bump's own commands fix (CONVENTIONS.md
of the old version, DQC018; a stale quarantine view, DQC008) are no impact. Exit 1 when the
candidate's version is a smaller bump than a team's impact, naming each such team; 2 on bad input.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq import library
from medallion_dq.problems import DataQualityError, MedallionDQError
from medallion_dq.project import Project, config, policy, writable
from medallion_dq.project.judging import conventions
from medallion_dq.project.markup import md_code, md_text
from medallion_dq.tools import console, diff, upgrade

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local import LocalSpark

#: How big a change each bump allows.
BUMPS = ("patch", "minor", "major")
#: `check` problems the bump's own commands fix: no impact on the team.
FIXED_BY_COMMANDS = {
    "DQC008": "medallion-dq quarantine write",
    "DQC018": "medallion-dq conventions write",
}
AFTER_BUMP = (
    "medallion-dq conventions write",
    "medallion-dq quarantine write",
    "medallion-dq check",
)
# A git URL with a ref: scheme://... (no `ext::` transport, which runs commands) and @ref.
_GIT = re.compile(
    r"(?:git\+)?(?P<url>(?:file|https?|ssh|git)://.+?)@(?P<ref>[A-Za-z0-9._][A-Za-z0-9._/-]*)"
)
_SCHEMES = "file:https:http:ssh:git"


class BadInput(MedallionDQError, ValueError):
    """The fleet cannot start: said in one line, exit 2."""


@dataclass
class Row:
    """One team: its numbers, or why it has none (`reason`)."""

    team: str
    pin: str = ""
    rules_changed: int = 0
    newly_dropped: int = 0
    newly_kept: int = 0
    newly_warned: int = 0
    gate_before: str = ""  # PASS | FAIL
    gate_after: str = ""
    new_errors: list[str] = field(default_factory=list)
    new_warnings: list[str] = field(default_factory=list)
    exceptions: list[dict[str, str]] = field(default_factory=list)
    expiring: list[str] = field(default_factory=list)  # exceptions expiring before the release
    red_when_preview_turns: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reason: str = ""
    diff: dict[str, Any] | None = None  # the team's own `conventions diff --json`
    markdown: str = ""  # and its `--markdown`

    def impact(self) -> tuple[str, str]:
        """The bump this team's numbers need, and why ("" when it was not judged)."""
        if self.reason:
            return "", ""
        if self.gate_before == "PASS" and self.gate_after == "FAIL":
            return "major", "gate PASS -> FAIL"
        if self.new_errors:
            return "major", f"{len(self.new_errors)} new check error(s): {self.new_errors[0]}"
        if self.newly_dropped or self.newly_warned:
            return (
                "minor",
                f"{self.newly_dropped} row(s) newly dropped, {self.newly_warned} newly warned",
            )
        if self.new_warnings:
            return "minor", f"{len(self.new_warnings)} new check warning(s)"
        return "patch", "no change"


# --------------------------------------------------------------------------- pure logic


def numbers(row: Row, report: dict[str, Any]) -> Row:
    """`row` with the numbers of the team's `conventions diff` JSON report."""
    rules = [r for d in report["datasets"] for r in d["rules"]]
    row.rules_changed = sum(1 for r in rules if r["status"] != "unchanged")
    row.newly_dropped = sum(d["newly_dropped"] or 0 for d in report["datasets"])
    row.newly_kept = sum(d["newly_kept"] or 0 for d in report["datasets"])
    row.newly_warned = sum(
        r["newly_failing"] or 0 for r in rules if (r["head"] or {}).get("action") == "warn"
    )
    row.gate_before, row.gate_after = (
        "PASS" if report["gate"][side]["passes"] else "FAIL" for side in ("before", "after")
    )
    said = [*report["check"]["appeared"]]
    for changed in report["check"]["severity_changed"]:  # only a rise to error is new
        was, now = changed.split(" -> ", 1)
        said += [now] if now.startswith("error: ") and was != "error" else []
    impact = [s for s in said if s.split(": ", 1)[1].split(" ", 1)[0] not in FIXED_BY_COMMANDS]
    row.new_errors = [s.removeprefix("error: ") for s in impact if s.startswith("error: ")]
    row.new_warnings = [s.removeprefix("warning: ") for s in impact if s.startswith("warning: ")]
    return row


def bump(before: str, after: str) -> str:
    """The semver bump from `before` to `after`: major, minor, patch, "none" (not higher) or
    "unknown" (either is no major.minor.patch)."""
    found = [
        re.fullmatch(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+.].*)?", v.strip())
        for v in (before, after)
    ]
    if not all(found):
        return "unknown"
    was, now = (tuple(int(x or 0) for x in f.groups()) for f in found)  # type: ignore[union-attr]
    if now <= was:
        return "none"
    return "major" if now[0] > was[0] else "minor" if now[1] > was[1] else "patch"


def _bump_said(before: str, after: str) -> str:
    given = bump(before, after)
    words = {"none": "no version bump", "unknown": "no semver bump to judge"}
    return words.get(given, f"a {given} bump")


def _enough(given: str, needed: str) -> bool:
    """Whether bump `given` carries impact `needed` (a team already on the candidate: none)."""
    if given in ("unknown", "none"):
        return given == "none" and needed == "patch"
    return BUMPS.index(given) >= BUMPS.index(needed)


def too_small(rows: Sequence[Row], candidate: str) -> list[str]:
    """One line per team whose impact needs a bigger bump than its pin -> `candidate`."""
    lines = []
    for row in rows:
        needed, why = row.impact()
        if not needed or not row.pin:
            continue
        given = bump(row.pin, candidate)
        if not _enough(given, needed):
            said = _bump_said(row.pin, candidate)
            lines.append(
                f"{row.team}: {row.pin} -> {candidate} is {said}; its impact needs a {needed}"
                f" ({why})"
            )
    return lines


def needed(rows: Sequence[Row]) -> str:
    found = [BUMPS.index(r.impact()[0]) for r in rows if r.impact()[0]]
    return BUMPS[max(found)] if found else ""


def teams_of(given: Sequence[str], cwd: Path) -> list[str]:
    """The teams named: a git URL or a folder as given, a file's lines (paths beside it)."""
    out: list[str] = []
    for one in given:
        path = (cwd / one).expanduser()
        if _GIT.fullmatch(one) or not path.is_file():
            out.append(one if _GIT.fullmatch(one) or not path.exists() else str(path))
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            line = "" if line.lstrip().startswith("#") else line.split(" #", 1)[0].strip()
            if line:
                out.append(line if _GIT.fullmatch(line) else str((path.parent / line).resolve()))
    return out


def label_of(team: str) -> str:
    """A short name for a team: its folder's or its repository's name (and the ref)."""
    if found := _GIT.fullmatch(team):
        name = found["url"].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        return f"{name}@{found['ref']}"
    return Path(team).name or team


def file_name(label: str, taken: set[str]) -> str:
    """A file name for a team's PR markdown: its label's safe characters, never a path."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", label).strip("-") or "team"
    name, n = f"{stem}.md", 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}.md"
    taken.add(name)
    return name


# --------------------------------------------------------------------------- one team


def _clone(url: str, ref: str, into: Path) -> Path:
    """The repository at `ref` (a tag, a commit or a branch), cloned into `into` (BadInput: it
    cannot be)."""
    if re.match(r"[a-z+]+://[^/@]*:[^/@]*@", url):
        raise BadInput("the URL holds a password: use a git credential helper instead")
    env = {**os.environ, "GIT_ALLOW_PROTOCOL": _SCHEMES, "GIT_TERMINAL_PROMPT": "0"}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, env=env, timeout=600, check=False
        )
        lines = done.stderr.strip().splitlines() or ["no output"]
        return (
            ""
            if done.returncode == 0
            else next((x for x in lines if x.startswith("fatal:")), lines[-1])
        )

    if said := git("clone", "--quiet", "--no-checkout", "--", url, str(into)):
        raise BadInput(f"git clone: {said}")
    for name in (ref, f"origin/{ref}"):  # a tag or a commit; a branch of the remote
        if not git("-C", str(into), "checkout", "--quiet", "--detach", f"{name}^{{commit}}"):
            return into
    raise BadInput(
        f"git checkout: {ref!r} is no tag, commit or branch of {label_of(url + '@x')[:-2]}"
    )


def _distribution(chosen: upgrade.Candidate) -> str:
    """The candidate's distribution name (its .dist-info or its source pyproject.toml)."""
    for info in chosen.folder.parent.glob("*.dist-info"):
        with contextlib.suppress(OSError):
            for line in (info / "METADATA").read_text(encoding="utf-8").splitlines():
                if line.startswith("Name:"):
                    return line.split(":", 1)[1].strip()
    for above in list(chosen.folder.parents)[:2]:
        with contextlib.suppress(OSError, ValueError):
            return str(config.load_toml(above / "pyproject.toml")["project"]["name"])
    return ""


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pin_of(project: Project, distribution: str) -> str:
    """What the team pins the pack to: its [tool.uv.sources] path or URL, else its requirement
    (BadInput: it names none)."""
    data = config.load_toml(project.root / "pyproject.toml")
    sources: Any = data
    for key in ("tool", "uv", "sources"):  # a table written as something else: none
        sources = sources.get(key, {}) if isinstance(sources, dict) else {}
    for name, source in sources.items() if isinstance(sources, dict) else ():
        if _normal(name) == _normal(distribution) and isinstance(source, dict):
            if "path" in source:
                return str((project.root / str(source["path"])).resolve())
            if "url" in source:
                return f"{distribution} @ {source['url']}"
            raise BadInput(f"[tool.uv.sources] {name}: a git source is built to be read")
    table = data.get("project")
    listed = table.get("dependencies") if isinstance(table, dict) else None
    for requirement in listed if isinstance(listed, list) else []:
        if isinstance(requirement, str) and _normal(
            re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0]
        ) == _normal(distribution):
            return requirement
    raise BadInput(f"pyproject.toml: no dependency on {distribution} (the pack's distribution)")


@contextlib.contextmanager
def _importable(root: Path) -> Iterator[None]:
    """The team's src on sys.path while it runs (its pipelines import its package); its modules
    forgotten after, so the next team's package of the same name is its own."""
    before = set(sys.modules)
    sys.path.insert(0, str(root / "src"))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(root / "src"))
        for name in set(sys.modules) - before:
            where = getattr(sys.modules[name], "__file__", None) or ""
            if where.startswith(str(root)):
                sys.modules.pop(name, None)


def judge(
    team: str, chosen: upgrade.Candidate, scratch: Path, release: date, local: LocalSpark | None
) -> Row:
    """One team's row; any reason it cannot be judged is the row's `reason`."""
    row = Row(label_of(team))
    started = time.monotonic()
    try:
        _judge(row, team, chosen, scratch, release, local)
    except (BadInput, upgrade.NotAPack, DataQualityError, library.LibraryError, ValueError,
            OSError, diff.UpdateFailed) as error:  # fmt: skip
        row.reason = " ".join(str(error).split())[:300] or type(error).__name__
    row.seconds = round(time.monotonic() - started, 1)
    return row


def _judge(
    row: Row, team: str, chosen: upgrade.Candidate, scratch: Path, release: date, local: Any
) -> None:
    found = _GIT.fullmatch(team)
    if not found and "://" in team:
        raise BadInput("a git URL names its ref: <url>@<tag, commit or branch>")
    root = _clone(found["url"], found["ref"], scratch / "repo") if found else Path(team)
    if not (root / "pyproject.toml").is_file():
        raise BadInput(f"{root}: no pyproject.toml, no project")
    project = Project(root)
    table = config.load_toml(root / "pyproject.toml").get("project")
    name = table.get("name") if isinstance(table, dict) else None
    row.team = str(name) if isinstance(name, str) and name else row.team
    pinned = upgrade.candidate(pin_of(project, _distribution(chosen)), scratch / "pin", root)
    row.pin = pinned.version
    landing = root / "fixtures" / "landing"
    if not landing.is_dir():
        raise BadInput("no fixtures/landing: no data of its own to judge")
    with _importable(root), library.trying(pinned.pack, pinned.folder, pinned.version):
        outcome = upgrade.compare(project, chosen, landing=landing, local=local)
        with library.trying(chosen.pack, chosen.folder, chosen.version):
            tried = Project(root)
            manifest = tried.manifest(lenient=True)
            after = manifest.policy
            said = conventions.check(manifest)
    row.diff = upgrade.json_report(outcome)
    row.markdown = upgrade.markdown_report(outcome)
    numbers(row, row.diff)
    row.exceptions = [
        {"setting": e.setting, "value": str(e.value), "expires": e.expires.isoformat(),
         "approved_by": e.approved_by, "reason": e.reason, "state": e.state}
        for e in after.exceptions
    ]  # fmt: skip
    row.expiring = [e.said() for e in after.exceptions if e.expires < release]
    row.red_when_preview_turns = [
        str(p)
        for p in said
        if policy.in_preview(after, p.code) and after.preview[p.code][0] == "error"
    ]


# --------------------------------------------------------------------------- the outputs


HEADER = ("team", "pin", "rules changed", "dropped / kept", "gate", "new errors / warnings",
          "exceptions", "red at preview", "time", "not judged because")  # fmt: skip


def _cells(row: Row) -> tuple[str, ...]:
    time = f"{row.seconds:.0f} s"
    if row.reason:
        return (row.team, row.pin or "?", "", "", "", "", "", "", time, row.reason)
    return (
        row.team,
        row.pin,
        str(row.rules_changed),
        f"+{row.newly_dropped} / +{row.newly_kept}",
        f"{row.gate_before} -> {row.gate_after}",
        f"{len(row.new_errors)} / {len(row.new_warnings)}",
        f"{len(row.exceptions)}" + (f" ({len(row.expiring)} expiring)" if row.expiring else ""),
        str(len(row.red_when_preview_turns)),
        time,
        "",
    )


def _verdict_lines(rows: Sequence[Row], pack: str, candidate: str) -> list[str]:
    pins = sorted({r.pin for r in rows if r.pin})
    wanted = needed(rows)
    lines = [f"the impact needs a {wanted} release" if wanted else "no team could be judged"]
    lines += [f"{pack} {pin} -> {candidate}: {_bump_said(pin, candidate)}" for pin in pins]
    return lines


def text_report(rows: Sequence[Row], pack: str, candidate: str) -> console.Document:
    blocks: list[console.Block] = [
        f"conventions fleet: pack {pack} {candidate}, {len(rows)} team(s)",
        console.Table(HEADER, [_cells(r) for r in rows], right=(2, 8)),
        *_verdict_lines(rows, pack, candidate),
    ]
    for row in rows:
        blocks += [f"{row.team}: expires before the release: {e}" for e in row.expiring]
        blocks += [
            f"{row.team}: an error when the preview turns: {p}" for p in row.red_when_preview_turns
        ]
    return console.document(blocks)


def markdown_report(rows: Sequence[Row], pack: str, candidate: str) -> str:
    """The release notes: one table, every cell escaped (team names and rule text are data)."""
    lines = [
        f"## Conventions pack {md_code(pack)} {md_code(candidate)}: its effect on each team",
        "",
    ]
    lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += [
        "| " + " | ".join(md_text(c.replace("->", "→")) for c in _cells(r)) + " |" for r in rows
    ]
    lines.append("")
    lines += [
        f"- {md_text(line.replace('->', '→'))}" for line in _verdict_lines(rows, pack, candidate)
    ]
    for row in rows:
        for title, found in (("expires before the release", row.expiring),
                             ("an error when the preview turns", row.red_when_preview_turns),
                             ("new check errors", row.new_errors)):  # fmt: skip
            lines += [f"- {md_text(row.team)}, {title}: {md_text(one)}" for one in found]
    return "\n".join(lines) + "\n"


def json_report(rows: Sequence[Row], pack: str, candidate: str, release: date) -> dict[str, Any]:
    return {
        "pack": pack,
        "candidate": candidate,
        "release_date": release.isoformat(),
        "needed": needed(rows),
        "too_small": too_small(rows, candidate),
        "teams": [asdict(r) | {"impact": r.impact()[0]} for r in rows],
    }


def pr_markdown(row: Row, pack: str, distribution: str, candidate: str) -> str:
    """The pull request a bot would open in the team's repository to move its pin."""
    impact, why = row.impact()
    lines = [
        f"# Move conventions pack {md_code(pack)} from {md_code(row.pin)} to {md_code(candidate)}",
        "",
        f"Impact on this repository: **{impact}** ({md_text(why)}).",
        "",
        "| rules changed | rows newly dropped | newly kept | newly warned | gate | new errors | new warnings |",
        "|---|---|---|---|---|---|---|",
        f"| {row.rules_changed} | {row.newly_dropped} | {row.newly_kept} | {row.newly_warned} |"
        f" {row.gate_before} → {row.gate_after} | {len(row.new_errors)} | {len(row.new_warnings)} |",
        "",
    ]
    for title, found in (("New `check` errors", row.new_errors), ("New `check` warnings", row.new_warnings),
                         ("Errors when the preview turns", row.red_when_preview_turns)):  # fmt: skip
        if found:
            lines += [f"{title}:", "", *[f"- {md_text(one)}" for one in found], ""]
    if row.exceptions:
        lines += ["Exceptions this repository holds:", "", "| setting | value | approved by | expires | state | reason |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        lines += [
            "| "
            + " | ".join(
                md_text(e[k])
                for k in ("setting", "value", "approved_by", "expires", "state", "reason")
            )
            + " |"
            for e in row.exceptions
        ]
        lines += [f"- expires before the release: {md_text(e)}" for e in row.expiring] + [""]
    lines += [
        "After the bump, run:",
        "",
        "```bash",
        f"# pyproject.toml: {_safe(distribution)} pinned to {_safe(candidate)}",
        *AFTER_BUMP,
        "```",
        "",
        "<details><summary>conventions diff</summary>",
        "",
        row.markdown,
        "</details>",
    ]
    return "\n".join(lines) + "\n"


def _safe(value: str) -> str:
    """A name or version in a code block: its own characters only (no fence can end it)."""
    return re.sub(r"[^A-Za-z0-9._+=~<>@ -]", "?", value)


def command(
    to: str,
    teams: Sequence[str],
    *,
    markdown_path: str | None = None,
    json_path: str | None = None,
    pr_dir: str | None = None,
    release: str | None = None,
    local: LocalSpark | None = None,
) -> int:
    """The whole command; its exit code (module doc). `local`: a Spark session the caller keeps
    (every team's diff runs on it), instead of the warm server."""
    from medallion_dq.project.judging import run_options

    cwd = Path.cwd()
    problems = [
        f"error: {option} {path}: {p.message}; fix: {p.fix}"
        for option, path in (("--markdown", markdown_path), ("--json", json_path))
        if path
        for p in run_options.check_json_path(path)
        if p.severity == "error"
    ]
    if pr_dir and (cwd / pr_dir).exists() and not (cwd / pr_dir).is_dir():
        problems.append(f"error: --pr-dir {pr_dir}: a file, not a folder")
    try:
        day = date.fromisoformat(release) if release else datetime.now(timezone.utc).date()
    except ValueError:
        problems.append(f"error: --date {release}: not a date; fix: write --date 2027-01-31")
        day = date.today()
    named = teams_of(teams, cwd) if not problems else []
    if not problems and not named:
        problems.append(
            "error: conventions fleet names no team: give folders, git URLs with a ref, or a file listing them"
        )
    if problems:
        for line in problems:
            console.error(line)
        return 2
    with tempfile.TemporaryDirectory(prefix="medallion-dq-fleet-") as scratch:
        try:
            with console.waiting(f"conventions fleet: installing {to} aside"):
                chosen = upgrade.candidate(to, Path(scratch) / "candidate", cwd)
        except (upgrade.NotAPack, ValueError) as error:
            console.error(f"error: {' '.join(str(error).split())}")
            return 2
        distribution = _distribution(chosen)
        rows = []
        for number, team in enumerate(named, 1):
            with console.waiting(f"conventions fleet: {label_of(team)} ({number} of {len(named)})"):
                folder = Path(scratch) / f"team-{number}"
                folder.mkdir()
                row = judge(team, chosen, folder, day, local)
            console.info(
                f"[fleet] {row.team}: {'judged' if not row.reason else 'not judged'} in {row.seconds:.1f} s"
            )
            rows.append(row)
    console.result(text_report(rows, chosen.pack, chosen.version))
    outputs = [
        (markdown_path, markdown_report(rows, chosen.pack, chosen.version)),
        (
            json_path,
            json.dumps(json_report(rows, chosen.pack, chosen.version, day), indent=2) + "\n",
        ),
    ]
    if pr_dir:
        taken: set[str] = set()
        outputs += [
            (
                str(Path(pr_dir) / file_name(row.team, taken)),
                pr_markdown(row, chosen.pack, distribution, chosen.version),
            )
            for row in rows
            if not row.reason
        ]
    for path, text in outputs:
        if path:
            with writable.writing(Path(path), "conventions fleet was asked to write it"):
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text(text, encoding="utf-8")
    small = too_small(rows, chosen.version)
    for line in small:
        console.error(f"error: bump too small: {line}")
    if all(row.reason for row in rows):
        console.error("error: no team could be judged: the release's impact is unknown")
        return 1
    return 1 if small else 0
