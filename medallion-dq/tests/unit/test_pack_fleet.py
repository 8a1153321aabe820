"""A conventions release judged across teams, without Spark: a team's exceptions to what its pack
locks (an owner, an expiry; wrong ones one line each), tightenings in preview, the bump a
release's impact needs, and the fleet's outputs (escaped: team names and rule text are data).
The fleet on real team repositories and Spark: tests/engine/test_pack_loop.py."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from medallion_dq.project import policy
from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli, fleet
from sample import manifest_of, project_copy

LIBRARY = "rules: []\n"
POLICY = "severity: {DQC005: error}\nlocked: [DQC005, quarantine_suffix]\n"
NO_OWNER = """\
dataset: silver_orders
layer: silver
rules:
  - {name: valid_order_id, constraint: order_id IS NOT NULL, action: drop, description: id}
"""
EXCEPTION = """
[[tool.medallion.conventions.exceptions]]
setting = "DQC005"
value = "warning"
reason = "owners of the legacy feed are being named"
approved_by = "platform-team"
expires = 2027-03-31
"""


@pytest.fixture
def project(tmp_path, installed_pack):
    """The sample on pack acme 1.1.0 (DQC005 an error, locked), its silver orders rule without an
    owner, holding an exception to DQC005 until 2027-03-31."""
    installed_pack(LIBRARY, POLICY, version="1.1.0")
    root = project_copy(tmp_path / "acme", pack="acme")
    (root / "src/acme_orders/rules/silver/orders.yml").write_text(NO_OWNER, encoding="utf-8")
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8") + EXCEPTION, encoding="utf-8")
    return root


def on_day(root, day: str) -> None:
    """Set the table's as_of: the day exceptions are judged at."""
    pyproject = root / "pyproject.toml"
    text = re.sub(r"\nas_of = \S+", "", pyproject.read_text(encoding="utf-8"))
    pyproject.write_text(text.replace("severity = {}", f"severity = {{}}\nas_of = {day}", 1))


def test_an_exception_warns_until_its_day_and_is_an_error_after(project):
    on_day(project, "2027-03-31")  # its last day
    said = conventions.check(manifest_of(project))
    (held,) = [p for p in said if p.code == "DQC017"]
    assert held.severity == "warning"
    assert "exception to DQC005 = 'warning' (approved by platform-team, until 2027-03-31" in str(
        held
    )
    assert {p.severity for p in said if p.code == "DQC005"} == {"warning"}
    on_day(project, "2027-04-01")
    said = conventions.check(manifest_of(project))
    (expired,) = [p for p in said if p.code == "DQC017"]
    assert expired.severity == "error" and "expired on 2027-03-31" in expired.message
    assert {p.severity for p in said if p.code == "DQC005"} == {"error"}  # the pack's again


def test_today_is_the_clock_without_as_of(project):
    held = policy.load(manifest_of(project).settings, policy.defaults(), today=date(2027, 1, 1))
    assert [e.state for e in held.exceptions] == ["held"]
    gone = policy.load(manifest_of(project).settings, policy.defaults(), today=date(2028, 1, 1))
    assert [e.state for e in gone.exceptions] == ["expired"]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            'approved_by = "platform-team"\n',
            "exceptions[1]: no 'approved_by'; fix: write approved_by",
        ),
        (
            "expires = 2027-03-31",
            "exceptions[1]: expires = 'soon' is not a date; fix: write expires",
        ),
        ('setting = "DQC005"', "exceptions[1]: setting 'DQC099' is no setting a pack locks"),
        (
            'value = "warning"',
            "exceptions[1]: value 'lenient' of DQC005 is not error, warning or off",
        ),
        ('reason = "owners', "exceptions[1]: unknown field 'why'"),
    ],
)
def test_a_wrong_exception_is_one_line_naming_the_file_the_field_and_the_fix(project, edit, said):
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    wrong = {
        'approved_by = "platform-team"\n': "",
        "expires = 2027-03-31": 'expires = "soon"',
        'setting = "DQC005"': 'setting = "DQC099"',
        'value = "warning"': 'value = "lenient"',
        'reason = "owners': 'why = "x"\nreason = "owners',
    }[edit]
    pyproject.write_text(text.replace(edit, wrong), encoding="utf-8")
    line = text.splitlines().index("[[tool.medallion.conventions.exceptions]]") + 1
    problems = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC000"]
    assert [str(p) for p in problems if said in str(p)], [str(p) for p in problems]
    (problem,) = problems
    assert problem.file == f"pyproject.toml line {line}"
    # A wrong exception holds nothing: DQC005 is the pack's error.
    assert {p.severity for p in conventions.check(manifest_of(project)) if p.code == "DQC005"} == {
        "error"
    }


def test_a_pack_may_allow_no_exception_to_a_setting(project, installed_pack):
    installed_pack(LIBRARY, POLICY + "no_exceptions: [DQC005]\n", version="1.1.0")
    (refused,) = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC017"]
    assert refused.severity == "error" and "allows no exception to DQC005" in refused.message


def test_conventions_show_lists_exceptions_beside_origins(project, monkeypatch, capsys):
    on_day(project, "2027-01-01")
    monkeypatch.chdir(project)
    assert cli.main(["conventions", "show"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("DQC005"))
    assert "exception until 2027-03-31" in line
    (listed,) = [x for x in out.splitlines() if x.strip().startswith("DQC005  warning  until")]
    assert "held" in listed and "approved by platform-team" in listed


@pytest.mark.parametrize(("version", "severity"), [("1.1.0", "warning"), ("1.2.0", "error")])
def test_a_preview_tightening_warns_then_is_an_error_one_minor_later(
    tmp_path, installed_pack, version, severity
):
    installed_pack(LIBRARY, 'preview: {"1.1.0": {DQC005: error}}\n', version=version)
    root = project_copy(tmp_path / "acme", pack="acme")
    (root / "src/acme_orders/rules/silver/orders.yml").write_text(NO_OWNER, encoding="utf-8")
    found = [p for p in conventions.check(manifest_of(root)) if p.code == "DQC005"]
    assert found and {p.severity for p in found} == {severity}
    noted = [p for p in found if "(preview: an error from pack acme 1.2.0)" in p.message]
    assert bool(noted) == (severity == "warning")


def test_a_wrong_preview_is_the_packs_to_fix(tmp_path, installed_pack):
    installed_pack(LIBRARY, 'preview: {"soon": {DQC005: error}}\n')
    root = project_copy(tmp_path / "acme", pack="acme")
    (problem,) = [p for p in conventions.check(manifest_of(root)) if p.code == "DQC000"]
    assert "preview: 'soon' is no version" in problem.message and "policy.yml" in problem.file


# --------------------------------------------------------------------------- the bump


def row(**numbers) -> fleet.Row:
    base = {"pin": "1.0.0", "gate_before": "PASS", "gate_after": "PASS"}
    return fleet.Row("team", **(base | numbers))


@pytest.mark.parametrize(
    ("numbers", "impact"),
    [
        ({"gate_after": "FAIL"}, "major"),
        ({"new_errors": ["DQC005 ..."]}, "major"),
        ({"newly_dropped": 3}, "minor"),
        ({"newly_warned": 1}, "minor"),
        ({"new_warnings": ["DQ028 ..."]}, "minor"),
        ({"newly_kept": 2}, "patch"),
        ({}, "patch"),
    ],
)
def test_the_impact_decides_the_bump(numbers, impact):
    assert row(**numbers).impact()[0] == impact


@pytest.mark.parametrize(
    ("before", "after", "bump"),
    [
        ("1.0.0", "2.0.0", "major"),
        ("1.0.3", "1.1.0", "minor"),
        ("1.1.0", "1.1.1", "patch"),
        ("1.1.0", "1.1.0", "none"),
        ("1.2", "1.10", "minor"),
        ("1.0.0", "source", "unknown"),
        ("2.0.0", "1.9.0", "none"),
    ],  # fmt: skip
)
def test_the_bump_between_two_versions(before, after, bump):
    assert fleet.bump(before, after) == bump


def test_a_bump_smaller_than_a_teams_impact_names_the_team():
    rows = [
        row(newly_dropped=1),
        fleet.Row("two", pin="1.0.0", gate_before="PASS", gate_after="FAIL"),
        fleet.Row("broken", reason="no pyproject.toml"),
    ]
    assert fleet.too_small(rows, "1.1.0") == [
        "two: 1.0.0 -> 1.1.0 is a minor bump; its impact needs a major (gate PASS -> FAIL)"
    ]
    assert fleet.too_small(rows, "2.0.0") == [] and fleet.needed(rows) == "major"
    # A team already on the candidate, with nothing that changes, needs no bump.
    assert fleet.too_small([row()], "1.0.0") == []
    assert fleet.too_small([row(newly_dropped=1)], "1.0.0") == [
        "team: 1.0.0 -> 1.0.0 is no version bump; its impact needs a minor (1 row(s) newly"
        " dropped, 0 newly warned)"
    ]
    # A version that is no semver cannot carry the impact: said, never a crash.
    (line,) = fleet.too_small(rows[:1], "source")
    assert line.startswith("team: 1.0.0 -> source is no semver bump to judge; its impact")


def test_the_numbers_come_from_the_teams_own_diff_and_the_bumps_commands_are_no_impact():
    report = {
        "datasets": [
            {"newly_dropped": 2, "newly_kept": 1, "rules": [
                {"status": "changed", "head": {"action": "drop"}, "newly_failing": 2},
                {"status": "changed", "head": {"action": "warn"}, "newly_failing": 4},
                {"status": "unchanged", "head": {"action": "drop"}, "newly_failing": 0}]},
        ],
        "gate": {"before": {"passes": True}, "after": {"passes": False}},
        "check": {
            "appeared": ["error: DQC008 src/q.sql: stale", "warning: DQC018 CONVENTIONS.md: old",
                         "warning: DQ028 a.yml: twice"],
            "disappeared": [],
            "severity_changed": ["warning -> error: DQC005 a.yml: rule 'x': no owner",
                                 "error -> warning: DQC004 b.yml: loosened, no impact"],
        },
    }  # fmt: skip
    got = fleet.numbers(fleet.Row("t"), report)
    assert (got.rules_changed, got.newly_dropped, got.newly_kept, got.newly_warned) == (2, 2, 1, 4)
    assert (got.gate_before, got.gate_after) == ("PASS", "FAIL")
    assert got.new_errors == ["DQC005 a.yml: rule 'x': no owner"]
    assert got.new_warnings == ["DQ028 a.yml: twice"]


# --------------------------------------------------------------------------- the outputs


def test_team_names_and_rule_text_are_escaped_in_the_markdown():
    hostile = fleet.Row(
        "<img src=x onerror=alert(1)>|x", pin="1.0.0", gate_before="PASS", gate_after="PASS",
        new_errors=["DQ001 a.yml: `x` | <script>"],
    )  # fmt: skip
    notes = fleet.markdown_report([hostile], "acme", "1.1.0")
    assert "<img" not in notes and "<script>" not in notes
    table = [line for line in notes.splitlines() if line.startswith("| &#60;img")]
    assert table and table[0].count(" | ") == len(fleet.HEADER) - 1  # no cell broken by the |
    pr = fleet.pr_markdown(hostile, "acme", "acme-conventions`\n```", "1.1.0")
    assert "<script>" not in pr and "acme-conventions?" in pr


def test_each_team_gets_a_file_name_of_its_own_never_a_path():
    taken: set[str] = set()
    names = [fleet.file_name(x, taken) for x in ("../../etc/passwd", "team one", "team one", "")]
    assert names == ["etc-passwd.md", "team-one.md", "team-one-2.md", "team.md"]


def test_teams_come_from_folders_git_urls_and_files_listing_them(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "list.txt").write_text(
        "# teams\none\n\ngit+https://example.org/acme/two.git@release/1 # a branch\n"
    )
    assert fleet.teams_of(["list.txt", "file:///srv/three.git@v1"], tmp_path) == [
        str(tmp_path / "one"),
        "git+https://example.org/acme/two.git@release/1",
        "file:///srv/three.git@v1",
    ]
    assert fleet.label_of("file:///srv/three.git@v1") == "three@v1"


def test_a_team_that_cannot_be_loaded_is_a_row_with_its_reason(
    tmp_path, installed_pack, monkeypatch, capsys
):
    """No Spark: neither team gets as far as its data."""
    package = installed_pack(LIBRARY, POLICY, version="1.1.0")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    code = cli.main(
        ["conventions", "fleet", "--to", str(package), "empty", "ext::sh -c touch% /tmp/x@v1",
         "https://user:secret@example.org/t.git@v1", "--json", "fleet.json"]
    )  # fmt: skip
    assert code == 1
    assert "error: no team could be judged" in capsys.readouterr().err
    rows = json.loads((tmp_path / "fleet.json").read_text())["teams"]
    reasons = [r["reason"] for r in rows]
    assert "no pyproject.toml" in reasons[0]
    assert (
        reasons[1] and reasons[2] == "the URL holds a password: use a git credential helper instead"
    )


def test_fleet_says_what_is_wrong_before_it_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["conventions", "fleet", "team"]) == 2
    assert "takes --to" in capsys.readouterr().err
    assert cli.main(["conventions", "fleet", "--to", "x.whl", "team", "--date", "soon"]) == 2
    assert "--date soon: not a date" in capsys.readouterr().err
    assert cli.main(["conventions", "show", "team"]) == 2
    assert "takes no team" in capsys.readouterr().err


@pytest.mark.parametrize(
    "pyproject",
    [
        '[project]\nname = "t"\ndependencies = "acme-conventions"\n',
        'project = "t"\n[tool]\nuv = "x"\n',
        '[project]\nname = "t"\ndependencies = ["other~=1.0", 3]\n',
    ],
)
def test_a_team_whose_pyproject_names_no_pin_is_a_row_with_its_reason(
    tmp_path, installed_pack, pyproject
):
    package = installed_pack(LIBRARY, POLICY, version="1.1.0")
    from medallion_dq.tools import upgrade

    chosen = upgrade.candidate(str(package), tmp_path / "scratch", tmp_path)
    team = tmp_path / "team"
    team.mkdir()
    (team / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (tmp_path / "aside").mkdir()
    row = fleet.judge(str(team), chosen, tmp_path / "aside", date(2027, 1, 1), None)
    assert (
        row.reason == "pyproject.toml: no dependency on acme-conventions (the pack's distribution)"
    )


def test_a_git_team_is_cloned_at_its_tag_commit_or_branch(tmp_path):
    """Clones of a local repository (no network): a ref that exists gets as far as the project
    (here: none), one that does not is named."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("no project here\n")
    for args in (["init", "--quiet", "-b", "main"], ["add", "-A"],
                 ["commit", "--quiet", "-m", "one"], ["tag", "v1"], ["branch", "release/1"]):  # fmt: skip
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
            check=True,
        )
    chosen = None  # never reached: each team stops before its pin
    for number, ref in enumerate(("v1", "release/1", "main", "nope")):
        aside = tmp_path / f"aside-{number}"
        aside.mkdir()
        row = fleet.judge(f"file://{repo}@{ref}", chosen, aside, date(2027, 1, 1), None)  # type: ignore[arg-type]
        if ref == "nope":
            assert row.reason == "git checkout: 'nope' is no tag, commit or branch of repo"
        else:
            assert row.reason.endswith("repo: no pyproject.toml, no project"), row.reason
    row = fleet.judge(f"file://{repo}", chosen, tmp_path, date(2027, 1, 1), None)  # type: ignore[arg-type]
    assert row.reason == "a git URL names its ref: <url>@<tag, commit or branch>"
