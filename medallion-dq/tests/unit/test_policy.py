"""A conventions pack's policy: its severities apply in the projects that name it, a project may
tighten them, a loosened lock is DQC017 naming the pack, the setting and the project's line, and
`conventions show` says where each setting comes from."""

from __future__ import annotations

import pytest

from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli
from sample import manifest_of, project_copy

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
    found = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC005"]
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
    assert {p.severity for p in conventions.check(manifest_of(project)) if p.code == "DQC005"} == {
        "error"
    }


def test_a_project_may_tighten_or_set_what_the_pack_does_not_lock(project):
    severities(project, 'DQC010 = "error", DQC005 = "error"')
    assert not [p for p in conventions.check(manifest_of(project)) if p.code == "DQC017"]


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
        ("severity: {DQC005: error\n", "expected ',' or '}'"),
        ("- DQC005\n", "the top level must be a mapping"),
    ],
)
def test_a_broken_policy_is_one_line_naming_the_pack(project, installed_pack, policy_yml, said):
    installed_pack(LIBRARY, policy_yml)
    problems = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC000"]
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
    found = [str(p) for p in conventions.check(manifest_of(project)) if p.code == "DQC017"]
    assert found[0].startswith(
        f"DQC017 pyproject.toml line {line}: [tool.medallion.conventions] sets DQC004 = 'off':"
        " looser than 'warning', which conventions pack acme locks"
    )
    assert len(found) == 2 and "sets layers = {'silver': 'clean'}" in found[1], found


LAYER_POLICY = """\
thresholds: {silver: 0.02}
quarantine: {silver: view}
required: [owner, examples]
locked: [thresholds]
"""
LOOSE = """\
dataset: silver_orders
layer: silver
threshold: 0.1
rules:
  - name: valid_order_id
    constraint: order_id IS NOT NULL
    action: drop
    owner: orders-team
    threshold: 0.01
    examples: {pass: [{order_id: a}], fail: [{order_id: null}]}
  - {name: positive_amount, constraint: amount > 0, action: warn, threshold: 0.5}
"""


def gate_task(root, *extra: str) -> None:
    """Give the sample's quality_gate task `extra` parameters."""
    job = root / "resources/medallion.job.yml"
    text = job.read_text(encoding="utf-8")
    start = text.index("- acme_orders\n")
    at = start + len("- acme_orders\n")
    indent = " " * (start - text.rindex("\n", 0, start) - 1)
    job.write_text(text[:at] + "".join(f"{indent}- {p}\n" for p in extra) + text[at:])


def test_the_packs_layer_policy_is_held_against_each_rule_file(project, installed_pack):
    """The pack's thresholds, quarantine form and required fields of a layer, said per rule
    file: a looser threshold than the locked default is DQC017, the rest DQC019."""
    installed_pack(LIBRARY, LAYER_POLICY)
    (project / "src/acme_orders/rules/silver/orders.yml").write_text(LOOSE, encoding="utf-8")
    gate_task(project, "--pack", "acme")
    where = "src/acme_orders/rules/silver/orders.yml"
    said = sorted(
        str(p)
        for p in conventions.check(manifest_of(project))
        if p.code in ("DQC017", "DQC019") and p.file == where
    )
    assert said == sorted(
        [
            f"DQC017 {where}: threshold: 0.1 is looser than the 0.02 conventions pack acme locks"
            " for silver; fix: lower it to 0.02 or less, or remove it (the pack's applies)",
            f"DQC017 {where}: rule 'positive_amount': threshold: 0.5 is looser than the 0.02"
            " conventions pack acme locks for silver; fix: lower it to 0.02 or less, or remove"
            " it (the pack's applies)",
            f"DQC019 {where}: quarantine: table, but conventions pack acme keeps the dropped rows"
            " of silver as a view; fix: write quarantine: view in the rule file",
            f"DQC019 {where}: rule 'positive_amount': rule has no owner and no examples, which"
            " conventions pack acme requires of every rule; fix: add owner:, examples: to the"
            " rule (owner: once for the file also does)",
        ]
    ), said
    shown = conventions_show(project)
    assert "thresholds.silver  0.02" in shown and "pack acme 1.0.0, locked" in shown


def conventions_show(root) -> str:
    import contextlib
    import io
    import os

    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out):
            cli.main(["conventions", "show"])
    finally:
        os.chdir(cwd)
    return out.getvalue()


@pytest.mark.parametrize(
    ("parameters", "refused"), [((), True), (("--pack", "other"), True), (("--pack=acme",), False)]
)
def test_a_gate_task_must_name_the_pack_whose_thresholds_it_applies(
    project, installed_pack, parameters, refused
):
    installed_pack(LIBRARY, "thresholds: {gold: 0}\n")
    gate_task(project, *parameters)
    said = [str(p) for p in conventions.check(manifest_of(project)) if p.code == "DQC019"]
    assert said == (
        [
            "DQC019 resources/medallion.job.yml: task quality_gate runs the quality gate without"
            " --pack acme: it would not apply the default thresholds of acme; fix: add - --pack"
            " and - acme to the task's parameters"
        ]
        if refused
        else []
    )


@pytest.mark.parametrize(
    ("policy_yml", "said"),
    [
        ("thresholds: {silver: 5%}\n", "thresholds.silver = 5% is not a fraction"),
        ("thresholds: [0.1]\n", "'thresholds' must map layers to fractions"),
        ("quarantine: {silver: heap}\n", "'quarantine' must map layers to view or table"),
        ("required: [colour]\n", "'required' must list rule fields of description, owner"),
        ("locked: [required]\n", "locked: 'required' is no code"),
        ("thresholds: {sliver: 0.01}\n", "thresholds: unknown layer 'sliver'"),
        ("thresholds: {1: 0.01}\n", "thresholds: unknown layer 1"),
        ("quarantine: {sliver: view}\n", "quarantine: unknown layer 'sliver'"),
        ("thresholds: {silver: 1.5}\n", "thresholds.silver = 1.5 is not a fraction"),
        ("thresholds: {silver: -0.1}\n", "thresholds.silver = -0.1 is not a fraction"),
        ("thresholds: {silver: .nan}\n", "thresholds.silver = nan is not a fraction"),
        ("thresholds: {silver: .inf}\n", "thresholds.silver = inf is not a fraction"),
        ("thresholds: {silver: true}\n", "thresholds.silver = True is not a fraction"),
        ("thresholds: {silver: null}\n", "thresholds.silver = None is not a fraction"),
        ("thresholds: {silver: 0.1, silver: 0.2}\n", "duplicate key 'silver'"),
        ("thresholds:\n", "'thresholds' must map layers to fractions"),
        ("layers: [a]\n", "'layers' must list the folder names of bronze, silver and gold"),
        ("layers: {sliver: clean}\n", "'layers' must list the folder names"),
        ("layers: {silver: ''}\n", "layers: silver must be a folder name"),
        ("quarantine_suffix: ''\n", "'quarantine_suffix' must be a non-empty string"),
        ("quarantine_suffix: [a]\n", "'quarantine_suffix' must be a non-empty string"),
        ("required: owner\n", "'required' must list rule fields"),
        ("? [a]\n: 1\n", "unhashable key"),
        ("[]\n", "the top level must be a mapping"),
    ],
)
def test_a_broken_layer_policy_is_one_line_naming_the_pack(
    project, installed_pack, policy_yml, said
):
    installed_pack(LIBRARY, policy_yml)
    problems = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC000"]
    assert [(p.file, said in p.message) for p in problems] == [("pack acme policy.yml", True)], [
        str(p) for p in problems
    ]


def test_a_wrong_pack_policy_is_the_packs_to_fix_through_the_cli(
    project, installed_pack, monkeypatch, capsys
):
    """The pack's own mistake is one DQC000 line against the pack's policy.yml with the fix for
    its owners (not the team's pyproject.toml, which cannot fix it), exit 1, no traceback; the
    misspelt layer does not leave silver silently without its locked default."""
    monkeypatch.chdir(project)
    for policy_yml, said in [
        ("thresholds: {sliver: 0.01}\nlocked: [thresholds]\n", "thresholds: unknown layer"),
        ("layers: [a, b]\n", "'layers' must list the folder names of bronze, silver and gold"),
        ("quarantine_suffix: 5\n", "'quarantine_suffix' must be a non-empty string"),
    ]:
        installed_pack(LIBRARY, policy_yml)
        assert cli.main(["check"]) == 1
        out, err = capsys.readouterr()
        (line,) = [line for line in out.splitlines() if line.startswith("DQC000")]
        assert line.startswith(f"DQC000 pack acme policy.yml: {said}"), line
        assert line.endswith("(the pack's owners fix it: tell them, or pin the version before)")
        assert "Traceback" not in out + err


def test_a_project_cannot_set_what_only_the_pack_sets(project):
    with (project / "pyproject.toml").open("a", encoding="utf-8") as file:
        file.write("\n[tool.medallion.conventions.thresholds]\nsilver = 0.5\n")
    said = [str(p) for p in conventions.check(manifest_of(project)) if p.code == "DQC000"]
    assert said == [
        "DQC000 pyproject.toml: [tool.medallion.conventions] sets thresholds, which only a"
        " conventions pack sets; fix: remove it; a rule file sets its own threshold: (stricter"
        " than the pack's)"
    ]


def test_the_gate_applies_the_packs_default_for_the_layer(installed_pack):
    """As the gate task reads it on Databricks (`--pack acme`): a rule whose rule file sets no
    threshold is judged by its layer's default; its own threshold still comes first."""
    from medallion_dq import gate, library, rules

    installed_pack(LIBRARY, "thresholds: {silver: 0.1, gold: 0}\n")
    assert gate.pack_argument(["--rules-package", "x", "--pack", "acme"]) == "acme"
    by_layer = library.pack_thresholds(gate.pack_argument(["--pack=acme"]) or "")
    orders = rules.load("orders.yml", text=LOOSE.replace("threshold: 0.1\n", ""))
    metrics = [
        {"dataset": "silver_orders", "name": "valid_order_id", "passed": 92, "failed": 8},
        {"dataset": "silver_orders", "name": "positive_amount", "passed": 92, "failed": 8},
    ]
    layer = gate.layer_defaults([orders], by_layer)
    assert layer == {"silver_orders": 0.1}
    verdict = gate.evaluate(metrics, orders.thresholds(), layer=layer)
    by_rule = {row.rule: (row.threshold, row.threshold_source, row.ok) for row in verdict.rows}
    assert by_rule == {
        "valid_order_id": (0.01, "rule", False),
        "positive_amount": (0.5, "rule", True),
    }
    no_own = rules.load("orders.yml", text=NO_OWNER)
    verdict = gate.evaluate(metrics[:1], {}, layer=gate.layer_defaults([no_own], by_layer))
    assert [(r.threshold, r.threshold_source, r.ok) for r in verdict.rows] == [(0.1, "layer", True)]
    assert gate.evaluate(metrics[:1], {}).passed is False  # without the pack: 0


def test_the_report_shows_the_threshold_the_gate_applies(project, installed_pack):
    """The report's thresholds come from the rule files read once, with the pack's default for
    a layer where a rule file sets none, as the gate task's `--pack` applies it."""
    from medallion_dq.project import Project
    from medallion_dq.tools import report

    installed_pack(LIBRARY, "thresholds: {silver: 0.1}\n")
    thresholds, clauses = report.gate_inputs(Project(project))
    assert thresholds["silver_orders"] == 0.1  # its rule file (NO_OWNER) sets none
    assert thresholds["silver_customer_changes"] == 0.05  # its file's own
    assert set(clauses) == {"gold_order_keys.unique_order_id"}  # of the contract; silver's replaced


@pytest.mark.parametrize(
    ("policy_yml", "said"),
    [
        ("thresholds: {sliver: 0.01}\n", "thresholds: unknown layer 'sliver'"),
        ("- thresholds\n", "the top level must be a mapping"),
        ("thresholds: {silver: 2}\n", "thresholds.silver = 2 is not a fraction between 0 and 1"),
    ],
)
def test_the_gate_refuses_what_check_refuses_in_the_packs_thresholds(
    installed_pack, policy_yml, said
):
    """On Databricks the gate reads the pack's thresholds alone (no `check` before it): a
    misspelt layer stops it, naming the pack's file, instead of leaving silver without its
    default."""
    from medallion_dq import library

    installed_pack(LIBRARY, policy_yml)
    with pytest.raises(library.LibraryError) as raised:
        library.pack_thresholds("acme")
    assert str(raised.value).startswith(f"pack acme policy.yml: {said}; ")
    assert str(raised.value).endswith(
        "(the pack's owners fix it: tell them, or pin the version before)"
    )
