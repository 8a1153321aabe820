"""`medallion-dq contract`: a data contract (ODCS v3.1.0) into rule files, back, and the drift.

What a team relies on: the sample's contract makes the sample's rules; import -> export ->
import writes the same files; `check` finds a column added, removed or retyped in the contract
(exit 1, a line each); a file that is not ODCS is refused with the schema's message and its path
(exit 2, nothing written); the standard's own examples give rule files `check` accepts and
whose examples hold on Spark; the gate names the clause a failure breaks.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from contract_cases import EXAMPLES, HERE, ODCS_EXAMPLES, generated
from medallion_dq import dataset_checks, gate, rules
from medallion_dq.events import UpdateEvents
from medallion_dq.problems import MedallionDQError
from medallion_dq.project import Project, markup
from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli, contract
from sample import manifest_of, sample_project


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of the sample project, the working folder: commands here write its rule files."""
    root = tmp_path / "project"
    shutil.copytree(sample_project(), root, ignore=shutil.ignore_patterns(".local", "*.pyc"))
    monkeypatch.chdir(root)
    return root


def rule_dir(root: Path) -> Path:
    return root / "src" / "acme_orders" / "rules"


def run(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "contract", *args])


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(rule_dir(root).rglob("*.yml"))}


def edited(root: Path, change) -> Path:
    """The sample contract, changed by `change(document)`, written beside it."""
    doc = yaml.safe_load((root / "contracts" / "orders.odcs.yaml").read_text())
    change(doc)
    out = root / "contracts" / "changed.odcs.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def props(doc: dict) -> list[dict]:
    return doc["schema"][0]["properties"]


# --------------------------------------------------------------------------- the sample


def test_the_sample_contract_agrees_with_the_sample_rules(project, capsys):
    assert run(project, "check", "contracts/orders.odcs.yaml") == 0
    assert "the rule files agree with orders.odcs.yaml" in capsys.readouterr().out


def test_the_sample_contract_makes_the_sample_rules_but_daily_volume(project, capsys):
    """Imported into a project without the two files, the contract gives the same rules, checks
    and schema: all but daily_volume, a ratio to earlier updates no contract can state, and
    whole_record, bronze's mark of a record it could not parse (the team's own, as the
    pipeline reads bronze: DQC016 asks for it)."""
    before = {
        p.name: rules.load(p)
        for p in (
            rule_dir(project) / "silver/orders.yml",
            rule_dir(project) / "gold/order_keys.yml",
        )
    }
    for path in before:
        next(rule_dir(project).rglob(path)).unlink()
    assert run(project, "import", "contracts/orders.odcs.yaml") == 0
    out = capsys.readouterr().out
    assert "wrote rules/silver/orders.yml: 6 rule(s), 2 check(s), 7 column(s)" in out
    assert "wrote rules/gold/order_keys.yml: 1 rule(s)" in out
    assert 'F.countDistinct("order_id")).alias("duplicate_order_ids")' in out  # the gold dataset
    for name, old in before.items():
        new = rules.load(next(rule_dir(project).rglob(name)))
        assert {r.name: r for r in new.rules} == {
            r.name: r for r in old.rules if r.name != "whole_record"
        }
        assert (
            new.dataset,
            new.owner,
            new.threshold,
            new.quarantine,
            new.schema,
            new.contract,
        ) == (
            old.dataset,
            old.owner,
            old.threshold,
            old.quarantine,
            old.schema,
            old.contract,
        )
        assert {c.name: c for c in new.checks} == {
            c.name: c for c in old.checks if c.name != "daily_volume"
        }


def test_import_keeps_the_teams_own_items_and_settings(project):
    orders = rule_dir(project) / "silver/orders.yml"
    text = orders.read_text().replace("threshold: 0.05", "threshold: 0.07", 1)
    orders.write_text(text)
    assert run(project, "import", "contracts/orders.odcs.yaml") == 0
    new = rules.load(orders)
    assert "daily_volume" in {c.name for c in new.checks}  # the team's: no contract clause
    assert new.threshold == 0.05  # the contract says 0.05 (customProperties threshold)


# --------------------------------------------------------------------------- round trip


def test_import_export_import_writes_the_same_files(project, tmp_path, capsys):
    assert run(project, "import", "contracts/orders.odcs.yaml") == 0
    first = snapshot(project)
    out = tmp_path / "exported.odcs.yaml"
    assert run(project, "export", "--dataset", "silver_orders", "--out", str(out)) == 0
    exported = yaml.safe_load(out.read_text())
    assert (exported["apiVersion"], exported["id"], exported["version"]) == (
        "v3.1.0",
        "acme-orders-orders",
        "1.0.0",
    )
    contract.read(out)  # valid ODCS
    capsys.readouterr()
    assert run(project, "import", str(out)) == 0
    assert "rules/silver/orders.yml: unchanged" in capsys.readouterr().out
    assert snapshot(project) == first
    assert run(project, "check", str(out)) == 0


@pytest.mark.parametrize(
    "path",
    [*sorted(ODCS_EXAMPLES.glob("*.odcs.yaml")), HERE / "members.odcs.yaml"],
    ids=lambda p: p.name,
)
def test_the_standards_examples_go_round_too(project, tmp_path, path):
    """Into files of their own: exported, the files removed, the exports imported again."""
    before = snapshot(project)
    assert run(project, "import", str(path)) == 0
    first = snapshot(project)
    written = [project / name for name in set(first) - set(before)]
    datasets = {rules.load(p).dataset for p in written if p.parent.name == "silver"}
    exported = []
    for dataset in sorted(datasets):
        exported.append(tmp_path / f"{dataset}.odcs.yaml")
        assert run(project, "export", "--dataset", dataset, "--out", str(exported[-1])) == 0
    for written_file in written:
        written_file.unlink()
    for out in exported:
        assert run(project, "import", str(out)) == 0
    assert snapshot(project) == first


# --------------------------------------------------------------------------- drift


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda d: props(d).append(
                {"name": "discount", "logicalType": "number", "physicalType": "decimal(5,2)"}
            ),
            "rules/silver/orders.yml: column discount: in the contract (decimal(5,2)), not in schema:",
        ),
        (
            lambda d: props(d).pop(1),  # customer_id, with its references check
            "rules/silver/orders.yml: column customer_id: in schema:, not in the contract",
        ),
        (
            lambda d: props(d)[6].update(physicalType="bigint"),
            "rules/silver/orders.yml: column quantity: int in schema:, bigint in the contract",
        ),
    ],
    ids=["added", "removed", "retyped"],
)
def test_check_names_each_column_that_drifted(project, capsys, change, line):
    changed = edited(project, change)
    assert run(project, "check", str(changed)) == 1
    out = capsys.readouterr().out.splitlines()
    assert line in out
    assert out[-1].startswith("contract check: ")


def test_check_names_a_changed_bound_and_a_clause_gone(project, capsys):
    def change(doc):
        props(doc)[5]["logicalTypeOptions"]["minimum"] = 1
        del doc["slaProperties"]

    assert run(project, "check", str(edited(project, change))) == 1
    out = capsys.readouterr().out
    assert (
        "rule valid_amount: constraint 'amount >= 0' in the file, 'amount >= 1' in the contract"
        in out
    )
    assert (
        "check fresh_orders: made from clause 'fresh_orders', which the contract no longer has"
        in out
    )


def test_check_names_the_files_threshold_and_quarantine_edited_by_hand(project, capsys):
    """The contract sets them (customProperties); before, a hand edit of either passed."""
    path = project / "src/acme_orders/rules/silver/orders.yml"
    text = path.read_text()
    assert "\nthreshold: 0.05 " in text and "\nquarantine: table\n" in text
    text = text.replace("\nthreshold: 0.05 ", "\nthreshold: 0.5 ")
    path.write_text(text.replace("\nquarantine: table\n", "\nquarantine: view\n"))
    assert run(project, "check", "contracts/orders.odcs.yaml") == 1
    out = capsys.readouterr().out.splitlines()
    assert "rules/silver/orders.yml: threshold: 0.5 in the file, 0.05 in the contract" in out
    assert "rules/silver/orders.yml: quarantine: 'view' in the file, 'table' in the contract" in out
    # `medallion-dq check` says so too, as warnings: once it said nothing of the threshold (the
    # view is an error of its own, DQC007: the pipeline defines the quarantine as a table).
    assert cli.main(["--root", str(project), "check"]) == 1
    said = capsys.readouterr().out.splitlines()
    assert (
        "DQC015 contracts/orders.odcs.yaml: rules/silver/orders.yml: threshold: 0.5 in the file, "
        "0.05 in the contract; fix: `medallion-dq contract import contracts/orders.odcs.yaml` "
        "writes its rules again, or change the contract"
    ) in said
    assert said[-1] == "check: 1 error(s), 2 warning(s)", said
    # A rule's own threshold the contract does not set: said as `none`, not Python's None.
    amount = "    contract: 'orders.amount: minimum'\n"
    path.write_text(text.replace(amount, f"    threshold: 0.02\n{amount}"))
    assert run(project, "check", "contracts/orders.odcs.yaml") == 1
    assert "threshold 0.02 in the file, none in the contract" in capsys.readouterr().out


def test_a_platform_team_can_make_contract_drift_an_error_of_check(project, capsys):
    """DQC015 is a warning of `check`; [tool.medallion.conventions] severity makes it an error."""
    path = project / "src/acme_orders/rules/silver/orders.yml"
    path.write_text(path.read_text().replace("\nthreshold: 0.05 ", "\nthreshold: 0.5 "))
    assert cli.main(["--root", str(project), "check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "check: 0 error(s), 1 warning(s)"
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("\nseverity = {}", '\nseverity = {DQC015 = "error"}')
    )
    assert cli.main(["--root", str(project), "check"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "check: 1 error(s), 0 warning(s)"


def test_check_compares_the_local_lakes_table(project, capsys):
    """A table of `medallion-dq run`'s lake, read from its Delta log (no Spark)."""
    log = project / ".local/lake/dev/warehouse/dev.db/silver_orders/_delta_log"
    log.mkdir(parents=True)
    fields = [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in [("order_id", "string"), ("customer_id", "string"), ("order_ts", "timestamp")]
        + [("currency", "string"), ("amount", "decimal(12,2)"), ("quantity", "long")]
    ]  # no channel, quantity a bigint
    schema = json.dumps({"type": "struct", "fields": fields})
    commit = {"metaData": {"id": "x", "format": {"provider": "parquet"}, "schemaString": schema}}
    (log / "00000000000000000000.json").write_text(json.dumps(commit) + "\n")
    assert run(project, "check", "contracts/orders.odcs.yaml") == 1
    out = capsys.readouterr().out
    table = ".local/lake/dev/warehouse/dev.db/silver_orders"
    assert f"{table}: column quantity: the table has bigint, the contract int" in out
    assert f"{table}: column channel: in the contract, not in the table" in out


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: props(d)[2].update(logicalType="strnig"),
            "changed.odcs.yaml: schema[0].properties[2].logicalType: 'strnig' is not one of "
            "['string', 'date', 'timestamp', 'time', 'number', 'integer', 'object', 'array', "
            "'boolean']",
        ),
        (
            lambda d: d.update(apiVersion="v2.2.2"),
            "changed.odcs.yaml: apiVersion: 'v2.2.2' is not a version medallion-dq reads; fix: "
            "write a contract of ODCS v3.0.0, v3.0.1, v3.0.2, v3.1.0 (checked against the v3.1.0 "
            "schema)",
        ),
        (
            lambda d: props(d)[0]["quality"][0].update(metric="nullCount"),
            "changed.odcs.yaml: schema[0].properties[0].quality[0].metric: unknown metric "
            "'nullCount'; fix: use one of nullValues, missingValues, invalidValues, "
            "duplicateValues, rowCount, or a sql rule",
        ),
        (lambda d: d.pop("kind"), "changed.odcs.yaml: (top level): 'kind' is a required property"),
        (
            lambda d: [d.clear(), d.update(version=2, models=[{"name": "orders"}])],  # dbt's
            "changed.odcs.yaml: not an ODCS data contract: no apiVersion, no kind: DataContract; "
            "fix: give the contract's file (ODCS v3.1.0: apiVersion, kind, id, ...)",
        ),
    ],
    ids=["schema-error", "api-version", "unknown-metric", "no-kind", "not-odcs"],
)
def test_a_contract_that_is_not_odcs_is_refused_and_nothing_written(
    project, capsys, change, message
):
    changed = edited(project, change)
    before = snapshot(project)
    for action in ("import", "check"):
        assert run(project, action, str(changed)) == 2
        err = capsys.readouterr().err.splitlines()
        assert err == [f"error: {message}"]
    assert snapshot(project) == before


def test_every_physical_type_spark_would_refuse_is_named_and_nothing_written(project, capsys):
    """decimal(12.2) for decimal(12,2): once reported by `check` as the rule files' drift, and
    translated by `import` as the logicalType's double without a word."""

    def change(doc):
        props(doc)[2]["physicalType"] = "timestamp(3"
        props(doc)[5]["physicalType"] = "decimal(12.2)"

    changed = edited(project, change)
    before = snapshot(project)
    fix = (
        "is not a Spark SQL type; fix: write it as Spark does (decimal(12,2), array<string>), "
        "or leave it out for the logicalType's"
    )
    for action in ("import", "check"):
        assert run(project, action, str(changed)) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"error: changed.odcs.yaml: schema[0].properties[2].physicalType: 'timestamp(3' {fix}",
            f"error: changed.odcs.yaml: schema[0].properties[5].physicalType: 'decimal(12.2)' {fix}",
        ]
    assert snapshot(project) == before


@pytest.mark.parametrize(
    ("index", "physical", "logical", "said"),
    [
        (5, "string", "number", "'string' is a string type, not a number"),
        (2, "int", "timestamp", "'int' is an integer type, not a timestamp"),
        (0, "boolean", "string", "'boolean' is a boolean type, not a string"),
        (6, "double", "integer", "'double' is a number type, not an integer"),
        (3, "array<string>", "string", "'array<string>' is an array type, not a string"),
    ],
    ids=["string-on-number", "int-on-timestamp", "boolean-on-string", "double-on-integer", "array"],
)
def test_a_physical_type_that_contradicts_the_logical_type_is_refused(
    project, capsys, index, physical, logical, said
):
    """`physicalType: string` on a number was imported as double without a word, and `contract
    check` then called it "double in the contract": now import (nothing written), contract check
    and check refuse it, one line naming the file, the path, both types and the fix."""
    changed = edited(project, lambda doc: props(doc)[index].update(physicalType=physical))
    assert props(yaml.safe_load(changed.read_text()))[index]["logicalType"] == logical
    before = snapshot(project)
    line = f"schema[0].properties[{index}]: physicalType {said}; fix: write the type that holds"
    for action in ("import", "check"):
        assert run(project, action, str(changed)) == 2
        (err,) = capsys.readouterr().err.splitlines()
        assert err.startswith(f"error: changed.odcs.yaml: {line}")
        assert f"(or leave it out) for a{'n' if logical[0] in 'aeio' else ''} {logical}, or " in err
    assert snapshot(project) == before
    changed.replace(project / "contracts" / "orders.odcs.yaml")
    assert cli.main(["--root", str(project), "check"]) == 1
    out = capsys.readouterr().out
    assert f"DQC000 contracts/orders.odcs.yaml: {line}" in out
    assert out.splitlines()[-1] == "check: 1 error(s), 0 warning(s)"


def test_physical_types_of_other_databases_that_hold_the_logical_type_are_taken(project):
    """What a producer's database writes (VARCHAR2, NUMBER(10), Oracle's DATE for a timestamp,
    MySQL's tinyint for a boolean) is not a contradiction; an unknown name is not judged."""

    def change(doc):
        props(doc)[0]["physicalType"] = "VARCHAR2(20)"
        props(doc)[2]["physicalType"] = "DATE"
        props(doc)[6]["physicalType"] = "NUMBER(10)"
        props(doc).append({"name": "paid", "logicalType": "boolean", "physicalType": "tinyint"})
        props(doc).append({"name": "geo", "logicalType": "string", "physicalType": "GEOGRAPHY"})

    contract.read(edited(project, change))


def test_a_bad_contract_is_one_of_the_packages_errors(tmp_path):
    """A program calling the library catches it as any medallion-dq error, or as a ValueError."""
    path = tmp_path / "list.odcs.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(MedallionDQError) as caught:
        contract.read(path, path.name)
    assert isinstance(caught.value, ValueError)
    assert caught.value.lines == [
        "list.odcs.yaml: not an ODCS data contract (a mapping with apiVersion, kind, id, ...)"
    ]


def test_import_never_writes_over_another_datasets_file(project, capsys):
    """An object `customers` without a physicalName is the dataset `customers`: the sample's
    rules/silver/customers.yml is silver_customer_changes' file, so import stops."""
    before = snapshot(project)
    text = (HERE / "members.odcs.yaml").read_text()
    changed = project / "contracts" / "changed.odcs.yaml"
    changed.write_text(
        text.replace("name: members\n    physicalName: silver_members", "name: customers")
    )
    assert run(project, "import", str(changed)) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: rules/silver/customers.yml holds dataset silver_customer_changes, not customers: "
        "give the schema object customers a physicalName (the dataset) or another name"
    ]
    assert snapshot(project) == before


def test_import_never_replaces_another_contracts_items(project, capsys):
    """orders.yml was made from the orders feed's contract: a contract with another id (a second
    producer of the same dataset) does not take its items over silently."""
    before = snapshot(project)
    changed = edited(project, lambda doc: doc.update(id="another-feed"))
    assert run(project, "import", str(changed)) == 2
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "error: rules/silver/orders.yml was made from contract acme-orders-orders, not "
        "another-feed: give the schema object orders a physicalName (another dataset), or delete "
        "the file's contract: mapping to let this one take over",
        "error: rules/gold/order_keys.yml was made from contract acme-orders-orders, not "
        "another-feed: it judges the uniqueness of silver_orders: delete its contract: mapping "
        "to let this one take over",
    ]
    assert snapshot(project) == before


def test_untranslated_clauses_are_listed(project, capsys):
    def change(doc):
        props(doc)[3]["quality"].append(
            {"type": "text", "description": "Channels are agreed with sales each quarter."}
        )
        doc["schema"][0]["quality"] = [
            {"type": "sql", "query": "SELECT max(amount) FROM {object}", "mustBeLessThan": 10000},
            {"type": "custom", "engine": "soda", "implementation": "type: row_count"},
        ]
        doc["slaProperties"].append({"property": "retention", "value": 3, "unit": "y"})

    assert run(project, "import", str(edited(project, change))) == 0
    out = capsys.readouterr().out
    for line in (
        "not translated: orders.channel: text: a text rule, for people: Channels are agreed "
        "with sales each quarter.",
        "not translated: orders: sql: sql 'SELECT max(amount) FROM {object}': not a count(*) of "
        "orders",
        "not translated: orders: custom: a custom rule for soda: not translated",
        "not translated: slaProperties: retention: SLA retention 3y: not a data check",
    ):
        assert line in out


# --------------------------------------------------------------------------- translation


def test_options_and_metrics_become_rules_with_their_clause():
    files = generated()
    silver, keys = files["silver/members.yml"], files["gold/member_keys.yml"]
    assert silver.contract == rules.Contract("generated", "2.1.0")
    got = {r.name: (r.constraint, r.action, r.threshold, r.contract) for r in silver.rules}
    email = contract.FORMATS["email"].replace("\\", "\\\\")  # in a SQL literal
    assert got["valid_email"] == (
        f"email IS NOT NULL AND length(email) <= 40 AND email RLIKE '{email}'",
        "drop",
        None,
        "members.email: required, maxLength, format",
    )
    assert got["valid_score"][:2] == ("score > 0 AND score <= 100 AND score % 5 = 0", "drop")
    assert got["valid_born"][0] == ("born >= DATE '1900-01-01' AND born < DATE '2026-01-01'")
    assert got["present_nickname"][0] == "nickname IS NOT NULL AND nickname NOT IN ('', 'n/a')"
    assert got["known_iban"][1:3] == ("warn", 0.01)
    assert got["valid_tags"][0] == "tags IS NOT NULL"
    assert got["sql_8"] == (
        "NOT coalesce(score > 50 AND born < DATE '1950-01-01', false)",
        "drop",
        None,
        "members: sql",
    )
    assert {c.name: dict(c.options) for c in silver.checks} == {
        "sane_volume": {"min_rows": 10, "max_rows": 5000}
    }
    assert {c.name: c.type for c in silver.schema}["address"] == (
        "struct<street: string, zip: string>"
    )
    assert [(r.name, r.constraint, r.action) for r in keys.rules] == [
        ("unique_email_code", "duplicate_email_codes = 0", "fail")
    ]


@pytest.mark.parametrize(
    "pattern",
    [
        *contract.FORMATS.values(),
        r"^[A-Z]{2}-\d{3}$",
        r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{4}[0-9]{7}([A-Z0-9]?){0,16}$",
        r"(?i)^(?P<code>[^a\s]x|y)+\.\w{2,}?$",
        r"ab|ac",
    ],
)
def test_a_passing_example_is_made_for_a_pattern(pattern):
    """A string the pattern finds (the passing example of a rule made from it)."""
    made = contract.patterns.matching(pattern)
    assert made is not None and re.search(pattern, made)


@pytest.mark.parametrize("pattern", [r"(?=x)y", r"(a)\1", r"[йц]", r"\p{L}"])
def test_no_example_is_made_for_a_pattern_it_cannot_read(pattern):
    """A look-around, a back reference, a class of other letters, Java's syntax: none."""
    assert contract.patterns.matching(pattern) is None


def test_check_accepts_the_standards_examples_once_pipelines_define_their_datasets(project, capsys):
    """Right after import, `check` (and import, in its output) says DQC012 of the full example's
    two references checks: its relationships name receivers_master (its object receivers) and
    receiver_types (no object of it), datasets no pipeline of the sample defines. That is so of
    every dataset of a contract the project does not build yet: once a pipeline defines them,
    `check` finds no error in the files made."""
    sample = set(rule_dir(project).glob("silver/*.yml"))
    for name in EXAMPLES:
        assert run(project, "import", str(ODCS_EXAMPLES / f"{name}.odcs.yaml")) == 0
    said = capsys.readouterr().out
    assert (
        "check: DQC012 src/acme_orders/rules/silver/tbl.yml: references check 'known_rcvr' of "
        "'tbl_1' names 'receivers_master', which no pipeline file defines"
    ) in said
    errors = [p for p in conventions.check(manifest_of(project)) if p.severity == "error"]
    assert sorted((p.code, Path(p.file).name) for p in errors) == [
        ("DQC012", "receivers.yml"),
        ("DQC012", "tbl.yml"),
    ]
    made = set(rule_dir(project).glob("silver/*.yml")) - sample
    contracted = sorted({rules.load(p).dataset for p in made} | {"receiver_types"})
    sql = project / "src/pipelines/validation/silver/contracted.sql"
    sql.write_text(
        "".join(
            f"CREATE MATERIALIZED VIEW {d} AS SELECT * FROM silver_orders;\n" for d in contracted
        )
    )
    assert [p for p in conventions.check(manifest_of(project)) if p.severity == "error"] == []


def test_the_gate_names_the_clause_a_failure_breaks(tmp_path, monkeypatch):
    """run_gate with the sample's silver rules (their row rules: the dataset checks need
    Spark), the metrics of an update where valid_amount failed 10 rows of 100."""
    sample = sample_project() / "src/acme_orders/rules/silver/orders.yml"
    data = yaml.safe_load(sample.read_text())
    del data["checks"], data["schema"]
    (tmp_path / "silver").mkdir()
    (tmp_path / "silver" / "orders.yml").write_text(yaml.safe_dump(data))
    metrics = [
        {"dataset": "silver_orders", "name": r["name"], "passed": 100, "failed": 0}
        for r in data["rules"]
    ]
    (amount,) = [m for m in metrics if m["name"] == "valid_amount"]
    amount |= {"passed": 90, "failed": 10}
    monkeypatch.setattr(gate, "latest_update_id", lambda events: "u1")
    progress = {
        "update_id": "u1",
        "event_type": "flow_progress",
        "time": "2026-11-05 10:00:00.000000",
        "dataset_name": "silver_orders",
        "flow_name": "silver_orders",
        "status": "COMPLETED",
        "expectations": [
            {"dataset": m["dataset"], "name": m["name"], "passed_records": m["passed"],
             "failed_records": m["failed"]}
            for m in metrics
        ],
    }  # fmt: skip
    monkeypatch.setattr(
        gate, "read_update_events", lambda events, updates: UpdateEvents((progress,))
    )
    monkeypatch.setattr(dataset_checks, "landing_drift", lambda *args, **kwargs: [])  # reads tables
    events = type("Events", (), {"sparkSession": None})()  # its readers are replaced
    result = gate.run_gate(events, rule_files=[tmp_path])
    clause = "[orders.amount: minimum (acme-orders-orders 1.0.0)]"
    assert f"silver_orders.valid_amount {clause}" in result.table()
    assert f"1 of 7 rule(s) over threshold: silver_orders.valid_amount {clause}" in result.summary()
    assert (
        "silver_orders.known_channel [known_channel (acme-orders-orders 1.0.0)]" in result.table()
    )


def test_diff_and_the_report_name_the_clause_as_the_gate_does(project):
    """`diff` (text, markdown, JSON) and `report` (terminal and page) show a rule made from the
    contract with its clause and the contract's id and version; a removed rule with the clause
    it had; the team's own rules as before."""
    from medallion_dq.tools import diff, report

    orders = rules.load(rule_dir(project) / "silver/orders.yml")
    kept = tuple(r for r in orders.rules if r.name != "positive_quantity")
    changed = diff.DatasetDiff("silver_orders", orders, dataclasses.replace(orders, rules=kept), [])
    changed.rules = diff.compare(changed.base, changed.head)
    said = {"base": "main", "data": "fixtures/landing"}
    text = diff.text_report(said, [changed])
    amount = "orders.amount: minimum (acme-orders-orders 1.0.0)"
    assert f"valid_amount [{amount}]" in text
    assert re.search(
        r"positive_quantity \[positive_quantity \(acme-orders-orders 1.0.0\)\] +removed", text
    )
    markdown = diff.markdown_report(said, [changed])
    cell = f"{markup.md_code('valid_amount')} {markup.md_text(f'[{amount}]')}"
    assert f"| {cell} | unchanged |" in markdown
    by_name = {r["name"]: r for r in diff.json_report(said, [changed])["datasets"][0]["rules"]}
    assert by_name["valid_amount"]["contract"] == amount

    _, clauses = report.gate_inputs(Project(project))
    when = datetime(2026, 11, 2, tzinfo=timezone.utc)
    rows = [
        {"update_id": "u1", "timestamp": when, "pipeline": "validation", "dataset": dataset}
        | {"rule": rule, "passed": 90, "failed": 10, "failed_pct": 10.0}
        for dataset, rule in (
            ("silver_orders", "valid_amount"),
            ("gold_daily_revenue", "has_orders"),
        )
    ]
    table = report.text_table(rows, clauses=clauses).splitlines()
    assert any(line.startswith(f"valid_amount [{amount}]  silver_orders") for line in table)
    assert any(line.startswith("has_orders  ") for line in table)
    page = report.html(rows, clauses=clauses)
    assert f'<code>valid_amount</code> <span class="clause">[{amount}]</span></td>' in page
    assert "<code>has_orders</code></td>" in page


def test_dataset_picks_one_object_and_a_wrong_kind_of_value_is_listed(project, capsys):
    def change(doc):
        props(doc)[6]["quality"] = [
            {"metric": "invalidValues", "arguments": {"validValues": ["one", "two"]}, "mustBe": 0}
        ]

    path = edited(project, change)
    assert (
        run(
            project,
            "import",
            str(ODCS_EXAMPLES / "full-example.odcs.yaml"),
            "--dataset",
            "receivers",
        )
        == 0
    )
    written = capsys.readouterr().out
    assert "wrote rules/silver/receivers.yml" in written and "tbl.yml" not in written
    assert run(project, "import", str(path)) == 0
    assert (
        "not translated: orders.quantity: invalidValues: 'one' is not a number: not translated"
        in capsys.readouterr().out
    )


def test_check_names_the_uniqueness_clause_a_contract_dropped(project, capsys):
    def change(doc):
        props(doc)[0]["quality"].pop(1)  # unique_order_id: rules/gold/order_keys.yml's clause

    assert run(project, "check", str(edited(project, change))) == 1
    assert (
        "rules/gold/order_keys.yml: unique_order_id: made from clause 'unique_order_id', which "
        "the contract no longer has"
    ) in capsys.readouterr().out


def test_export_says_what_a_contract_cannot_hold(project, capsys):
    assert run(project, "export", "--dataset", "silver_orders") == 0
    captured = capsys.readouterr()
    assert yaml.safe_load(captured.out)["schema"][0]["physicalName"] == "silver_orders"
    assert captured.err.splitlines() == [
        "contract export: not in the contract: whole_record: _corrupt_record IS NULL: bronze's "
        "mark, no published column",
        "contract export: not in the contract: daily_volume: min_ratio, max_ratio: ODCS counts "
        "rows, not ratios",
    ]


def test_export_says_a_check_kind_odcs_has_no_clause_for(project, capsys):
    """An anomaly check (ODCS has no clause for one) is left out of the contract and said, as
    any kind without an export would be: nothing leaves a rule file unsaid."""
    path = rule_dir(project) / "silver" / "orders.yml"
    text = path.read_text()
    anomaly = "  - name: usual_rows\n    anomaly: {metric: rows}\n"
    path.write_text(text.replace("checks:\n", "checks:\n" + anomaly, 1))
    assert run(project, "export", "--dataset", "silver_orders") == 0
    captured = capsys.readouterr()
    exported = yaml.safe_dump(yaml.safe_load(captured.out))
    assert "usual_rows" not in exported
    assert (
        "contract export: not in the contract: usual_rows: anomaly check: ODCS has no clause"
        " for its kind" in captured.err.splitlines()
    )


# --------------------------------------------------------------------------- hostile contracts


@pytest.mark.parametrize(
    ("query", "function", "code"),
    [
        (
            "SELECT COUNT(*) FROM {object} WHERE java_method('java.lang.System', 'exit', 0) = 0",
            "java_method",
            "DQ010",
        ),
        (
            "SELECT COUNT(*) FROM ${object} WHERE NOT JAVA_METHOD('a', 'b') = ''",
            "java_method",
            "DQ010",
        ),
        ("SELECT count(*) FROM {object} WHERE `reflect`('a', 'b') IS NULL", "reflect", "DQ010"),
        ("SELECT COUNT(*) FROM orders WHERE try_reflect('a', 'b') IS NULL", "try_reflect", "DQ010"),
        ("SELECT COUNT(*) FROM read_files('/etc/passwd')", "read_files", "DQ010"),
        (
            "SELECT COUNT(*) FROM {object} WHERE length(repeat(order_id, 200000000)) > 0",
            "repeat",
            "DQ032",
        ),
        ("SELECT COUNT(*) FROM {object} WHERE order_id RLIKE '(a+)+b'", "rlike", "DQ032"),
    ],
    ids=[
        "where",
        "upper-case",
        "backticked",
        "try-reflect",
        "table-function",
        "too-large",
        "backtracking",
    ],
)
def test_a_sql_clause_calling_what_a_rule_may_not_is_refused_and_nothing_written(
    project, capsys, query, function, code
):
    """Before: `import` wrote the clause's java_method into the rule file, where `check` passed
    it and `check --examples` ran it on the Spark server; a clause that could exhaust the
    engine (DQ032) likewise."""

    def change(doc):
        props(doc)[6]["quality"][0]["query"] = query

    changed = edited(project, change)
    before = snapshot(project)
    for action in ("import", "check"):
        assert run(project, action, str(changed)) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1, err
        assert err[0].startswith(
            f"error: {code} changed.odcs.yaml: schema[0].properties[6].quality[0].query: sql rule "
            f"'positive_quantity': function {function}()"
        ), err
        assert "; fix: " in err[0]
    assert snapshot(project) == before


def test_an_alias_bomb_in_a_contract_is_one_line_at_once(project, capsys):
    """Before: 4 GB and 72-106 s in `check` and `contract check`, then a MemoryError."""
    from test_rules import alias_bomb

    path = project / "contracts" / "orders.odcs.yaml"
    bomb = "".join(f"      {line}\n" for line in alias_bomb().splitlines())
    path.write_text(path.read_text() + f"customProperties:\n  - property: x\n    value:\n{bomb}")
    before = snapshot(project)
    said = (
        "orders.odcs.yaml: YAML is refused at line {}: its aliases expand to more than "
        "10000 values (an alias bomb); fix: write the values out, or use fewer aliases (an alias "
        "expanding to aliases multiplies)"
    )
    line = len(path.read_text().splitlines()) - 5  # a4: 9**5 values
    for action in ("import", "check"):
        assert run(project, action, "contracts/orders.odcs.yaml") == 2
        assert capsys.readouterr().err == f"error: {said.format(line)}\n"
    assert (
        cli.main(["--root", str(project), "check"]) == 1
    )  # an error, as any contract import refuses
    out = capsys.readouterr().out
    assert f"DQC000 contracts/{said.format(line)}" in out
    assert snapshot(project) == before


def _paths(value, at=""):
    """Every leaf of a document by its path: schema[0].properties[2].description -> text."""
    if isinstance(value, dict):
        return {p: v for k, item in value.items() for p, v in _paths(item, f"{at}.{k}").items()}
    if isinstance(value, list):
        return {p: v for i, item in enumerate(value) for p, v in _paths(item, f"{at}[{i}]").items()}
    return {at: value}


def _extras(doc: dict) -> None:
    """Fields of ODCS the rule files have no place for, on every level."""
    doc["description"] = {"purpose": "Orders for the revenue figures", "usage": "daily"}
    doc["tags"], doc["domain"] = ["sales"], "sales"
    doc["servers"] = [{"server": "prod", "type": "databricks", "catalog": "main", "schema": "s"}]
    doc["team"]["members"] = [{"username": "ana", "role": "owner"}]
    doc["slaProperties"].append({"property": "retention", "value": 3, "unit": "y"})
    obj = doc["schema"][0]
    obj.update(
        businessName="Customer orders", tags=["finance"], dataGranularityDescription="an order"
    )
    props(doc)[0].update(businessName="Order number", classification="internal", primaryKey=True)
    props(doc)[0].update(primaryKeyPosition=1, criticalDataElement=True, tags=["id"])
    props(doc)[2]["customProperties"] = [{"property": "hint", "value": "ISO 8601"}]


@pytest.mark.parametrize("extra", [False, True], ids=["sample", "extra-fields"])
def test_export_keeps_every_field_of_the_contract_it_was_made_from(project, capsys, extra):
    """The sample's contract, and one with ODCS fields the rule files cannot hold, imported and
    exported: every field comes back as written (the schema object's description was dropped
    without a word, and a property's sql clause moved to the object); the export imports to the
    same files."""
    source = project / "contracts" / "orders.odcs.yaml"
    if extra:
        doc = yaml.safe_load(source.read_text())
        _extras(doc)
        source.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert run(project, "import", "contracts/orders.odcs.yaml") == 0
    first = snapshot(project)
    written_rules = yaml.safe_load(first["src/acme_orders/rules/silver/orders.yml"])
    assert written_rules["description"].startswith("Orders as typed from the landing files")
    capsys.readouterr()
    assert run(project, "export", "--dataset", "silver_orders") == 0
    captured = capsys.readouterr()
    exported = _paths(yaml.safe_load(captured.out))
    written = _paths(yaml.safe_load(source.read_text()))
    assert {p: v for p, v in written.items() if exported.get(p, "gone") != v} == {}
    assert captured.err.splitlines() == [
        "contract export: not in the contract: whole_record: _corrupt_record IS NULL: bronze's "
        "mark, no published column",
        "contract export: not in the contract: daily_volume: min_ratio, max_ratio: ODCS counts "
        "rows, not ratios",
    ]
    source.write_text(captured.out)
    assert run(project, "import", "contracts/orders.odcs.yaml") == 0
    assert snapshot(project) == first


def test_export_says_each_field_it_leaves_out(project, capsys):
    """What neither a contract nor its clauses can hold: a rule's own owner, a gold file's
    layer, the nested properties of a struct column, a column the rule file does not have."""
    source = project / "contracts" / "orders.odcs.yaml"
    doc = yaml.safe_load(source.read_text())
    props(doc)[3]["properties"] = [{"name": "code", "logicalType": "string"}]
    props(doc)[3].update(logicalType="object", physicalType="struct<code: string>")
    props(doc).append({"name": "discount", "logicalType": "number"})
    source.write_text(yaml.safe_dump(doc, sort_keys=False))
    orders = rule_dir(project) / "silver/orders.yml"
    text = orders.read_text()
    orders.write_text(
        text.replace("  - name: valid_order_id\n", "  - name: valid_order_id\n    owner: ops\n", 1)
    )
    assert run(project, "export", "--dataset", "silver_orders") == 0
    err = capsys.readouterr().err.splitlines()
    said = "contract export: not in the contract: "
    assert err == [
        f"{said}whole_record: _corrupt_record IS NULL: bronze's mark, no published column",
        f"{said}daily_volume: min_ratio, max_ratio: ODCS counts rows, not ratios",
        f"{said}valid_order_id: owner ops: a clause has no owner of its own",
        f"{said}contracts/orders.odcs.yaml: orders.channel: its nested properties (the rule file "
        "has the column's type)",
        f"{said}contracts/orders.odcs.yaml: orders.discount: no column of the rule file",
    ]
    assert run(project, "export", "--dataset", "gold_order_keys") == 0
    assert f"{said}layer: gold: a contract has none (import it with --layer)" in (
        capsys.readouterr().err.splitlines()
    )


def test_an_import_that_leaves_a_decorator_without_rules_is_refused(project, capsys):
    """A producer's contract with no warning-level clause, over the sample's orders, whose
    silver_orders passes ORDERS.warn to @dp.expect_all: the import wrote the files without a
    word and the project's `check` then failed (DQC014). Now nothing is written, the line says
    which decorator and both fixes; once the decorator is removed, the import goes through and
    `check` passes."""
    text = (project / "contracts" / "orders.odcs.yaml").read_text()
    producer = project / "producer.odcs.yaml"
    producer.write_text(text.replace("severity: warning", "severity: error"))
    before = snapshot(project)
    assert run(project, "import", "producer.odcs.yaml") == 2
    err = capsys.readouterr().err.splitlines()
    pipeline = project / "src" / "pipelines" / "validation" / "silver" / "orders.py"
    line = pipeline.read_text().splitlines().index("@dp.expect_all(ORDERS.warn)") + 1
    assert err == [
        "error: producer.odcs.yaml: the import would leave DQC014 "
        f"src/pipelines/validation/silver/orders.py:{line}: @expect_all(ORDERS.warn) is given "
        "no rules: src/acme_orders/rules/silver/orders.yml has no 'warn' rule left; fix: remove "
        "the decorator; or make a rule of src/acme_orders/rules/silver/orders.yml 'warn' again "
        "(in its data contract, if it is made from one: a clause with severity: warning)",
        "contract import: nothing written (1 error(s) above)",
    ]
    assert snapshot(project) == before
    pipeline.write_text(pipeline.read_text().replace("@dp.expect_all(ORDERS.warn)\n", ""))
    assert run(project, "import", "producer.odcs.yaml") == 0
    capsys.readouterr()
    assert cli.main(["--root", str(project), "check"]) == 0, capsys.readouterr().out
