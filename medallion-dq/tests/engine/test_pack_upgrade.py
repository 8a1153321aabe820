"""`medallion-dq conventions diff --to`: the sample on conventions pack acme 1.0.0, tried with
1.1.0 (one library rule tightened, DQC005 raised to error and locked) on its landing files, on
the worker's warm server. The counts are checked against plain DataFrame filters over the same
rows; the threshold is set between the failed fractions before and after, so the gate passes
before the upgrade and fails after it."""

from __future__ import annotations

import json

import pytest

from medallion_dq import upgrade
from medallion_dq.project import Project
from sample import project_copy, typed_like_silver

pytestmark = pytest.mark.spark

LIBRARY = """\
rules:
  - name: plausible_amount
    params: {{column: column}}
    constraint: "{constraint}"
    description: "{{column}} is an amount an order can have"
    owner: finance-platform
    examples:
      pass: [{{column: 12.5}}]
      fail: [{{column: -1}}, {{column: null}}]
"""
BEFORE, AFTER = "{column} >= 0", "{column} >= 0 AND {column} <= 300"
POLICY_AFTER = "severity: {DQC005: error}\nlocked: [DQC005]\n"
RULES = """\
dataset: silver_orders
layer: silver
owner: orders-team
rules:
  - name: whole_record
    constraint: _corrupt_record IS NULL
    action: drop
    description: a record bronze could not parse
    threshold: 0.5
  - name: valid_amount
    use: acme.plausible_amount(column=amount)
    action: drop
    threshold: {threshold}
  - {{name: valid_order_id, constraint: order_id IS NOT NULL, action: drop, threshold: 0.5}}
"""
RAW_SCHEMA = (
    "order_id STRING, customer_id STRING, order_ts STRING, channel STRING, "
    "currency STRING, amount STRING, quantity STRING, _corrupt_record STRING"
)


def candidate_folder(root, version: str):
    """Pack acme's source folder at `version`: the tightened rule, the stricter policy."""
    package = root / "src" / "acme_conventions"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "library.yml").write_text(LIBRARY.format(constraint=AFTER), encoding="utf-8")
    (package / "policy.yml").write_text(POLICY_AFTER, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "acme-conventions"\nversion = "{version}"\n'
        '[project.entry-points."medallion_dq.packs"]\nacme = "acme_conventions"\n',
        encoding="utf-8",
    )
    return root


def test_an_upgrade_is_tried_on_the_projects_landing_files(local_spark, installed_pack, tmp_path):
    from pyspark.sql import functions as F

    spark = local_spark.spark
    installed_pack(LIBRARY.format(constraint=BEFORE), version="1.0.0")
    root = project_copy(tmp_path / "acme", pack="acme")

    # Silver's input, typed as silver types it: the rows valid_amount fails before and after.
    raw = spark.read.schema(RAW_SCHEMA).json(str(root / "fixtures/landing/orders/*.json"))
    intact = F.col("_corrupt_record").isNull()
    rows = typed_like_silver(raw.select(*(F.when(intact, F.col(c)).alias(c) for c in raw.columns)))
    amount = F.col("amount")
    total = rows.count()
    failing_before = rows.where(~F.coalesce(amount >= 0, F.lit(False))).count()
    failing_after = rows.where(~F.coalesce((amount >= 0) & (amount <= 300), F.lit(False))).count()
    assert failing_before < failing_after  # the fixtures hold orders over 300
    threshold = round((failing_before + failing_after) / 2 / total, 4)
    rule_file = root / "src/acme_orders/rules/silver/orders.yml"
    rule_file.write_text(RULES.format(threshold=threshold), encoding="utf-8")

    candidate = candidate_folder(tmp_path / "acme-conventions-1.1.0", "1.1.0")
    out = tmp_path / "out"
    code = upgrade.command(
        Project(root),
        str(candidate),
        json_path=str(out / "upgrade.json"),
        markdown_path=str(out / "upgrade.md"),
        local=local_spark,
    )
    assert code == 1  # the gate would fail after the upgrade
    said = json.loads((out / "upgrade.json").read_text())
    assert (said["pack"], said["before"], said["after"]) == ("acme", "1.0.0", "1.1.0")
    (orders,) = said["datasets"]  # the one rule file the pack's change reaches
    assert orders["dataset"] == "silver_orders" and orders["rows"] == total
    rules = {rule["name"]: rule for rule in orders["rules"]}
    assert rules["valid_amount"]["status"] == "changed"
    assert rules["valid_amount"]["failed"] == {"before": failing_before, "after": failing_after}
    assert rules["valid_amount"]["newly_failing"] == failing_after - failing_before
    assert {r["status"] for n, r in rules.items() if n != "valid_amount"} == {"unchanged"}
    assert said["gate"]["before"] == {"passes": True, "why": []}
    (why,) = said["gate"]["after"]["why"]
    assert why.startswith(f"silver_orders.valid_amount: {failing_after} of {total} row(s) fail")
    # DQC005 is an error under 1.1.0: valid_order_id has no description (valid_amount has the
    # library's).
    (changed,) = said["check"]["severity_changed"]
    assert changed.startswith("warning -> error: DQC005 src/acme_orders/rules/silver/orders.yml:")
    assert "rule 'valid_order_id': rule has no description" in changed
    assert said["check"]["appeared"] == said["check"]["disappeared"] == []
    markdown = (out / "upgrade.md").read_text()
    assert "**gate before: PASS**" in markdown and "**gate after: FAIL**" in markdown
