"""Every stable code in one registry (`problems.CODES`), said the same in the docs: a code the
package reports is listed with its meaning, and the docs name no code that does not exist."""

import re
from pathlib import Path

from medallion_dq.problems import CODES

PACKAGE = Path(__file__).resolve().parents[2]
REPO = PACKAGE.parent
SOURCES = [p for f in ("runtime/src", "src") for p in sorted((PACKAGE / f).rglob("*.py"))]
DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", PACKAGE / "README.md"]
CODE = re.compile(r"\b(?:DQC?|BND|RUN)\d{3}\b")
ROW = re.compile(r"^\| ((?:DQC?|BND|RUN)\d{3}) \| (.+) \|$", re.M)


def test_every_code_the_package_reports_is_in_the_registry():
    found = {
        (code, path.relative_to(PACKAGE).as_posix())
        for path in SOURCES
        for code in CODE.findall(path.read_text(encoding="utf-8"))
    }
    unknown = sorted(f"{code} in {where}" for code, where in found if code not in CODES)
    assert not unknown, f"add them to problems.CODES and docs/codes.md: {unknown}"


def test_every_registry_code_is_reported_somewhere():
    """No code stays in the registry once nothing reports it."""
    # The registry's own lines name every code: only the modules besides problems.py count.
    others = "\n".join(p.read_text(encoding="utf-8") for p in SOURCES if p.name != "problems.py")
    reported = set(CODE.findall(others))
    assert sorted(set(CODES) - reported) == []


def test_codes_page_is_the_registry():
    """docs/codes.md lists each code once, with the registry's meaning, in its order."""
    rows = ROW.findall((REPO / "docs" / "codes.md").read_text(encoding="utf-8"))
    assert rows == list(CODES.items())


def test_docs_name_only_codes_that_exist():
    named = {
        (code, path.relative_to(REPO).as_posix())
        for path in DOCS
        for code in CODE.findall(path.read_text(encoding="utf-8"))
    }
    assert sorted(f"{c} in {where}" for c, where in named if c not in CODES) == []


def test_a_configurable_severity_is_a_known_code_and_a_severity():
    """`SEVERITIES` (what `check` reports at the severity a project sets) names only codes of
    the registry, each at error or warning; the settings' own codes stay errors."""
    from medallion_dq.problems import SEVERITIES, severity_of
    from medallion_dq.project.judging import conventions, review

    assert sorted(set(SEVERITIES) - set(CODES)) == []
    assert set(SEVERITIES.values()) <= {"error", "warning"}
    assert severity_of("DQC000") == severity_of("DQC017") == severity_of("RUN001") == "error"
    assert set(SEVERITIES) == {*conventions.CODES, *review.CODES} - {"DQC000", "DQC017"}
