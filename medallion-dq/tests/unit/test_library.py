"""Library rules (`use: <pack>.<rule>(...)` in a rule file): resolved by the runtime from the
built-in pack and from an installed pack, with one DQ031 line for a use that does not resolve."""

from __future__ import annotations

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


@pytest.mark.parametrize(
    ("library_yml", "said"),
    [
        ("rules: [", "pack 'acme': library.yml: while parsing"),
        ("rules: {}", "pack 'acme': library.yml has no list 'rules:'"),
        ("rules:\n  - name: x\n    params: {c: column}\n", "rule 'x' has no constraint"),
        (
            "rules:\n  - name: x\n    params: {c: column}\n    constraint: id > 0\n",
            "rule 'x': the constraint has no slot for ['c']",
        ),
        (
            "rules:\n  - name: x\n    params: {c: colour}\n    constraint: '{c} > 0'\n",
            "params must map names to column, text, number, texts, numbers",
        ),
    ],
    ids=["yaml", "no-list", "no-constraint", "no-slot", "kind"],
)
def test_a_broken_pack_is_named_with_the_way_out(installed_pack, library_yml, said):
    installed_pack(library_yml)
    (line,) = problems(rule_file("- name: r\n  use: acme.x(c=id)\n"))
    assert said in line
    assert line.endswith("fix: the pack is broken: tell its owners, or pin the version before")


def test_a_pack_whose_package_is_gone_is_one_line(installed_pack):
    shutil.rmtree(installed_pack("rules: []\n"))  # its metadata stays, naming it
    (line,) = problems(rule_file("- name: r\n  use: acme.x(c=id)\n"))
    assert "pack 'acme' names package 'acme_conventions', which does not import" in line
    assert line.endswith(
        "fix: reinstall the pack (pip install --force-reinstall <its distribution>)"
    )
