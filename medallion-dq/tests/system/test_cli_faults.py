"""Faults under the CLI: a run or a check whose Spark server is killed mid-way ends in one clear
line."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from processes import child_processes, run_cli_and_kill_server
from sample import sample_project


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
from medallion_dq.tools import cli, examples
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
    the check exited 1. The line says what the server was judging. It needs a Spark server of its own (DQ_REUSE=0, a JVM of its own
    process): killing the warm server the test processes share would break every test using it,
    and a server started inside the test process leaves pyspark's process-wide state (the
    Connect mode, the JVM gateway) pointing at a dead JVM for the tests after it."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(sample_project(), project, ignore=shutil.ignore_patterns(".local"))
    tests = os.path.dirname(os.path.dirname(__file__))
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
    # what it was judging: the sample's rules build nothing, so no rule is named as the cause
    assert re.search(r"mid-run while judging the examples of \d+ rules in one query\.", errors[0])
    assert "DQ020" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert "check: " not in done.stdout  # no count of examples it could not judge
