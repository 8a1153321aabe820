"""One output channel: what the tools show a user goes through `medallion_dq.tools.console` (levels,
quiet mode, escapes), debugging through `logging`."""

import ast
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import terminal
from medallion_dq.tools import console
from sample import sample_project

TOOLS = Path(__file__).resolve().parents[2] / "src" / "medallion_dq"
# Modules that may still call print(): the console itself; the settings' `python -m` table
# (the project model, below the console's layer).
PRINTING = {"tools/console.py", "project/settings.py"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=sample_project(),
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_print_outside_the_console():
    """A line for the user is said through medallion_dq.tools.console (a print in generated
    code is text in a string, not a call)."""
    calls = [
        f"{path.relative_to(TOOLS)}:{node.lineno}"
        for path in sorted(TOOLS.rglob("*.py"))
        if path.relative_to(TOOLS).as_posix() not in PRINTING
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]
    assert calls == [], "say it through medallion_dq.tools.console"


@pytest.mark.parametrize("command", [["-q", "run"], ["run", "--quiet"]])
def test_quiet_run_keeps_its_errors_and_exit_code_and_drops_its_progress(command):
    said, quiet = cli("run", "--pipeline", "nope"), cli(*command, "--pipeline", "nope")
    assert (said.returncode, quiet.returncode) == (2, 2)
    first, *errors = said.stderr.splitlines()
    assert first.startswith("medallion-dq: run pipeline nope in ")  # progress
    assert errors[-1] == "pipeline nope: not started (fix the errors above)"
    assert quiet.stderr.splitlines() == errors
    assert said.stdout == quiet.stdout == ""


def test_quiet_check_keeps_its_results():
    said, quiet = cli("check"), cli("--quiet", "check")
    assert said.returncode == quiet.returncode == 0
    assert quiet.stdout == said.stdout
    assert quiet.stdout.strip().endswith("check: 0 error(s), 0 warning(s)")


def test_each_level_on_its_stream_and_quiet_keeps_results_warnings_errors(capsys):
    def say_all():
        console.result("result")
        console.progress("progress")
        console.info("info")
        console.warning("warning")
        console.error("error")

    with console.opened():
        say_all()
    assert capsys.readouterr() == ("result\nprogress\n", "info\nwarning\nerror\n")
    with console.opened(quiet=True):
        say_all()
    assert capsys.readouterr() == ("result\n", "warning\nerror\n")
    assert not console.quiet()  # put back after the command


def test_control_characters_show_as_escapes_outside_a_command_too(capsys):
    console.result("a\x1b[31m\r\u202eb")
    assert capsys.readouterr().out == "a\\x1b[31m\\x0d\\u202eb\n"


@pytest.mark.parametrize("quiet", [False, True])
def test_library_lines_prefixed_on_stderr_debug_with_verbose(capsys, quiet):
    library = logging.getLogger("medallion_dq.somewhere")
    with console.opened(quiet=quiet):
        library.debug("debug")
        library.info("info")
        library.warning("warning")
    info = [] if quiet else ["medallion-dq: info"]
    assert capsys.readouterr().err.splitlines() == [*info, "medallion-dq: warning"]
    with console.opened(verbose=True):
        library.debug("debug")
    assert capsys.readouterr().err == "medallion-dq: debug\n"


def test_update_lines_bare_on_stdout_or_where_a_command_puts_them(capsys):
    updates = logging.getLogger(console.UPDATES)
    with console.opened():
        updates.info("[validation] update 1: 3 pipeline files")
        with console.update_lines_on("stderr"):
            updates.warning("[validation] update 1 FAILED in 1.0 s")
        updates.info("[validation] silver_orders: COMPLETED")
    assert capsys.readouterr() == (
        "[validation] update 1: 3 pipeline files\n[validation] silver_orders: COMPLETED\n",
        "[validation] update 1 FAILED in 1.0 s\n",
    )
    with console.opened(quiet=True):
        updates.info("[validation] silver_orders: COMPLETED")
        updates.warning("[validation] update 2 FAILED in 1.0 s")
    assert capsys.readouterr() == ("[validation] update 2 FAILED in 1.0 s\n", "")


def test_py4j_on_the_root_logger_says_nothing_in_a_command(capfd):
    """py4j logs a gateway that stopped answering with `logging.exception` on the root logger
    (its whole stack on stderr); in a command the server's loss is said once, by the command."""
    import logging
    import os

    with console.opened():
        record = logging.LogRecord(
            "root", logging.ERROR, f"{os.sep}x{os.sep}py4j{os.sep}java_gateway.py", 1,
            "Exception while sending command.", None, None,
        )  # fmt: skip
        assert not logging.root.filter(record)
        mine = logging.LogRecord("root", logging.ERROR, __file__, 1, "other", None, None)
        assert logging.root.filter(mine)


GATE_SCRIPT = """
import logging
from medallion_dq import gate
from medallion_dq.checks import CheckResult
from medallion_dq.tools import console

verdict = gate.evaluate(
    [{"dataset": "silver_orders", "name": "valid_order_ts", "passed": 198, "failed": 3},
     {"dataset": "silver_orders", "name": "valid_amount[/]", "passed": 30, "failed": 10}],
    {"silver_orders": 0.05},
)
verdict.clauses = {
    "silver_orders.valid_order_ts": "orders.order_ts: required, minimum (acme-orders-orders 1.0.0)",
    "silver_orders.known_customer": "orders.customer_id: relationship to"
    " silver_customers.customer_id (acme-orders-orders 1.0.0)",
}
verdict.checks = [CheckResult(
    "silver_orders", "known_customer", "references",
    "3 of 218 rows with a customer_id not in silver_customers [bold]x[/bold]",
    "at most 0 row(s) without a silver_customers.customer_id", False,
    note="e.g. C-9001, C-9002, from /a/very/long/path/to/the/landing/files/orders-2026-11-07.json",
)]
with console.opened():
    logging.getLogger(console.UPDATES).warning(str(verdict), extra={"gate": verdict})
"""


@pytest.mark.parametrize("columns", [80, 120])
def test_the_gate_fits_the_terminal_and_its_clause_has_a_line_of_its_own(columns):
    """On a terminal (a pseudo-terminal of 80 or 120 columns), the gate's tables fit its width,
    a rule's contract clause under its name; data holding rich markup prints as written."""
    seen = terminal.run([sys.executable, "-c", GATE_SCRIPT], columns=columns)
    lines = [line.rstrip() for line in seen.lines]
    assert seen.returncode == 0, seen.raw
    assert max(map(len, lines)) <= columns, "\n".join(lines)
    rule = next(i for i, line in enumerate(lines) if "silver_orders.valid_order_ts" in line)
    assert "198" in lines[rule] and "1.49%" in lines[rule]
    assert lines[rule + 1].strip().startswith("orders.order_ts: required,")
    words = " ".join(lines)
    assert "silver_orders.valid_amount[/]" in words
    assert "[bold]x[/bold]" in words or "[bold]x" in words  # a cell may wrap after it
    assert "quality gate FAILED" in words


def test_piped_the_gate_is_the_plain_text_whatever_columns_says():
    """Off a terminal the gate's lines are its plain text (`GateResult.__str__`), $COLUMNS or
    not: the same in every CI log."""
    env = {**os.environ, "COLUMNS": "40"}
    done = subprocess.run(
        [sys.executable, "-c", GATE_SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == [
        "rule",
        "passed",
        "failed",
        "failed",
        "%",
        "threshold",
        "status",
    ]
    assert (
        "silver_orders.valid_order_ts [orders.order_ts: required, minimum"
        " (acme-orders-orders 1.0.0)]" in done.stdout
    )
    assert max(map(len, done.stdout.splitlines())) > 100  # not fitted to anything


WAIT_SCRIPT = """
import logging, sys, time
from medallion_dq.tools import console

console.HEARTBEAT = 0.4
updates = logging.getLogger(console.UPDATES)
with console.opened(quiet="-q" in sys.argv):
    with console.waiting("Spark"):
        logging.getLogger("medallion_dq.local.server").info(
            "starting a Spark server: its JVM loads Spark and Delta; its log: x")
        time.sleep(1.5)
    with console.waiting("job medallion", {"validation": ["bronze_orders", "silver_orders"]}):
        updates.info("[validation] update u1: 4 pipeline files")
        updates.debug("[validation] bronze_orders: RUNNING")
        updates.info("[validation] bronze_orders: COMPLETED")
        updates.debug("[validation] silver_orders: RUNNING")
        time.sleep(1.5)
        updates.info("[validation] silver_orders: COMPLETED")
        updates.info("[job medallion] validate: SUCCESS")
        updates.debug("[job medallion] quality_gate: RUNNING")
        time.sleep(1.5)
        updates.info("[job medallion] quality_gate: SUCCESS")
    console.result("job medallion: SUCCESS in 3.0 s")
"""


def test_a_terminal_shows_what_a_command_waits_for_live_on_stderr():
    """On a terminal: the server's phase, then an update's datasets done and awaited, with the
    seconds going up, redrawn in place on stderr; stdout (a pipe here) holds what it held."""
    seen = terminal.run([sys.executable, "-c", WAIT_SCRIPT], stdout_pipe=True)
    assert seen.returncode == 0, seen.raw
    assert seen.stdout.splitlines() == [  # the update lines (`run` shows them there) and the result
        "[validation] update u1: 4 pipeline files",
        "[validation] bronze_orders: COMPLETED",
        "[validation] silver_orders: COMPLETED",
        "[job medallion] validate: SUCCESS",
        "[job medallion] quality_gate: SUCCESS",
        "job medallion: SUCCESS in 3.0 s",
    ]
    raw = terminal.plain(seen.raw)
    assert "Spark (0 s): starting a Spark server: its JVM loads Spark and Delta" in raw
    assert "Spark (1 s): starting a Spark server: its JVM loads Spark and Delta" in raw
    assert "job medallion (1 s): update validation: 1 of 2 dataset(s) done; running silve" in raw
    # The gate, a task without an update: its name, not the last update's datasets.
    assert re.search(r"job medallion \(\d s\): running task quality_gate", raw), raw
    assert "update job" not in raw
    assert "RUNNING" not in seen.stdout  # a running flow feeds the status, it is no line
    assert max(map(len, seen.drawn)) <= 80  # cut short, never wrapped


@pytest.mark.parametrize("how", ["CI", "-q"])
def test_in_ci_or_quiet_a_wait_is_a_plain_line_every_few_seconds(how):
    env = {**os.environ, "CI": "true"} if how == "CI" else os.environ
    done = subprocess.run(
        [sys.executable, "-c", WAIT_SCRIPT, *([how] if how == "-q" else [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "job medallion: SUCCESS in 3.0 s"
    waits = [line for line in done.stderr.splitlines() if line.startswith("medallion-dq: Spark")]
    assert 2 <= len(waits) <= 4, done.stderr  # 1.5 s at most every 0.4 s
    assert "\x1b" not in done.stderr  # no colours, no cursor moves
    assert any("running silver_orders" in line for line in done.stderr.splitlines())
    assert any("running task quality_gate" in line for line in done.stderr.splitlines())
    assert "RUNNING" not in done.stdout + done.stderr


BENCH_SCRIPT = """
import logging, sys, time
from medallion_dq.tools import console

updates = logging.getLogger(console.UPDATES)
with console.opened(update_lines=None), console.waiting("bench"):
    console.step("== cost of expectations")
    console.step("   repeat 1/3: a=1.0s  b'=1.4s")
    time.sleep(1.2)
    with console.waiting("nested: no second status"):
        updates.info("[bench] update u1: 1 pipeline file")
        updates.debug("[bench] silver_orders: RUNNING")
        time.sleep(1.2)
        updates.info("[bench] silver_orders: COMPLETED")
    console.result("| rows | a s |")
"""


def test_bench_says_its_steps_and_updates_live_and_keeps_stdout_for_results():
    """`nox -s bench`'s way (benchmarks/progress.py): its sections and repeats are the status's
    detail and stderr lines, the engine's update lines feed the status alone, and stdout holds
    the results only."""
    seen = terminal.run([sys.executable, "-c", BENCH_SCRIPT], stdout_pipe=True)
    assert seen.returncode == 0, seen.raw
    assert seen.stdout.splitlines() == ["| rows | a s |"]
    raw = terminal.plain(seen.raw)
    assert "bench (1 s): repeat 1/3: a=1.0s  b'=1.4s" in raw
    assert "bench (2 s): update bench: 0 dataset(s) done; running silver_orders" in raw
    assert "== cost of expectations" in raw  # a line of its own, above the status
    assert "nested" not in raw
