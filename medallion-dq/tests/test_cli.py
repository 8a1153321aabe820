"""`medallion-dq`, as a team runs it in its project folder: output, JSON summary, exit codes."""

import json
import os
import signal
import subprocess
import sys

import pytest

import medallion_dq
from medallion_dq.local import server
from processes import child_processes, run_cli_and_kill_server
from sample import sample_project


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=cwd or sample_project(),
        env={**os.environ, "DQ_SERVER_IDLE_TIMEOUT": "120"},  # a lake's server outlives no test
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_version():
    done = cli("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"medallion-dq {medallion_dq.__version__}")


def test_check_finds_the_project_from_any_folder_below_it():
    done = cli("check", cwd=sample_project() / "src" / "pipelines")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("check: 0 error(s), 0 warning(s)")


def test_outside_a_project_is_exit_2_with_the_fix(tmp_path):
    done = cli("check", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: no databricks.yml in {tmp_path.resolve()} or above it: "
        "run from the project folder or pass --root"
    )


def test_check_exit_1_names_the_file_and_rule(tmp_path):
    project = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    rules = project / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
    rules.write_text(rules.read_text().replace("action: drop", "action: dorp", 1))
    done = cli("check", cwd=project)
    assert done.returncode == 1
    assert (
        "DQ006 src/acme_orders/rules/silver/orders.yml: rule 'whole_record': "
        "unknown action 'dorp'; fix: use warn, drop or fail"
    ) in done.stdout


def test_control_characters_in_what_check_prints_show_as_escapes(tmp_path):
    """A file name and a value with a terminal escape, a carriage return and a bidirectional
    override: printed as their escapes, so they cannot colour, overwrite or reorder the line."""
    project = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    rules = project / "src" / "acme_orders" / "rules" / "silver"
    text = (rules / "orders.yml").read_text().replace("action: drop", 'action: "\\e[2Jdorp"', 1)
    (rules / "orders\x1b[31m\r\u202e.yml").write_text(text.replace("silver_orders", "silver_o2"))
    done = cli("check", cwd=project)
    assert done.returncode == 1
    assert "rules/silver/orders\\x1b[31m\\x0d\\u202e.yml: rule 'whole_record'" in done.stdout
    assert "unknown action '\\x1b[2Jdorp'" in done.stdout
    assert not any(c in done.stdout + done.stderr for c in "\x1b\r\u202e")


@pytest.fixture(scope="module")
def two_days(tmp_path_factory):
    """The sample job run twice, as a team runs it, in the project's lasting local lake: a
    normal day, then the bad day's file added to the same landing folder."""
    root = tmp_path_factory.mktemp("two-days")
    project, landing = root / "project", root / "landing files"  # a space: said as written
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    subprocess.run(["cp", "-r", str(project / "fixtures" / "landing"), str(landing)], check=True)
    days = []
    for day in ("normal", "bad"):
        if day == "bad":
            for file in (project / "fixtures" / "bad_day" / "orders").iterdir():
                (landing / "orders" / file.name).write_bytes(file.read_bytes())
        summary = root / f"{day}.json"
        done = cli(
            "run",
            "--job",
            "medallion",
            "--landing",
            str(landing),
            "--json",
            str(summary),
            cwd=project,
        )
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
        "bronze_customers": 62,
        "silver_customers": 59,
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
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the server's JVM through /proc")
@pytest.mark.parametrize("server", ["own", "warm"])
def test_server_killed_mid_run_ends_the_run_with_a_clear_error(server, tmp_path):
    """Fault injection: the server's JVM is killed (as the OOM killer would) during the
    validation update: a run's own server, or the lake's warm one. The run ends within the
    client's retry bound (about 15 s) with exit code 3 and a message saying what happened: no
    hang, no stack trace."""
    project = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)

    def kill_its_jvm(cli):
        if server == "own":
            parent = cli.pid
        else:  # the lake's server: a JVM under its supervisor, apart from the run's process
            (state,) = (project / ".local" / "lake" / "dev" / "server").glob("*/server.json")
            parent = json.loads(state.read_text())["pid"]
        jvms = child_processes(parent, "java")
        assert len(jvms) == 1, jvms
        os.kill(jvms[0], signal.SIGKILL)

    own = ["--own-server"] if server == "own" else []
    code, output, ended_in = run_cli_and_kill_server(
        project,
        ["run", "--pipeline", "validation", *own],
        kill_its_jvm,
        env={"DQ_BACKEND": "embedded", "DQ_SERVER_IDLE_TIMEOUT": "60"},
    )
    assert code == 3, output
    assert "error: the embedded Spark Connect server stopped answering mid-run" in output
    assert "Start a new run" in output and "Cause: details =" in output
    assert "Traceback" not in output and "\tat org.apache" not in output, output
    assert ended_in < 60, f"the run took {ended_in:.0f} s to end after the kill"


# Kills its own server when the server is up and the examples are not yet judged.
CHECK_THAT_LOSES_ITS_SERVER = """
import os, signal, sys
from medallion_dq import cli, examples
from processes import child_processes

before, cases = set(child_processes(os.getpid(), "java")), examples.cases

def kill_the_server_first(rule_sets):
    (jvm,) = set(child_processes(os.getpid(), "java")) - before
    os.kill(jvm, signal.SIGKILL)
    os.waitpid(jvm, 0)
    return cases(rule_sets)

examples.cases = kill_the_server_first
sys.exit(cli.main(["--root", sys.argv[1], "check", "--examples"]))
"""


@pytest.mark.spark
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the server's JVM through /proc")
def test_check_examples_that_loses_its_server_says_so_once(tmp_path):
    """`check --examples` whose server dies as the examples are judged ends with exit 3 and one
    line saying what happened. Before: each of the sample's examples was reported as an example
    Spark cannot judge (87 DQ020 "type" errors, after a rule's java_method stopped the JVM) and
    the check exited 1. It needs a Spark server of its own (DQ_REUSE=0, a JVM of its own
    process): killing the warm server the test processes share would break every test using it,
    and a server started inside the test process leaves pyspark's process-wide state (the
    Connect mode, the JVM gateway) pointing at a dead JVM for the tests after it."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(sample_project(), project, ignore=shutil.ignore_patterns(".local"))
    tests = os.path.dirname(__file__)
    done = subprocess.run(
        [sys.executable, "-c", CHECK_THAT_LOSES_ITS_SERVER, str(project)],
        env={
            **os.environ,
            "DQ_REUSE": "0",
            "DQ_BACKEND": "embedded",
            "PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])),
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("error: the embedded Spark Connect server stopped answering")
    assert "DQ020" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert "check: " not in done.stdout  # no count of examples it could not judge


def test_a_run_says_what_it_does_within_a_second(tmp_path):
    """The first line comes before anything slow (checks, Spark): a user sees it at once."""
    import time

    project = sample_project()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "medallion_dq", "run", "--pipeline", "nope"],
        cwd=project,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = process.stderr.readline()
    elapsed = time.monotonic() - started
    process.communicate(timeout=120)
    assert first.startswith("medallion-dq: run pipeline nope"), first
    assert elapsed < 1, f"the first line came after {elapsed:.2f} s"


@pytest.mark.spark
def test_a_project_in_a_folder_with_a_space_quotes_and_accents_runs(tmp_path):
    """The paths handed to Java (the log4j file, the class archive, the warehouse, the
    engine's storage) hold the project's folder: the launcher splits Java options at spaces and
    reads quotes; the engine escapes its storage root's URI again."""
    project = tmp_path / 'it\'s a "team" folder, café' / "acme orders"
    project.parent.mkdir()
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    try:
        run = cli("run", "--pipeline", "validation", cwd=project)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "pipeline validation: COMPLETED" in run.stdout
        # The engine's checkpoints are in the lake: once, in a folder named by the path's URI
        # text (`%2520`), where a full refresh then missed them and failed on deleted data.
        assert (project / ".local" / "lake" / "dev" / "storage").is_dir()
        refresh = cli("run", "--pipeline", "validation", "--full-refresh", cwd=project)
        assert refresh.returncode == 0, refresh.stdout[-3000:] + refresh.stderr[-3000:]
        examples = cli("check", "--examples", cwd=project)  # the shared server, its own log
        assert examples.returncode == 0, examples.stderr[-3000:] + examples.stdout[-3000:]
        logs = [*project.glob(".local/lake/*/server/*/spark-server.log")]  # the lake's server
        logs += [*project.glob(".local/spark/*/spark-server.log")]
        assert len(logs) == 2
        for log in logs:  # our log4j settings were found: WARN and above, in our layout
            assert " INFO " not in log.read_text() and "StatusLogger" not in log.read_text()
    finally:
        cli("spark", "stop", cwd=project)
