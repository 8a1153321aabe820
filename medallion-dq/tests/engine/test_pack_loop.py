"""The platform team's loop with a conventions pack, end to end, on the worker's warm server:

1. bake the pack (`cookiecutter <repo> --directory pack`) at 1.0.0 and build its wheel with uv;
2. bake two team projects on it (other answers: names, JSON or CSV), each using two of its
   library rules (`acme.not_null`, `acme.email`) beside rules of its own; install the pack from
   its wheel; `check` passes and each project's job (validate -> gate -> publish) succeeds;
3. make the pack 1.1.0: `not_null` tightened (a blank text is no value), the silver default
   threshold lowered from 5 % to 1 %, DQC005 raised to error and locked; `conventions diff --to`
   (the wheel for one team, a requirement for the other) lists exactly those effects with the
   row counts of each team's own landing files, and exits 1 where the gate would now fail;
4. before 1.1.0 ships, `conventions fleet` over a file listing the two, team three (a git
   repository at tag v1, no changed rule, an exception to 1.1.0's lock of DQC005, a rule written
   twice that 1.1.0's preview makes an error from 1.2.0), a folder whose pyproject.toml does not
   parse and a repository that does not exist: each judged team's numbers are its own
   `conventions diff`'s, the others are rows with their reason, team two's gate flip makes the
   minor bump too small (exit 1), and each judged team gets its pin-bump PR as a file;
5. bump the pin: after `conventions write` and `quarantine write` (the SQL quarantine view that
   1.1.0's rule change left stale), team one's `check` is clean; team two's names the rules that
   lack an owner, and a line that sets DQC005 back to a warning is refused, naming the pack;
   team three's exception holds until its day (the table's as_of) and is an error after, and
   its rule written twice warns in 1.1.0 and is an error in 1.2.0.

The fleet's teams share the worker's warm server (`local_spark`), as the diffs do.

The counts are checked against the landing files read with the standard library. The pack's
own `nox` (every library rule's examples on Spark) runs in the template's `nox -s generated`;
the runtime alone loading the pack's rules, in the template's tests/test_pack.py."""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from medallion_dq import library
from medallion_dq.project import Project
from medallion_dq.testing import Lake
from medallion_dq.tools import cli, fleet, upgrade
from sample import TEMPLATE

pytestmark = pytest.mark.spark

POLICY_1_0 = "thresholds: {silver: 0.05, gold: 0}\n"
POLICY_1_1 = (
    "severity: {DQC005: error}\nthresholds: {silver: 0.01, gold: 0}\nlocked: [DQC005]\n"
    'preview: {"1.1.0": {DQ028: error}}\n'  # a duplicate rule: a warning now, an error in 1.2.0
)
# Team three writes a rule twice (DQ028) and holds an exception to 1.1.0's lock of DQC005.
TWICE = """  - name: signup_date_known
    constraint: signup_date IS NOT NULL
    action: warn
    description: The same check as has_signup_date, written twice.
"""
EXCEPTION = """
[[tool.medallion.conventions.exceptions]]
setting = "DQC005"
value = "warning"
reason = "the crm feed's owners are being named"
approved_by = "platform-team"
expires = 2027-01-31
"""
NOT_NULL = '"{column} IS NOT NULL"'
NOT_BLANK = "\"{column} IS NOT NULL AND trim(CAST({column} AS STRING)) <> ''\""
# Team one's own landing file: a new customer (a change event) whose id is blank, which 1.1.0's
# not_null fails.
BLANK_ID = {
    "customer_id": "  ",
    "name": "Noor Visser",
    "email": "noor.visser@example.org",
    "country": "NL",
    "city": "Utrecht",
    "segment": "consumer",
    "signup_date": "2026-10-30",
    "operation": "INSERT",
    "changed_at": "2026-11-02T08:00:00",
}


def uv(*args: str) -> None:
    found = shutil.which("uv")
    assert found, "uv is not on PATH: the test builds and installs the pack's wheel with it"
    done = subprocess.run([found, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def bake(out: Path, directory: str | None = None, **answers: str) -> Path:
    from cookiecutter.main import cookiecutter

    out.mkdir(parents=True, exist_ok=True)
    config = out / "cookiecutter.yaml"
    config.write_text(
        f"cookiecutters_dir: {json.dumps(str(out / 'cc'))}\n"
        f"replay_dir: {json.dumps(str(out / 'replay'))}\n",
        encoding="utf-8",
    )
    return Path(
        cookiecutter(
            str(TEMPLATE),
            directory=directory,
            no_input=True,
            extra_context=answers,
            output_dir=str(out),
            config_file=str(config),
        )
    )


def release(pack: Path, version: str, wheels: Path) -> Path:
    """Build the pack's wheel at `version`, as its README says: `uv build`."""
    pyproject = pack / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(re.sub(r'(?m)^version = ".*"$', f'version = "{version}"', text, count=1))
    uv("build", "--wheel", "--out-dir", str(wheels / version), str(pack))
    (wheel,) = (wheels / version).glob("*.whl")
    return wheel


@contextlib.contextmanager
def on_path(*folders: Path):
    for folder in folders:
        sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        for folder in folders:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(folder))
        for name in ("acme_data_conventions", "team_one", "team_two", "team_three"):
            sys.modules.pop(name, None)
        library.library.cache_clear()
        library.pack_thresholds.cache_clear()


def install(wheel: Path, site: Path) -> None:
    """Install (or move the pin to) `wheel` in `site`, a folder on sys.path."""
    shutil.rmtree(site, ignore_errors=True)
    uv("pip", "install", "--target", str(site), "--no-deps", "--python", sys.executable, str(wheel))
    importlib.invalidate_caches()
    library.library.cache_clear()
    library.pack_thresholds.cache_clear()


def cli_in(root: Path, *args: str, capsys, monkeypatch) -> tuple[int, str]:
    monkeypatch.chdir(root)
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def landing_rows(root: Path, fmt: str) -> list[dict]:
    """The customers landing rows as silver judges them: customer_id as landed (CSV: an empty
    field is no value), the email trimmed and lower-cased."""
    import csv

    rows = []
    for file in sorted((root / "fixtures/landing/customers").iterdir()):
        with file.open(encoding="utf-8", newline="") as handle:
            if fmt == "csv":
                read = [
                    {k: (v if v != "" else None) for k, v in r.items()}
                    for r in csv.DictReader(handle)
                ]
            else:
                read = [json.loads(line) for line in handle if line.strip()]
        rows += read
    return rows


def git(root: Path, *args: str) -> None:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def team_three(out: Path, pin: str) -> Path:
    """JSON like team one, but its customer id judged by a rule of its own (no rule of it
    changes: its diff needs no Spark), its customers' owner left to later (DQC005) under an
    exception to 1.1.0's lock, a rule written twice (DQ028); a git repository tagged v1."""
    root = bake(out, project_name="Team Three", conventions_pack="acme",
                conventions_pack_requirement=pin)  # fmt: skip
    rules = root / "src/team_three/rules/silver/customers.yml"
    text = rules.read_text(encoding="utf-8")
    own = "constraint: customer_id IS NOT NULL  # the team's own"
    text = re.sub(r"use: acme\.not_null\(column=customer_id\).*", own, text, count=1)
    kept = [x for x in text.splitlines() if not x.startswith("owner:")]
    rules.write_text("\n".join(kept) + "\n" + TWICE, encoding="utf-8")
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8").replace(
        "severity = {}", "severity = {}\nas_of = 2027-01-15", 1
    )
    pyproject.write_text(text + EXCEPTION, encoding="utf-8")
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "team three")
    git(root, "tag", "v1")
    return root


def fleet_numbers(report: dict) -> dict:
    """What the fleet's row says, computed from a team's own `conventions diff --json`."""
    rules = [r for d in report["datasets"] for r in d["rules"]]
    return {
        "rules_changed": sum(r["status"] != "unchanged" for r in rules),
        "newly_dropped": sum(d["newly_dropped"] for d in report["datasets"]),
        "newly_kept": sum(d["newly_kept"] for d in report["datasets"]),
        "gate_before": "PASS" if report["gate"]["before"]["passes"] else "FAIL",
        "gate_after": "PASS" if report["gate"]["after"]["passes"] else "FAIL",
    }


def test_a_pack_from_bake_to_pin_bump_in_two_teams(local_spark, tmp_path, capsys, monkeypatch):
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    pack = bake(
        tmp_path / "pack", "pack", pack_name="Acme Data Conventions", medallion_dq_source="index"
    )
    package = pack / "src" / "acme_data_conventions"
    (package / "policy.yml").write_text(POLICY_1_0, encoding="utf-8")
    wheel_1_0 = release(pack, "1.0.0", wheels)

    pin = f"acme-data-conventions @ {wheel_1_0.as_uri()}"
    teams = {
        "one": bake(
            tmp_path / "one",
            project_name="Team One",
            conventions_pack="acme",
            conventions_pack_requirement=pin,
        ),
        "two": bake(
            tmp_path / "two",
            project_name="Team Two",
            source_format="csv",
            include_container_backend=False,
            conventions_pack="acme",
            conventions_pack_requirement=pin,
        ),
    }
    one, two = teams["one"], teams["two"]
    # Team one lands a customer with a blank id; team two leaves owners and thresholds of its
    # customers to later (the pack's default applies; DQC005 warns).
    with (one / "fixtures/landing/customers/customers-2026-11-02.json").open("w") as file:
        file.write(json.dumps(BLANK_ID) + "\n")
    rules_two = two / "src/team_two/rules/silver/customers.yml"
    kept = [
        line
        for line in rules_two.read_text(encoding="utf-8").splitlines()
        if not line.startswith(("owner:", "threshold:"))
    ]
    rules_two.write_text("\n".join(kept) + "\n", encoding="utf-8")

    with on_path(site, one / "src", two / "src"):
        install(wheel_1_0, site)
        for name, root in teams.items():
            code, said = cli_in(
                root, "conventions", "write", capsys=capsys, monkeypatch=monkeypatch
            )
            assert code == 0, said
            code, said = cli_in(root, "check", capsys=capsys, monkeypatch=monkeypatch)
            assert code == 0, said
            assert ("DQC005" in said) == (name == "two"), said
            lake = Lake(local_spark, root)
            lake.land_fixtures("orders")
            lake.land_fixtures("customers")
            job = lake.project.run_job("medallion")
            assert job.ok, (
                name,
                [(t.key, t.status, t.message) for t in job.tasks],
            )
            gate = next(t.gate for t in job.tasks if t.gate is not None)
            sources = {(r.dataset.split(".")[-1], r.rule): r.threshold_source for r in gate.rows}
            expected = "layer" if name == "two" else "dataset"
            assert sources[("silver_customer_changes", "valid_email")] == expected

        # 1.1.0: not_null tightened, the silver default lowered, DQC005 an error and locked.
        library_yml = package / "library.yml"
        text = library_yml.read_text(encoding="utf-8")
        assert NOT_NULL in text
        library_yml.write_text(text.replace(NOT_NULL, NOT_BLANK, 1), encoding="utf-8")
        (package / "policy.yml").write_text(POLICY_1_1, encoding="utf-8")
        wheel_1_1 = release(pack, "1.1.0", wheels)

        said = {}
        for name, root, to in (
            ("one", one, str(wheel_1_1)),
            ("two", two, f"acme-data-conventions @ {wheel_1_1.as_uri()}"),
        ):
            out = tmp_path / f"diff-{name}.json"
            markdown = tmp_path / f"diff-{name}.md"  # for the pull request that moves the pin
            code = upgrade.command(
                Project(root),
                to,
                json_path=str(out),
                markdown_path=str(markdown),
                local=local_spark,
            )
            said[name] = (code, json.loads(out.read_text()))
            capsys.readouterr()

        for name, root, fmt in (("one", one, "json"), ("two", two, "csv")):
            code, report = said[name]
            assert (report["pack"], report["before"], report["after"]) == ("acme", "1.0.0", "1.1.0")
            assert report["thresholds"] == {"silver": {"before": 0.05, "after": 0.01}}
            (customers,) = report["datasets"]  # orders sets its own threshold: untouched
            assert customers["dataset"] == "silver_customer_changes"
            rows = landing_rows(root, fmt)
            null = sum(1 for r in rows if r.get("customer_id") is None)
            blank = sum(
                1 for r in rows if r.get("customer_id") is not None and not r["customer_id"].strip()
            )
            assert (name, blank) == (name, 1 if name == "one" else 0)
            rules = {r["name"]: r for r in customers["rules"]}
            assert rules["valid_customer_id"]["status"] == "changed"
            assert rules["valid_customer_id"]["failed"] == {"before": null, "after": null + blank}
            assert {n for n, r in rules.items() if r["status"] != "unchanged"} == {
                "valid_customer_id"
            }
            # The quarantine view, SQL written from the rules of 1.0.0, goes stale (DQC008), and
            # CONVENTIONS.md is 1.0.0's text (DQC018).
            stale, old_text = sorted(report["check"]["appeared"])
            assert stale.startswith("error: DQC008 src/pipelines/validation/silver/customers_q")
            assert old_text.startswith("warning: DQC018 CONVENTIONS.md: is pack acme 1.0.0's")
            severity = report["check"]["severity_changed"]
            assert bool(severity) == (name == "two")
            assert all(s.startswith("warning -> error: DQC005 ") for s in severity)
            assert report["gate"]["before"]["passes"] is True
            # Team one keeps its own 5 %; team two takes the pack's, now 1 %: its one malformed
            # email in 67 change events (1.5 %) is over it.
            if name == "one":
                assert code == 0 and report["gate"]["after"]["passes"] is True, report["gate"]
            else:
                bad = sum(1 for r in rows if "@@" in (r.get("email") or ""))
                assert code == 1 and 0.01 < bad / len(rows) <= 0.05, bad
                markdown = (tmp_path / "diff-two.md").read_text(encoding="utf-8")
                assert "## Rule changes: <code>1.0.0</code> → <code>1.1.0</code>" in markdown
                assert "- default threshold of silver: 5.0% → 1.0%" in markdown
                assert "**gate before: PASS**" in markdown and "**gate after: FAIL**" in markdown
                assert any(
                    w.startswith("silver_customer_changes.valid_email: ")
                    and "over its threshold 1.0%" in w
                    for w in report["gate"]["after"]["why"]
                ), report["gate"]["after"]

        # The fleet: every team's own diff in one table, before 1.1.0 ships.
        three = team_three(tmp_path / "three", pin)
        broken = tmp_path / "four" / "team-four"
        broken.mkdir(parents=True)
        (broken / "pyproject.toml").write_text("[project\n", encoding="utf-8")
        (tmp_path / "teams.txt").write_text(
            f"# the fleet\n{one}\n{two}\nfile://{three}@v1\nfour/team-four\n"
            "file:///nowhere/team-five.git@v1\n",
            encoding="utf-8",
        )
        fleet_json, fleet_md, prs = tmp_path / "fleet.json", tmp_path / "fleet.md", tmp_path / "prs"
        monkeypatch.chdir(tmp_path)
        code = fleet.command(
            str(wheel_1_1), ["teams.txt"], json_path=str(fleet_json), markdown_path=str(fleet_md),
            pr_dir=str(prs), release="2027-02-15", local=local_spark,
        )  # fmt: skip
        err = capsys.readouterr().err
        report = json.loads(fleet_json.read_text(encoding="utf-8"))
        rows = {r["team"]: r for r in report["teams"]}
        assert list(rows)[:3] == ["team-one", "team-two", "team-three"], list(rows)
        # The minor bump is too small: team two's gate flips (exit 1, one line naming it).
        assert code == 1 and report["needed"] == "major"
        (small,) = [line for line in err.splitlines() if line.startswith("error: bump too small")]
        assert small.startswith("error: bump too small: team-two: 1.0.0 -> 1.1.0 is a minor bump;")
        for name in ("one", "two"):
            row = rows[f"team-{name}"]
            assert {k: row[k] for k in fleet_numbers(row["diff"])} == fleet_numbers(said[name][1])
            assert row["diff"]["check"] == said[name][1]["check"]
        assert rows["team-one"]["impact"] == "minor" and rows["team-one"]["newly_dropped"] == 1
        assert rows["team-two"]["new_errors"], rows["team-two"]  # DQC005 warning -> error
        held = rows["team-three"]
        assert (held["pin"], held["impact"], held["gate_after"]) == ("1.0.0", "minor", "PASS")
        assert held["rules_changed"] == 0 and held["diff"]["datasets"] == []
        assert [(e["setting"], e["state"]) for e in held["exceptions"]] == [("DQC005", "held")]
        assert held["expiring"] and "until 2027-01-31" in held["expiring"][0]
        (red,) = held["red_when_preview_turns"]
        assert red.startswith("DQ028 ") and "(preview: an error from pack acme 1.2.0)" in red
        assert not rows["team-one"]["red_when_preview_turns"]
        unread = [r for r in report["teams"] if r["reason"]]
        assert len(unread) == 2 and len(report["teams"]) == 5
        assert any("pyproject.toml" in r["reason"] for r in unread), unread
        assert any(r["team"] == "team-five@v1" and "git" in r["reason"] for r in unread), unread
        assert sorted(p.name for p in prs.iterdir()) == [
            "team-one.md", "team-three.md", "team-two.md"
        ]  # fmt: skip
        pr_two = (prs / "team-two.md").read_text(encoding="utf-8")
        assert "Impact on this repository: **major**" in pr_two
        assert "medallion-dq quarantine write" in pr_two and "PASS → FAIL" in pr_two
        assert "platform-team" in (prs / "team-three.md").read_text(encoding="utf-8")
        assert "| team-two | 1.0.0 | 1 |" in fleet_md.read_text(encoding="utf-8")

        # The pin moves: team two's rules without an owner fail `check`, and a line that sets
        # DQC005 back to a warning is refused, naming the pack.
        for root in teams.values():
            pyproject = root / "pyproject.toml"
            text = pyproject.read_text(encoding="utf-8")  # [tool.uv.sources]: the wheel's path
            assert f'{{ path = "{wheel_1_0}" }}' in text
            pyproject.write_text(text.replace(str(wheel_1_0), str(wheel_1_1)), encoding="utf-8")
        install(wheel_1_1, site)
        for command in (["conventions", "write"], ["quarantine", "write"], ["check"]):
            code, out = cli_in(one, *command, capsys=capsys, monkeypatch=monkeypatch)
            assert code == 0, (command, out)
        assert "DQC" not in out, out
        code, out = cli_in(two, "quarantine", "write", capsys=capsys, monkeypatch=monkeypatch)
        assert code == 0, out
        code, out = cli_in(two, "check", capsys=capsys, monkeypatch=monkeypatch)
        assert code == 1
        lacking = [line for line in out.splitlines() if line.startswith("DQC005 ")]
        assert lacking and all("rule has no owner" in line for line in lacking), out
        pyproject = two / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8")
        pyproject.write_text(text.replace("severity = {}", 'severity = {DQC005 = "warning"}', 1))
        code, out = cli_in(two, "check", capsys=capsys, monkeypatch=monkeypatch)
        assert code == 1
        assert "DQC017 pyproject.toml line " in out and "which conventions pack acme locks" in out

        # Team three's exception holds until its day (the table's as_of is the clock), then not.
        pyproject = three / "pyproject.toml"
        pyproject.write_text(pyproject.read_text().replace(str(wheel_1_0), str(wheel_1_1)))
        for command in (["conventions", "write"], ["quarantine", "write"], ["check"]):
            code, out = cli_in(three, *command, capsys=capsys, monkeypatch=monkeypatch)
        assert code == 0, out
        assert "DQC017 pyproject.toml line " in out and "until 2027-01-31" in out, out
        assert "DQ028 " in out and "(preview: an error from pack acme 1.2.0)" in out
        text = pyproject.read_text(encoding="utf-8")
        pyproject.write_text(text.replace("as_of = 2027-01-15", "as_of = 2027-02-01"))
        code, out = cli_in(three, "check", capsys=capsys, monkeypatch=monkeypatch)
        assert code == 1 and "expired on 2027-01-31" in out, out
        # One version later the preview is the pack's: the rule written twice is an error.
        wheel_1_2 = release(pack, "1.2.0", wheels)
        install(wheel_1_2, site)
        pyproject.write_text(text.replace(str(wheel_1_1), str(wheel_1_2)))
        code, out = cli_in(three, "conventions", "write", capsys=capsys, monkeypatch=monkeypatch)
        code, out = cli_in(three, "check", capsys=capsys, monkeypatch=monkeypatch)
        assert code == 1 and "DQ028 " in out and "preview:" not in out, out
