"""`contract import` over a project that already judges what the contract says: the check it
has is taken over (said in a note), never judged a second time beside it, and import -> export
-> import is a fixed point (the second import changes no byte).

The producer's contract here is the sample's, as another team would write it: its own id and
team, the object called `purchases` (the dataset silver_orders), the uniqueness clause without
an id. The sample's rule files are handed over as the refusal says (their `contract:` mapping
deleted)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from medallion_dq import rules
from medallion_dq.tools import cli
from sample import sample_project


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(sample_project(), root, ignore=shutil.ignore_patterns(".local", "*.pyc"))
    monkeypatch.chdir(root)
    for name in ("silver/orders.yml", "gold/order_keys.yml"):  # handed over to the producer
        path = rules_of(root) / name
        kept = [line for line in path.read_text().splitlines() if not line.startswith("contract:")]
        path.write_text("\n".join(kept) + "\n")
    return root


def rules_of(root: Path) -> Path:
    return root / "src" / "acme_orders" / "rules"


def run(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "contract", *args])


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(rules_of(root).rglob("*.yml"))}


def producers(root: Path, change=lambda doc: None) -> Path:
    doc = yaml.safe_load((root / "contracts" / "orders.odcs.yaml").read_text())
    doc.update(id="shop-orders", team={"name": "shop-team"})
    doc["schema"][0]["name"] = "purchases"
    unique = doc["schema"][0]["properties"][0]["quality"][1]
    del unique["id"]
    unique["description"] = "No order twice."
    change(doc)
    out = root / "producer.odcs.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def edit(root: Path, name: str, change) -> None:
    """A rule file of the sample, changed by `change(data)` (the team's own edit)."""
    path = rules_of(root) / name
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def round_trip(root: Path, contract: Path, tmp_path: Path, capsys) -> dict[str, str]:
    """Import, export, import the export, import the contract again: the files of the first
    import, byte for byte, each import after it saying `unchanged`."""
    assert run(root, "import", str(contract)) == 0
    first = snapshot(root)
    capsys.readouterr()
    exported = tmp_path / "exported.odcs.yaml"
    assert run(root, "export", "--dataset", "silver_orders", "--out", str(exported)) == 0
    for again in (exported, contract):
        capsys.readouterr()
        assert run(root, "import", str(again)) == 0
        said = capsys.readouterr().out
        assert "rules/silver/orders.yml: unchanged" in said, said
        assert "rules/gold/order_keys.yml: unchanged" in said, said
        assert snapshot(root) == first
    capsys.readouterr()
    assert run(root, "check", str(contract)) == 0, capsys.readouterr().out  # no drift either
    return first


def test_the_uniqueness_the_project_judges_is_not_judged_twice(project, tmp_path, capsys):
    """Before: a second gold file, gold/purchase_keys.yml, beside gold/order_keys.yml; export
    took the other file's clause, and the next import changed the description and the clause."""
    contract = producers(project)
    assert run(project, "import", str(contract)) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in (rules_of(project) / "gold").glob("*.yml")) == [
        "daily_revenue.yml",
        "order_keys.yml",
    ]
    keys = rules.load(rules_of(project) / "gold/order_keys.yml")
    (unique,) = keys.rules
    assert (keys.dataset, keys.owner, keys.contract.id) == (
        "gold_order_keys",
        "shop-team",
        "shop-orders",
    )
    assert (unique.constraint, unique.description, unique.contract) == (
        "duplicate_order_ids = 0",
        "No order twice.",
        "purchases.order_id: duplicateValues",
    )
    assert (
        "note: purchases.order_id: duplicateValues: uniqueness is judged by the gold dataset"
        " gold_order_keys (rules/gold/order_keys.yml)\n"
    ) in out
    assert "a publish pipeline file defines it" not in out  # the sample's pipeline does
    round_trip(project, contract, tmp_path, capsys)


def test_a_teams_uniqueness_check_by_another_name_is_taken_over(project, tmp_path, capsys):
    edit(project, "gold/order_keys.yml", lambda d: d["rules"][0].update(name="no_duplicates"))
    edit(project, "gold/order_keys.yml", lambda d: d["rules"][0].pop("contract"))
    contract = producers(project)
    assert run(project, "import", str(contract)) == 0
    assert (
        "note: gold/order_keys.yml: the team's no_duplicates checks what clause 'purchases."
        "order_id: duplicateValues' does: it is the contract's unique_order_id now, not a second"
        " one"
    ) in capsys.readouterr().out
    (unique,) = rules.load(rules_of(project) / "gold/order_keys.yml").rules
    assert unique.name == "unique_order_id"
    round_trip(project, contract, tmp_path, capsys)


def _row_count(doc: dict) -> None:
    doc["schema"][0]["quality"] = [
        {"id": "some_orders", "type": "library", "metric": "rowCount", "mustBeGreaterThan": 0}
    ]


@pytest.mark.parametrize(
    ("team", "change", "kind", "taken"),
    [
        (  # the contract's nullValues of order_id: valid_order_id
            {"name": "order_id_present", "constraint": "order_id  is not NULL", "action": "drop"},
            lambda doc: None,
            "rule",
            "valid_order_id",
        ),
        (
            {"name": "has_rows", "volume": {"min_rows": 10}},
            _row_count,
            "check",
            "some_orders",
        ),
        (
            {"name": "stale_orders", "freshness": {"column": "order_ts", "max_age": "2d"}},
            lambda doc: None,
            "check",
            "fresh_orders",
        ),
        (
            {
                "name": "customer_exists",
                "references": {"column": "customer_id", "dataset": "silver_customers"},
            },
            lambda doc: None,
            "check",
            "known_customer",
        ),
    ],
    ids=["not-null", "row-count", "freshness", "references"],
)
def test_a_teams_check_of_what_a_clause_says_is_not_doubled(
    project, tmp_path, capsys, team, change, kind, taken
):
    """The team's own item (no `contract:`) judging what a clause says, by another name: the
    contract's item takes its place; the team's other items (daily_volume: ratios) stay."""
    section = "rules" if kind == "rule" else "checks"

    def own(data: dict) -> None:
        data[section] = [i for i in data[section] if i["name"] != taken] + [team]

    edit(project, "silver/orders.yml", own)
    contract = producers(project, change)
    assert run(project, "import", str(contract)) == 0
    out = capsys.readouterr().out
    assert f"the team's {team['name']} checks what clause" in out
    assert f"it is the contract's {taken} now, not a second one" in out
    made = rules.load(rules_of(project) / "silver/orders.yml")
    names = [item.name for item in getattr(made, section)]
    assert taken in names and team["name"] not in names
    if kind == "check":
        others = [c.name for c in made.checks if c.kind == next(k for k in team if k != "name")]
        assert others == [taken] or others == ["daily_volume", taken]  # the team's ratios stay
        assert "daily_volume" in names
    round_trip(project, contract, tmp_path, capsys)


def test_a_row_count_of_severity_warning_is_a_check_that_warns_and_goes_round(
    project, tmp_path, capsys
):
    def warning(doc: dict) -> None:
        _row_count(doc)
        doc["schema"][0]["quality"][0]["severity"] = "warning"

    contract = producers(project, warning)
    first = round_trip(project, contract, tmp_path, capsys)
    assert (
        "    volume: {min_rows: 1}\n    action: warn\n"
        in first["src/acme_orders/rules/silver/orders.yml"]
    )
    (found,) = [
        c
        for c in rules.load(rules_of(project) / "silver/orders.yml").checks
        if c.name == "some_orders"
    ]
    assert (found.kind, found.action) == ("volume", "warn")
    exported = yaml.safe_load((tmp_path / "exported.odcs.yaml").read_text())
    (clause,) = [q for q in exported["schema"][0]["quality"] if q.get("metric") == "rowCount"]
    assert (clause["id"], clause["severity"]) == ("some_orders", "warning")
