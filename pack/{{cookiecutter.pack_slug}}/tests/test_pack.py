"""The pack as the projects that use it see it: every library rule holds its examples on Spark,
used as a rule file uses it; the policy reads without a problem."""

from medallion_dq import library
from medallion_dq.project import policy
from medallion_dq.tools import examples

PACK = "{{ cookiecutter.pack }}"


def test_the_policy_reads():
    _, problems = policy.read_pack(PACK, policy.defaults())
    assert [str(p) for p in problems] == []


def test_every_library_rule_reads():
    """What a team's `check` would say against this pack's library.yml, said here first: a
    constraint a rule may not hold (reflect, a subquery), a slot naming no parameter, a
    misspelt field."""
    broken = library.library(PACK).broken
    assert [str(problem) for problem in broken.values()] == []


def test_every_rule_has_a_description_an_owner_and_examples():
    rules = library.library(PACK)
    assert rules
    assert [name for name, rule in rules.items() if not (rule.description and rule.owner)] == []
    assert [name for name, rule in rules.items() if not rule.examples] == []


def test_every_library_rule_holds_its_examples(spark):
    cases = examples.cases([examples.library_rule_set(PACK)])
    wrong = [str(problem) for problem in examples.judge(spark, cases) if problem is not None]
    assert wrong == []
