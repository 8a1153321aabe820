"""A project's CONVENTIONS.md, written from its conventions pack, so the text and the checks
change together (`medallion-dq conventions write`), and its drift (DQC018 of `check`).

The file is the pack's own CONVENTIONS.md (its team's words, optional), then two tables made
from the pack: its library's rules and its policy. Its first line records the pack, the version
and a digest of the rest; `check` compares the file with what the installed pack writes: an edit
by hand (the digest no longer matches) and a file of another version are both DQC018, with the
way back. A project on the built-in conventions has no such file to check.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from medallion_dq import library
from medallion_dq.problems import Problem
from medallion_dq.project.manifest import Manifest
from medallion_dq.project.markup import md_code, md_text
from medallion_dq.project.policy import CONVENTIONS_FILE, Policy

FILE = CONVENTIONS_FILE
_MARK = re.compile(
    r"<!-- medallion-dq conventions write: pack (?P<pack>\S+) (?P<version>\S*) "
    r"sha256:(?P<digest>[0-9a-f]{64}) -->"
)
_WRITE = "`medallion-dq conventions write`"


def render(policy: Policy, described: Mapping[str, str]) -> str:
    """The CONVENTIONS.md the pack of `policy` writes: its marker line, then the text (the
    pack's words as its policy holds them, read with it)."""
    text = policy.pack_text.rstrip() + "\n" if policy.pack_text is not None else ""
    if not text:
        text = f"# Data-quality conventions: pack {md_text(policy.pack)}\n"
    lines = [text, "## The pack's rules", ""]
    lines += ["| rule | parameters | description | owner |", "|---|---|---|---|"]
    for rule in policy.pack_rules:
        params = ", ".join(f"{name} ({kind})" for name, kind in rule.params.items())
        lines.append(
            f"| {md_code(f'{policy.pack}.{rule.name}')} | {md_text(params)} |"
            f" {md_text(rule.description)} | {md_text(rule.owner)} |"
        )
    packed = policy.packed
    locked = set(packed.get("locked", []))
    severity = packed.get("severity", {})
    lines += ["", "## What `medallion-dq check` enforces", ""]
    lines += [
        "Each code's severity where this pack sets it; a locked one a project may make",
        "stricter in `[tool.medallion.conventions]`, never looser (`medallion-dq conventions",
        "show` lists every setting of a project).",
        "",
        "| code | severity | locked | finds |",
        "|---|---|---|---|",
    ]
    for code in sorted({*severity, *(c for c in locked if c in described)}):
        lines.append(
            f"| {code} | {md_text(severity.get(code, 'built-in'))} |"
            f" {'yes' if code in locked else ''} | {md_text(described.get(code, ''))} |"
        )
    for key in ("layers", "quarantine_suffix"):
        if key in packed:
            lock = " (locked)" if key in locked else ""
            lines += ["", f"`{key}`: {md_code(packed[key])}{lock}"]
    lines.append("")
    body = "\n".join(lines)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return f"<!-- medallion-dq conventions write: pack {policy.pack} {policy.version} sha256:{digest} -->\n{body}"


def drift(manifest: Manifest, policy: Policy, described: Mapping[str, str]) -> list[Problem]:
    """DQC018 when the project's CONVENTIONS.md is not what its pack writes, saying why."""
    if policy.pack == library.BUILT_IN or any(p.code == "DQC000" for p in policy.problems):
        return []
    if policy.pack_unread:
        return []  # the pack is broken: said as DQC000 / DQ031 elsewhere
    wanted = render(policy, described)
    try:
        found = manifest.text(manifest.root / FILE)
    except FileNotFoundError:
        return [_problem(f"no {FILE}", f"{_WRITE} writes it from pack {policy.pack}")]
    except (OSError, UnicodeDecodeError) as error:
        return [_problem(f"cannot be read ({error})", f"{_WRITE} writes it again")]
    if found == wanted:
        return []
    first, _, body = found.partition("\n")
    mark = _MARK.fullmatch(first.strip())
    if mark is None:
        return [
            _problem(
                f"was not written from conventions pack {policy.pack}",
                f"{_WRITE} writes it (keep the team's own text in another file)",
            )
        ]
    if hashlib.sha256(body.encode("utf-8")).hexdigest() != mark["digest"]:
        return [
            _problem(
                f"was edited by hand since it was written from pack {mark['pack']}"
                f" {mark['version']}".rstrip(),
                f"{_WRITE} writes it again (`git diff {FILE}` shows the edit; a change for every"
                " team belongs in the pack)",
            )
        ]
    if (mark["pack"], mark["version"]) != (policy.pack, policy.version):
        return [
            _problem(
                f"is pack {mark['pack']} {mark['version']}'s; the installed pack is"
                f" {policy.pack} {policy.version}",
                f"{_WRITE} updates it",
            )
        ]
    return [_problem("was written by another medallion-dq version", f"{_WRITE} writes it again")]


def _problem(message: str, fix: str) -> Problem:
    return Problem("DQC018", FILE, message, fix, severity="warning")
