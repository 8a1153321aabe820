"""CONVENTIONS.md written from the project's conventions pack (`conventions write`), and `check`
telling a file edited by hand, one of another version of the pack, or none (DQC018)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli
from sample import manifest_of, project_copy

LIBRARY = """\
rules:
  - name: plausible_amount
    params: {column: column}
    constraint: "{column} >= 0"
    description: "an amount | <script>alert(1)</script>"
    owner: finance-platform
"""
POLICY = "severity: {DQC005: error}\nlocked: [DQC005]\n"


@pytest.fixture
def project(tmp_path, installed_pack, monkeypatch) -> Path:
    installed_pack(LIBRARY, POLICY, version="1.0.0")
    root = project_copy(tmp_path / "acme", pack="acme")
    monkeypatch.chdir(root)
    return root


def drift(root: Path) -> list[str]:
    return [str(p) for p in conventions.check(manifest_of(root)) if p.code == "DQC018"]


def test_written_from_the_pack_it_is_not_drift(project, capsys):
    assert drift(project) == [
        "DQC018 CONVENTIONS.md: was not written from conventions pack acme; fix:"
        " `medallion-dq conventions write` writes it (keep the team's own text in another file)"
    ]
    assert cli.main(["conventions", "write"]) == 0
    assert capsys.readouterr().out == "conventions write: CONVENTIONS.md from pack acme 1.0.0\n"
    text = (project / "CONVENTIONS.md").read_text()
    assert "| DQC005 | error | yes | rule without description or owner |" in text
    # A library's text is data: escaped in the table, never markup.
    assert "<script>" not in text and "an amount &#124; &#60;script&#62;alert(1)" in text
    assert drift(project) == []


def test_an_edit_by_hand_and_another_version_are_told_apart(project, installed_pack):
    assert cli.main(["conventions", "write"]) == 0
    path = project / "CONVENTIONS.md"
    written = path.read_text()
    path.write_text(written.replace("| DQC005 | error |", "| DQC005 | warning |"))
    (edited,) = drift(project)
    assert edited.startswith(
        "DQC018 CONVENTIONS.md: was edited by hand since it was written from pack acme 1.0.0;"
        " fix: `medallion-dq conventions write` writes it again"
    )
    path.write_text(written)
    installed_pack(LIBRARY, POLICY, version="1.1.0")
    assert drift(project) == [
        "DQC018 CONVENTIONS.md: is pack acme 1.0.0's; the installed pack is acme 1.1.0; fix:"
        " `medallion-dq conventions write` updates it"
    ]


def test_a_missing_file_is_said(project):
    (project / "CONVENTIONS.md").unlink()
    assert drift(project) == [
        "DQC018 CONVENTIONS.md: no CONVENTIONS.md; fix: `medallion-dq conventions write` writes"
        " it from pack acme"
    ]


def test_the_built_in_conventions_are_not_written_over(project, capsys):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('pack = "acme"\n', ""))
    before = (project / "CONVENTIONS.md").read_text()
    assert cli.main(["conventions", "write"]) == 2
    assert "uses the built-in conventions" in capsys.readouterr().err
    assert (project / "CONVENTIONS.md").read_text() == before
    assert drift(project) == []
