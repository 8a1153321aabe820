"""Library rules (`use: <pack>.<rule>(...)` in a rule file): resolved by the runtime from the
built-in pack and from an installed pack, with one DQ031 line for a use that does not resolve."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from medallion_dq import rules
from medallion_dq.problems import DataQualityError


def rule_file(*entries: str) -> str:
    body = "".join(textwrap.indent(textwrap.dedent(e).strip(), "  ") + "\n" for e in entries)
    return f"dataset: silver_customers\nrules:\n{body}"


def problems(text: str) -> list[str]:
    with pytest.raises(DataQualityError) as raised:
        rules.parse(text, "rules/silver/customers.yml")
    return [str(p) for p in raised.value.problems]


def test_a_library_rule_becomes_the_rule_the_file_would_write():
    parsed = rules.parse(
        rule_file(
            """
            - name: valid_email
              use: medallion.email(column=email)
              action: drop
              threshold: 0.01
              owner: crm-team
            """,
            """
            - name: known_country
              use: medallion.in_set(column=country, values=['DE', 'FR'])
            """,
        ),
        "rules/silver/customers.yml",
    )
    email, country = parsed.rules
    assert email.constraint == "email RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$'"
    assert (email.action, email.threshold, email.owner) == ("drop", 0.01, "crm-team")
    assert email.use == "medallion.email(column=email)"
    assert email.description == "email is an email address"
    # a rule whose parameters are all columns brings its examples, keyed by the team's column
    assert {e.expect: e.row for e in email.examples}["pass"] == {"email": "ada@example.com"}
    assert country.constraint == "country IN ('DE', 'FR')" and country.action == "warn"
    assert country.examples == ()  # its examples fit the library's values, not the team's
    assert parsed.drop == {"valid_email": email.constraint}


def test_a_value_cannot_add_sql_of_its_own():
    parsed = rules.parse(
        rule_file(
            """
            - name: odd_name
              use: medallion.matches(column='first name`x', pattern="' OR true --")
            """
        ),
        "rules/silver/customers.yml",
    )
    (rule,) = parsed.rules
    assert rule.constraint == "`first name``x` RLIKE '\\' OR true --'"


def test_a_number_is_held_as_written_negatives_too():
    parsed = rules.parse(
        rule_file(
            "- name: a\n  use: medallion.between(column=x, low=-1, high=-0.5)\n",
            "- name: b\n  use: medallion.between(column=x, low=-1e3, high=+1E300)\n",
            f"- name: c\n  use: medallion.between(column=order, low=.5, high={'9' * 38})\n",
            "- name: d\n  use: medallion.max_length(column=x, length=0.10)\n",
        ),
        "rules/silver/customers.yml",
    )
    assert [r.constraint for r in parsed.rules] == [
        "x BETWEEN (-1) AND (-0.5)",
        "x BETWEEN (-1e3) AND 1E300",
        f"`order` BETWEEN .5 AND {'9' * 38}",  # a reserved word as a column: quoted
        "length(x) <= 0.10",  # not 0.1: the digits written, as Spark reads them
    ]
    assert parsed.rules[0].description == "x is from -1 to -0.5"


def test_a_negative_number_cannot_start_a_comment(installed_pack):
    """`{x} - {low}` with low=-1 would be `x - -1`: `--` starts a SQL comment."""
    installed_pack(
        "rules:\n  - name: above\n    params: {x: column, low: number}\n"
        "    constraint: '{x} -{low} > 0'\n"
    )
    (rule,) = rules.parse(
        rule_file("- name: r\n  use: acme.above(x=amount, low=-1)\n"), "rules/silver/orders.yml"
    ).rules
    assert rule.constraint == "amount -(-1) > 0"


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("1e999", "high takes a number a double holds (4.9e-324 to 1.7e308), not 1e999"),
        ("-1e999", "not -1e999"),
        ("1e-400", "not 1e-400"),
        ("9" * 39, "high takes a number of at most 38 digits, or with an exponent"),
        ("nan", "high takes a number, as SQL writes it (e.g. 10, -0.5, 1e3)"),
        ("inf", "high takes a number, as SQL"),
        ("float('inf')", "high takes a number, as SQL"),
        ("0x10", "high takes a number, as SQL"),
        ("1_000", "high takes a number, as SQL"),
        ("1j", "high takes a number, as SQL"),
        ("True", "high takes a number, as SQL"),
        ("'5'", "high takes a number, as SQL"),
        ("-(1)", "high takes a number, as SQL"),
        ("1 + 1", "high takes a number, as SQL"),
        ("\uff11", "is not <pack>.<rule>(...): unreadable at character 41 ('\uff11')"),
        ("", "is not <pack>.<rule>(...): unreadable at character 41 (')')"),
    ],
)
def test_a_number_out_of_range_or_not_as_sql_writes_it_is_one_dq031_line(value, said):
    use = f"medallion.between(column=x, low=0, high={value})"
    (line,) = problems(rule_file(f"- name: r\n  use: {use!r}\n"))
    assert line.startswith("DQ031 rules/silver/customers.yml: rule 'r': ") and said in line, line
    assert "fix: write" in line


@pytest.mark.parametrize(
    ("use", "said"),
    [
        ("medallion.between(column=x, low=1, low=2, high=3)", "parameter 'low' given twice"),
        ("medallion.not_null(column=a, column=b)", "parameter 'column' given twice"),
        ("medallion.not_null(column=True)", "column takes a column name"),
        ("medallion.not_null(column='')", "column takes a column name"),
        ("medallion.not_null(column='a\\nb')", "column takes a column name"),
        ("medallion.in_set(column=c, values=[])", "values takes a list of texts"),
        ("medallion.in_set(column=c, values=['a', 1])", "values takes a text in quotes"),
        ("medallion.matches(column=c, pattern=b'x')", "pattern takes a text in quotes"),
        ("medallion.matches(column=c, pattern=f'{c}')", "pattern takes a text in quotes"),
    ],
)
def test_a_value_of_the_wrong_kind_or_given_twice_is_one_dq031_line(use, said):
    (line,) = problems(rule_file(f"- name: r\n  use: {use!r}\n"))
    assert line.startswith("DQ031 rules/silver/customers.yml: rule 'r': ") and said in line, line


def test_values_stay_literals_whatever_they_hold():
    """Text that looks like SQL, a quote, a backslash, unicode digits: literals; a column is
    written as given (Python would read a full-width name as its ASCII one)."""
    uses = [
        "medallion.in_set(column=c, values=['x\\' OR 1=1 --', '\uff11', 'a\\\\'])",
        "medallion.not_null(column=\uff49\uff44)",
    ]
    text = rule_file(*(f"- name: r{n}\n  use: {json.dumps(use)}\n" for n, use in enumerate(uses)))
    a, b = rules.parse(text, "rules/silver/customers.yml").rules
    assert a.constraint == "c IN ('x\\' OR 1=1 --', '\uff11', 'a\\\\')"
    assert b.constraint == "`\uff49\uff44` IS NOT NULL"


@pytest.mark.parametrize(
    ("use", "said"),
    [
        ("acme.email(column=email)", "no conventions pack 'acme' is installed (installed: "),
        ("medallion.emial(column=email)", "pack 'medallion' has no rule 'emial'; fix: use one of"),
        (
            "medallion.between(column=x, low=1)",
            "missing parameter ['high']; fix: write medallion.between(column=<column>, "
            "low=<number>, high=<number>)",
        ),
        (
            "medallion.in_set(column=c, values=DE)",
            "values takes a list of texts, e.g. ['DE', 'FR']",
        ),
        ("medallion.not_null(column=c, colour=1)", "unknown parameter ['colour']"),
        ("medallion.not_null(c)", "a parameter without its name"),
        ("medallion.not_null(column=c) + 1", "is not <pack>.<rule>(...)"),
        ("__import__('os').system('x')", "names no pack"),
        ("medallion.not_null(column=", "is not <pack>.<rule>(...)"),
    ],
    ids=[
        "pack",
        "rule",
        "missing",
        "kind",
        "unknown",
        "positional",
        "expression",
        "call",
        "syntax",
    ],
)
def test_a_use_that_does_not_resolve_is_one_dq031_line_with_its_fix(use, said):
    text = rule_file(f"- name: r\n  use: {use!r}\n", "- name: ok\n  constraint: id > 0\n")
    (line,) = problems(text)
    assert line.startswith("DQ031 rules/silver/customers.yml: rule 'r': ")
    assert said in line and "fix: " in line


def test_a_rule_with_both_a_constraint_and_a_use_is_refused():
    text = rule_file("- name: r\n  use: medallion.not_null(column=id)\n  constraint: id > 0\n")
    assert problems(text) == [
        "DQ031 rules/silver/customers.yml: rule 'r': a rule has a constraint or uses a library"
        " rule, not both; fix: drop one"
    ]


def test_an_installed_pack_is_found_by_its_entry_point(installed_pack):
    installed_pack(
        "rules:\n"
        "  - name: order_id\n"
        "    params: {column: column}\n"
        "    constraint: \"{column} RLIKE '^ORD-[0-9]{6}$'\"\n"
        "    description: '{column} is an order number'\n"
    )
    (rule,) = rules.parse(
        rule_file("- name: valid_id\n  use: acme.order_id(column=order_id)\n  action: drop\n"),
        "rules/silver/orders.yml",
    ).rules
    assert rule.constraint == "order_id RLIKE '^ORD-[0-9]{6}$'"
    assert rule.description == "order_id is an order number"


OWNERS = "(the pack's owners fix it: tell them, or pin the version before)"
USED_BY = "(used by rules/silver/customers.yml, rule 'r')"
GOOD = "  - {name: ok, params: {c: column}, constraint: '{c} > 0'}\n"


@pytest.mark.parametrize(
    ("library_yml", "said"),
    [
        ("rules: [", "DQ031 pack acme library.yml: line "),
        ("rules: {}", "DQ031 pack acme library.yml: it has no list 'rules:'"),
        ("rules: []\nrule: []\n", "DQ031 pack acme library.yml: unknown key 'rule'"),
        ("rules:\n  - name: x\n  - name: x\n", "pack acme library.yml: rule 'x': two rules"),
        ("rules:\n  - name: x\n    params: {c: column}\n", "rule 'x': it has no constraint"),
        (
            "rules:\n  - name: x\n    params: {c: column}\n    constraint: id > 0\n",
            "rule 'x': the constraint has no slot for ['c']",
        ),
        (
            "rules:\n  - name: x\n    params: {c: colour}\n    constraint: '{c} > 0'\n",
            "params must map names to column, text, number, texts, numbers",
        ),
        (
            "rules:\n  - name: x\n    params: {c: column, 2d: text}\n    constraint: '{c} > 0'\n",
            "DQ031 pack acme library.yml: rule 'x': parameter '2d' is not a word",
        ),
        (
            "rules:\n  - name: x\n    params: {c: column}\n    constraint: '{c} > 0'\n"
            "    descripton: typo\n",
            "DQ031 pack acme library.yml: rule 'x': unknown field 'descripton'",
        ),
        (
            "rules:\n  - name: x\n    params: {c: column}\n    constraint: '{c} > 0'\n"
            "    examples: [{c: 1}]\n",
            "rule 'x': examples must map pass, fail and with to rows",
        ),
    ],
    ids=[
        "yaml",
        "no-list",
        "unknown-key",
        "twice",
        "no-constraint",
        "no-slot",
        "kind",
        "param-name",
        "unknown-field",
        "examples",
    ],
)
def test_a_broken_pack_is_said_against_its_library_with_the_owners_fix(
    installed_pack, library_yml, said
):
    installed_pack(library_yml)
    (line,) = problems(rule_file("- name: r\n  use: acme.x(c=id)\n"))
    assert line.startswith("DQ031 pack acme library.yml: ") and said in line, line
    assert USED_BY in line and line.endswith(OWNERS)


@pytest.mark.parametrize(
    ("constraint", "said"),
    [
        (
            "{c} > 0 AND reflect('java.lang.System', 'exit', '0') IS NOT NULL",
            "DQ010 pack acme library.yml: rule 'x': constraint: function reflect() calls Java",
        ),
        (
            "`java_method`('java.lang.Runtime', 'getRuntime') IS NULL OR {c} > 0",
            "DQ010 pack acme library.yml: rule 'x': constraint: function java_method() calls",
        ),
        ("{c} > 0; DROP TABLE t", "DQ008 pack acme library.yml: rule 'x': constraint: "),
        ("{c} IN (SELECT id FROM t)", "DQ009 pack acme library.yml: rule 'x': constraint: "),
        ("{c} > {limt}", "DQ007 pack acme library.yml: rule 'x': constraint: {limt} names no"),
        ("{c} LIKE '{v}%'", "DQ007 pack acme library.yml: rule 'x': constraint: SQL does not"),
    ],
    ids=["reflect", "java_method", "statement", "subquery", "slot-typo", "slot-in-quotes"],
)
def test_a_library_constraint_a_rule_may_not_hold_is_the_packs_not_the_teams(
    installed_pack, constraint, said
):
    """Checked with every slot filled, before any team's values: what is wrong is in the pack,
    whatever the use; the pack's other rules still resolve."""
    params = "{c: column, v: text}" if "{v}" in constraint else "{c: column}"
    installed_pack(
        "rules:\n  - name: x\n    params: " + params + "\n    constraint: " + json.dumps(constraint)
        + "\n" + GOOD
    )  # fmt: skip
    use = "acme.x(c=id, v='a')" if "{v}" in constraint else "acme.x(c=id)"
    text = rule_file(f"- name: r\n  use: {use!r}\n", "- name: s\n  use: acme.ok(c=id)\n")
    (line,) = problems(text)
    assert line.startswith(said) and USED_BY in line and line.endswith(OWNERS), line
    assert "rules/silver/customers.yml: rule" not in line  # the team's file is not blamed


def test_the_packs_own_tests_see_every_broken_rule(installed_pack):
    """A broken rule no team uses yet is in `broken`, which the pack template's tests read."""
    from medallion_dq import library

    installed_pack(
        "rules:\n  - {name: not-a-word, params: {c: column}, constraint: '{c} > 0'}\n" + GOOD
    )
    rules_ = library.library("acme")
    assert list(rules_) == ["ok"]
    assert [str(e) for e in rules_.broken.values()] == [
        "pack acme library.yml: rule 'not-a-word': the name is not a word: no `use:` can call"
        " it; use letters, digits and _ " + OWNERS
    ]


def test_a_pack_whose_package_is_gone_is_one_line(installed_pack):
    shutil.rmtree(installed_pack("rules: []\n"))  # its metadata stays, naming it
    (line,) = problems(rule_file("- name: r\n  use: acme.x(c=id)\n"))
    assert "pack 'acme' names package 'acme_conventions', which does not import" in line
    assert line.endswith(
        "fix: reinstall the pack (pip install --force-reinstall <its distribution>)"
    )


def test_hostile_uses_through_check_are_one_line_each_and_no_traceback(
    installed_pack, tmp_path, monkeypatch, capsys
):
    """`medallion-dq check` in a project copy: each wrong use is one line against the file that
    holds the mistake (the team's rule file, or the pack's library.yml), exit 1; the values
    that are right (a negative number, SQL-looking text) pass as literals."""
    from medallion_dq.tools import cli
    from sample import project_copy

    installed_pack(
        "rules:\n  - name: jvm\n    params: {c: column}\n"
        "    constraint: \"reflect('java.lang.System', 'exit', '0') IS NULL OR {c} > 0\"\n"
    )
    root = project_copy(tmp_path / "team", pack="acme")
    uses = {
        "r1": "medallion.between(column=amount, low=0, high=1e999)",
        "r2": "medallion.between(column=amount, low=1, low=2, high=3)",
        "r3": "medallion.between(column=amount, low=-1, high=5)",
        "r4": "medallion.between(column=amount, low=\uff10, high=5)",
        "r5": "acme.jvm(c=amount)",
        "r6": 'medallion.in_set(column=currency, values=["\' OR 1=1 --"])',
        "r7": "medallion.not_null(column=True)",
    }
    entries = "".join(
        f"  - {{name: {name}, use: {json.dumps(use)}, owner: t, description: d}}\n"
        for name, use in uses.items()
    )
    rule_file_ = root / "src/acme_orders/rules/silver/orders.yml"
    rule_file_.write_text(f"dataset: silver_orders\nlayer: silver\nrules:\n{entries}")
    monkeypatch.chdir(root)
    assert cli.main(["check"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    where = "src/acme_orders/rules/silver/orders.yml"
    said = [line for line in out.splitlines() if line.startswith("DQ0")]
    # The contract's drift does not say the rule file's problems again: it waits for them.
    drift = [line for line in out.splitlines() if line.startswith("DQC015")]
    assert drift == [
        "DQC015 contracts/orders.odcs.yaml: rules/silver/orders.yml: its rules do not load"
        f" ({len(said)} problem(s), the first: DQ031): the contract is compared with it once"
        " they do; fix: `medallion-dq contract import contracts/orders.odcs.yaml` writes its"
        " rules again, or change the contract"
    ], drift
    found = {name: [line for line in said if f"rule '{name}'" in line] for name in uses}
    assert {name: len(lines) for name, lines in found.items()} == {
        "r1": 1, "r2": 1, "r3": 0, "r4": 1, "r5": 1, "r6": 0, "r7": 1
    }  # fmt: skip
    assert found["r1"][0].startswith(f"DQ031 {where}: rule 'r1': ")
    assert "high takes a number a double holds" in found["r1"][0]
    assert "parameter 'low' given twice" in found["r2"][0]
    assert "unreadable at character 38 ('\uff10')" in found["r4"][0]
    assert found["r5"][0].startswith(
        "DQ010 pack acme library.yml: rule 'jvm': constraint: function reflect() calls Java"
    )
    assert "(used by rules/silver/orders.yml, rule 'r5')" in found["r5"][0]
    assert "column takes a column name" in found["r7"][0]
