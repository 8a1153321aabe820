"""`medallion-dq`, as a team runs it in its project folder: output, JSON summary, exit codes."""

import dataclasses
import os
import subprocess
import sys

import medallion_dq
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


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    """Ctrl-C in any command (here while `check --examples` would start its server) ends in
    one line, not a traceback."""
    from medallion_dq.tools import cli as command_line

    def interrupted(_args):
        raise KeyboardInterrupt

    commands = [
        dataclasses.replace(c, run=interrupted) if c.run is command_line.cmd_check else c
        for c in command_line.COMMANDS
    ]
    monkeypatch.setattr(command_line, "COMMANDS", commands)
    assert command_line.main(["--root", str(sample_project()), "check", "--examples"]) == 130
    assert capsys.readouterr().err == "check: stopped by SIGINT\n"
