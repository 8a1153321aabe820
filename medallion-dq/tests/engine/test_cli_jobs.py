"""The sample job as a team runs it with the CLI: the summary, the gate's exit code, report, and a
project in a folder whose name needs quoting."""

import json
import os
import re
import subprocess
import sys

import pytest

import terminal
from medallion_dq.local import server
from sample import sample_project


def cli_env() -> dict[str, str]:
    """The tests' environment as it is now (the session's fixtures set some of it)."""
    return {**os.environ, "DQ_SERVER_IDLE_TIMEOUT": "120"}  # a lake's server outlives no test


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=cwd or sample_project(),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def two_days(tmp_path_factory):
    """The sample job run twice, as a team runs it, in the project's lasting local lake: a
    normal day, the first run (its lake's server starts) at a terminal (a pseudo-terminal of 80
    columns), then the bad day's file added to the same landing folder, piped. The project's folder
    and the landing folder have names that need quoting (test_a_project_in_a_folder_...)."""
    root = tmp_path_factory.mktemp("two-days") / 'it\'s a "team" folder, café'
    project, landing = root / "acme orders", root / "landing files"  # a space: said as written
    root.mkdir()
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    subprocess.run(["cp", "-r", str(project / "fixtures" / "landing"), str(landing)], check=True)
    days = []
    for day in ("normal", "bad"):
        if day == "bad":
            for file in (project / "fixtures" / "bad_day" / "orders").iterdir():
                (landing / "orders" / file.name).write_bytes(file.read_bytes())
        summary = root / f"{day}.json"
        args = ["run", "--job", "medallion", "--landing", str(landing), "--json", str(summary)]
        args += ["--markdown", str(root / f"{day}.md")]  # what the baked CI puts in its summary
        if day == "normal":  # a first run, as a user at a terminal of 80 columns sees it
            seen = terminal.cli(args, cwd=project, columns=80, env=cli_env())
            done = subprocess.CompletedProcess(args, seen.returncode, terminal.plain(seen.raw), "")
            done.seen = seen  # type: ignore[attr-defined]
            assert summary.is_file(), terminal.plain(seen.raw)[-3000:]
        else:  # piped, as CI reads it: plain text
            done = cli(*args, cwd=project)
        days.append((done, json.loads(summary.read_text())))
    yield project, days
    cli("spark", "stop", cwd=project)


@pytest.mark.spark
def test_run_job_writes_the_summary(two_days):
    _, [(done, result), _] = two_days
    assert done.returncode == 0, done.stdout + done.stderr
    assert "job medallion: SUCCESS" in done.stdout
    assert set(result) == {"job", "status", "seconds", "tasks"}
    assert result["status"] == "SUCCESS"
    assert list(result["tasks"]) == ["validate", "quality_gate", "publish"]
    validate = result["tasks"]["validate"]["update"]
    assert set(validate) == {
        "pipeline",
        "update_id",
        "status",
        "seconds",
        "flows",
        "datasets",
        "restored",
        "removed",
        "unread_files",
        "landing_drift",
        "error",
    }
    rows = {name: d["output_rows"] for name, d in validate["datasets"].items()}
    assert rows == {
        "bronze_orders": 201,
        "silver_orders": 188,
        "silver_orders_quarantine": 13,
        "bronze_customers": 67,  # 62 customers, then 5 changes
        "silver_customers": 58,
        "silver_customers_history": 63,
        "silver_customer_changes": None,  # the change events' view: its rules, no table
    }
    drift = {name: d["rescued_records"] for name, d in validate["landing_drift"].items()}
    assert drift == {"bronze_orders": 0, "bronze_customers": 0}
    silver = validate["datasets"]["silver_orders"]
    assert (silver["input_records"], silver["dropped_records"]) == (201, 13)
    assert {e["name"]: e["failed_records"] for e in silver["expectations"]} == {
        "whole_record": 1,  # the record cut short in orders-2026-11-04
        "known_channel": 5,
        "positive_quantity": 3,
        "valid_order_id": 3,
        "valid_amount": 7,
        "valid_order_ts": 3,
        "known_currency": 3,
    }
    gate = result["tasks"]["quality_gate"]["gate"]
    assert gate["passed"] is True
    assert {c["name"]: c["status"] for c in gate["checks"]} == dict.fromkeys(
        ["daily_volume", "fresh_orders", "known_customer", "schema"], "PASS"
    )


@pytest.mark.spark
def test_a_first_run_at_a_terminal_shows_progress_and_fits_its_width(two_days):
    """The first run of a project at a terminal: while its server starts, a live status with
    the seconds going up; during the first update, its datasets done and those awaited; no
    line wider than the terminal (80 columns), the gate's tables included."""
    _, [(done, _), _] = two_days
    seen = done.seen
    assert seen.returncode == 0, terminal.plain(seen.raw)[-3000:]
    drawn = seen.drawn
    assert max(map(len, drawn)) <= 80, max(drawn, key=len)
    starting = {int(m[1]) for run in drawn if (m := re.match(r"\S Spark \((\d+) s\)", run))}
    assert len(starting) >= 2, drawn  # redrawn while the server started
    update = r"\S job medallion \((\d+) s\): update acme_orders_validation: (\d+) of (\d+) data"
    progress = [m for run in drawn if (m := re.match(update, run))]
    assert any(int(m[2]) < int(m[3]) for m in progress), drawn  # seen before it ended
    header = r"rule +passed +failed +failed % +threshold +status$"
    lines = [line.rstrip() for line in seen.lines]
    table = next(i for i, line in enumerate(lines) if re.search(header, line))
    assert lines[table + 1].startswith("─" * 80)  # the gate's table, drawn by rich


@pytest.mark.spark
def test_run_markdown_writes_the_gates_tables_for_the_job_summary(two_days):
    """`run --markdown`, as the baked CI files run it: the tasks, then the gate's rule and check
    tables in markdown, a rule's contract clause beneath its name; the bad day says why."""
    project, _ = two_days
    normal = (project.parent / "normal.md").read_text(encoding="utf-8")
    assert normal.startswith("## Data quality: job medallion SUCCESS\n")
    assert "| <code>validate</code> | SUCCESS |" in normal
    assert "### Quality gate: PASSED (update <code>" in normal
    assert (
        "| <code>silver&#95;orders.valid&#95;order&#95;ts</code><br>orders.order&#95;ts: required,"
        " minimum (acme-orders-orders 1.0.0) | 198 | 3 | 1.49% |" in normal
    )
    assert "| rule | passed | failed | failed % | threshold | status |" in normal
    assert "| check | value | bound | status |" in normal
    bad = (project.parent / "bad.md").read_text(encoding="utf-8")
    assert bad.startswith("## Data quality: job medallion **FAILED**\n")
    assert "| <code>publish</code> | SKIPPED |" in bad
    assert "### Quality gate: **FAILED**" not in bad and "### Quality gate: FAILED" in bad
    amount = next(line for line in bad.splitlines() if "valid&#95;amount</code>" in line)
    assert amount.endswith("| **FAIL** |"), amount
    assert "; 2 dataset check(s) failed: silver&#95;orders.daily&#95;volume" in bad
    assert (
        "| <code>silver&#95;orders.known&#95;customer</code> (references)<br>orders.customer&#95;id:"
        " relationship to silver&#95;customers.customer&#95;id (acme-orders-orders 1.0.0) | 3 of "
        in bad
    )


@pytest.mark.spark
def test_bad_day_stops_at_the_gate_exit_1(two_days):
    """Exit 1, the summary says why (a rule over its threshold, a third of the usual volume,
    orders of unknown customers), and publish never ran."""
    _, [_, (done, report)] = two_days
    assert done.returncode == 1, done.stdout + done.stderr
    assert report["status"] == "FAILED"
    assert report["tasks"]["validate"]["status"] == "SUCCESS"
    assert report["tasks"]["quality_gate"]["status"] == "FAILED"
    gate = report["tasks"]["quality_gate"]["gate"]
    assert "silver_orders.valid_amount" in gate["table"]
    assert report["tasks"]["publish"]["status"] == "SKIPPED"
    silver = report["tasks"]["validate"]["update"]["datasets"]["silver_orders"]
    assert silver["input_records"] == 40 and silver["dropped_records"] == 10  # the new file only
    checks = {c["name"]: c for c in gate["checks"]}
    assert (checks["daily_volume"]["status"], checks["daily_volume"]["value"]) == (
        "FAIL",
        f"30 rows ({30 / 188:.2f}x the median)",
    )
    assert checks["known_customer"]["status"] == "FAIL"
    note = checks["known_customer"]["note"]  # the orphans' file, and how they leave silver
    assert note.startswith("e.g. C-9001, C-9002, C-9003, from /")
    assert note.endswith(
        "/landing files/orders/orders-2026-11-07.json; they stay in silver_orders until silver_customers"
        " has their customer_id, or until a --full-refresh run leaves out the files they came from"
    )
    assert "quality gate FAILED" in done.stdout
    assert (
        "2 dataset check(s) failed: silver_orders.daily_volume, silver_orders.known_customer"
        " [orders.customer_id: relationship to silver_customers.customer_id"
        " (acme-orders-orders 1.0.0)]" in done.stdout  # the contract clause a check was made from
    )


@pytest.mark.spark
def test_report_reads_both_days_with_their_checks(two_days):
    """On the lake's warm server: once, it started the project's beside it (a second JVM)."""
    project, _ = two_days
    report = cli("report", cwd=project)
    assert report.returncode == 0, report.stdout + report.stderr
    running = [folder for folder, info in server.servers(project) if info]  # copies say None
    assert [folder.parent.name for folder in running] == ["server"], running  # the lake's alone
    assert "silver_orders" in report.stdout and "valid_amount" in report.stdout
    checks = report.stdout.split("dataset checks, pipeline acme_orders_validation, update ")[1]
    assert "silver_orders.daily_volume (volume)" in checks and "FAIL" in checks
    page = (project / ".local" / "dq-report.html").read_text()
    assert "Dataset checks (latest gate)" in page and "silver_orders.known_customer" in page


@pytest.mark.spark
def test_a_decorator_misused_in_a_pipeline_file_is_one_block_and_exit_2(two_days):
    """A mistake only loading the file shows (the grouped decorator given two strings, DQ015):
    one block naming the file and line, from a real run on the lake's server. The file is put
    back after."""
    project, _ = two_days
    silver = project / "src" / "pipelines" / "validation" / "silver" / "orders.py"
    text = silver.read_text(encoding="utf-8")
    good, bad = "@dp.expect_all_or_drop(ORDERS.drop)", '@dp.expect_all_or_drop("valid_amount", "x")'
    assert good in text
    broken = text.replace(good, bad, 1)
    line = next(i for i, ln in enumerate(broken.splitlines(), start=1) if bad in ln)
    silver.write_text(broken, encoding="utf-8")
    try:
        landing = str(project.parent / "landing files")
        done = cli("run", "--pipeline", "validation", "--landing", landing, cwd=project)
    finally:
        silver.write_text(text, encoding="utf-8")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert f"src/pipelines/validation/silver/orders.py:{line}" in output and "DQ015" in output
    assert "Traceback" not in output and "at org.apache" not in output


@pytest.mark.spark
def test_a_project_in_a_folder_with_a_space_quotes_and_accents_runs(two_days):
    """The paths handed to Java (the log4j file, the class archive, the warehouse, the
    engine's storage) hold the project's folder: the launcher splits Java options at spaces and
    reads quotes; the engine escapes its storage root's URI again. The two days ran in such a
    folder; a full refresh and the shared test server's run follow here (last: report, above,
    expects the lake's server alone)."""
    project, _ = two_days
    # The engine's checkpoints are in the lake: once, in a folder named by the path's URI text
    # (`%2520`), where a full refresh then missed them and failed on deleted data.
    assert (project / ".local" / "lake" / "dev" / "storage").is_dir()
    landing = str(project.parent / "landing files")
    refresh = cli(
        "run", "--pipeline", "validation", "--full-refresh", "--landing", landing, cwd=project
    )
    assert refresh.returncode == 0, refresh.stdout[-3000:] + refresh.stderr[-3000:]
    assert "pipeline validation: COMPLETED" in refresh.stdout
    examples = cli("check", "--examples", cwd=project)  # the shared server, its own log
    assert examples.returncode == 0, examples.stderr[-3000:] + examples.stdout[-3000:]
    logs = [*project.glob(".local/lake/*/server/*/spark-server.log")]  # the lake's server
    logs += [*project.glob(".local/spark/*/spark-server.log")]
    assert len(logs) == 2
    for log in logs:  # our log4j settings were found: WARN and above, in our layout
        assert " INFO " not in log.read_text() and "StatusLogger" not in log.read_text()
