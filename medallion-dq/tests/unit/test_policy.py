"""A conventions pack's policy: its severities apply in the projects that name it, a project may
tighten them, a loosened lock is DQC017 naming the pack, the setting and the project's line, and
`conventions show` says where each setting comes from."""

from __future__ import annotations

import pytest

from medallion_dq import cli, conventions
from sample import project_copy

LIBRARY = "rules: []\n"
POLICY = """\
severity: {DQC005: error, DQC010: warning}
locked: [DQC005, quarantine_suffix]
quarantine_suffix: _quarantine
"""
NO_OWNER = """\
dataset: silver_orders
layer: silver
rules:
  - {name: valid_order_id, constraint: order_id IS NOT NULL, action: drop}
"""


@pytest.fixture
def project(tmp_path, installed_pack):
    """The sample on pack acme 1.1.0, its silver orders rule with neither owner nor description."""
    installed_pack(LIBRARY, POLICY, version="1.1.0")
    root = project_copy(tmp_path / "acme", pack="acme")
    (root / "src/acme_orders/rules/silver/orders.yml").write_text(NO_OWNER, encoding="utf-8")
    return root


def severities(root, table: str) -> int:
    """Write the project's `severity = {...}` line; its line number."""
    pyproject = root / "pyproject.toml"
    lines = pyproject.read_text(encoding="utf-8").splitlines()
    number = lines.index("severity = {}")
    lines[number] = f"severity = {{{table}}}"
    pyproject.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return number + 1


def test_the_packs_severity_applies(project):
    found = [p for p in conventions.check(project) if p.code == "DQC005"]
    assert found and {p.severity for p in found} == {"error"}  # built-in: a warning


def test_a_project_that_loosens_a_locked_code_is_refused_naming_the_pack_and_line(
    project, monkeypatch, capsys
):
    line = severities(project, 'DQC004 = "error", DQC005 = "warning"')
    monkeypatch.chdir(project)
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out
    assert (
        f"DQC017 pyproject.toml line {line}: [tool.medallion.conventions] sets DQC005 ="
        " 'warning': looser than 'error', which conventions pack acme locks; fix: remove the"
        " line (the pack's 'error' applies) or make it stricter"
    ) in out
    assert "DQC005 src/acme_orders/rules/silver/orders.yml" in out  # still an error: the pack's
    assert {p.severity for p in conventions.check(project) if p.code == "DQC005"} == {"error"}


def test_a_project_may_tighten_or_set_what_the_pack_does_not_lock(project):
    severities(project, 'DQC010 = "error", DQC005 = "error"')
    assert not [p for p in conventions.check(project) if p.code == "DQC017"]


def test_conventions_show_names_each_settings_origin(project, monkeypatch, capsys):
    line = severities(project, 'DQC004 = "error"')
    monkeypatch.chdir(project)
    assert cli.main(["conventions", "show"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "conventions pack: acme 1.1.0"
    said = {line.split()[0]: line.split(None, 2)[1:] for line in lines[1:]}
    assert said["DQC005"][0] == "error" and said["DQC005"][1].startswith("pack acme 1.1.0, locked")
    assert said["DQC010"][1].startswith("pack acme 1.1.0 ")
    assert said["DQC004"][0] == "error" and said["DQC004"][1].startswith(
        f"pyproject.toml line {line}"
    )
    assert said["DQC001"][1].startswith("built-in")
    assert said["quarantine_suffix"][1].startswith("pack acme 1.1.0, locked")


@pytest.mark.parametrize(
    ("policy_yml", "said"),
    [
        ("severity: [DQC005]\n", "'severity' must be a mapping"),
        ("locked: DQC005\n", "'locked' must be a list"),
        ("locked: [DQC099]\n", "locked: 'DQC099' is no code"),
        ("severity: {DQC005: loud}\n", "severity of DQC005: 'loud' is not one of"),
        ("severity: {DQC999: error}\n", "severity: unknown code 'DQC999'"),
        ("strict: true\n", "unknown key 'strict'"),
        ("severity: {DQC005: error\n", "while parsing a flow mapping"),
        ("- DQC005\n", "the top level must be a mapping"),
    ],
)
def test_a_broken_policy_is_one_line_naming_the_pack(project, installed_pack, policy_yml, said):
    installed_pack(LIBRARY, policy_yml)
    problems = [p for p in conventions.check(project) if p.code == "DQC000"]
    assert [(p.file, said in p.message) for p in problems] == [("pack acme policy.yml", True)], [
        str(p) for p in problems
    ]


def test_a_pack_that_is_not_installed_is_named_with_the_fix(project, monkeypatch, capsys):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('pack = "acme"', 'pack = "acmee"'))
    monkeypatch.chdir(project)
    assert cli.main(["conventions", "show"]) == 1
    assert (
        "DQC000 pyproject.toml [tool.medallion] pack: no conventions pack 'acmee' is installed"
        in capsys.readouterr().out
    )


def test_a_lock_holds_the_value_the_pack_leaves_as_it_is(project, installed_pack):
    """The pack locks DQC004 and layers without setting them: the built-in values hold."""
    installed_pack(LIBRARY, "locked: [DQC004, layers]\n")
    line = severities(project, 'DQC004 = "off"')
    with (project / "pyproject.toml").open("a", encoding="utf-8") as file:
        file.write('\n[tool.medallion.conventions.layers]\nsilver = "clean"\n')
    found = [str(p) for p in conventions.check(project) if p.code == "DQC017"]
    assert found[0].startswith(
        f"DQC017 pyproject.toml line {line}: [tool.medallion.conventions] sets DQC004 = 'off':"
        " looser than 'warning', which conventions pack acme locks"
    )
    assert len(found) == 2 and "sets layers = {'silver': 'clean'}" in found[1], found
