"""Who holds the lake or a warm server, as the process turned away is told: the command (or a
pytest session) that holds it, by its record beside the lock, never a guess; a process that
died holding a lock holds nothing, and is never named. No Spark: the locks are files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from medallion_dq.local import lake, machine, server

HOLDER = """
import sys
from pathlib import Path
from medallion_dq.local import lake, machine, server
kind, folder, what = sys.argv[1:4]
named = machine.named(what) if what else None
if named is not None:
    named.__enter__()
if kind == "lake":
    held = lake.locked(Path(folder))
    held.__enter__()
elif kind == "cache":  # the cache's fetch lock, as the Delta jars' fetch holds it
    held = machine.exclusive(Path(folder) / "fetch.lock")
    machine.sign(held.__enter__())
else:
    lease = server.Lease(Path(folder))
print("holding", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def holders():
    """Start processes that hold a lock until the test ends (`hold(kind, folder, what)`)."""
    started: list[subprocess.Popen] = []

    def hold(kind: str, folder: Path, what: str = "") -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, kind, str(folder), what],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout.readline() == "holding\n"
        return process

    yield hold
    for process in started:
        if not process.stdin.closed:
            process.stdin.close()
        process.wait(timeout=30)


def test_a_second_run_on_the_lake_is_told_which_command_holds_it(tmp_path, holders):
    run = holders("lake", tmp_path, "`medallion-dq run`")
    with pytest.raises(lake.LakeBusy) as caught, lake.locked(tmp_path):
        pass
    assert str(caught.value) == (
        f"`medallion-dq run` (process {run.pid}) is using the lake {tmp_path}: wait for it to"
        " end, or use --fresh for a throwaway lake"
    )


def test_a_lake_lock_left_by_a_dead_process_holds_nothing(tmp_path, holders):
    """The file still names the process that died; its lock died with it."""
    dead = holders("lake", tmp_path, "`medallion-dq run`")
    dead.kill()
    dead.wait(timeout=30)
    assert f"{dead.pid} `medallion-dq run`" in (tmp_path / ".lock").read_text()
    with machine.named("`medallion-dq run`"), lake.locked(tmp_path):
        assert (tmp_path / ".lock").read_text() == f"{os.getpid()} `medallion-dq run`"


@pytest.mark.parametrize(
    "what, said",
    [
        ("`medallion-dq run`", "`medallion-dq run`"),
        ("`medallion-dq diff`", "`medallion-dq diff`"),
        ("`medallion-dq report`", "`medallion-dq report`"),
        ("a pytest session", "a pytest session"),
        ("", "a Python process"),  # a script that named nothing: `python -c`
    ],
)
def test_spark_stop_names_what_holds_the_server(tmp_path, holders, what, said):
    using = holders("lease", tmp_path, what)
    with pytest.raises(server.ServerInUse) as caught, server.unused(tmp_path):
        pass
    assert str(caught.value) == (
        f"the server is in use by {said} (pid {using.pid}); stop it after, or `medallion-dq"
        " spark stop --wait`"
    )


def test_every_holder_is_named_and_a_dead_ones_record_is_not(tmp_path, holders):
    run = holders("lease", tmp_path, "`medallion-dq run`")
    tests = holders("lease", tmp_path, "a pytest session")
    dead = holders("lease", tmp_path, "`medallion-dq diff`")
    dead.kill()  # killed holding its lease: its record stays behind
    dead.wait(timeout=30)
    assert len(list((tmp_path / server.LEASES).iterdir())) == 3
    said = server.lease_users(tmp_path).split(", ")
    assert sorted(said) == sorted(
        [f"`medallion-dq run` (pid {run.pid})", f"a pytest session (pid {tests.pid})"]
    )
    assert len(list((tmp_path / server.LEASES).iterdir())) == 2  # the dead one's removed


def test_a_released_lease_leaves_no_record_and_the_server_is_free(tmp_path):
    with machine.named("a pytest session"):
        lease = server.Lease(tmp_path)
    (record,) = (tmp_path / server.LEASES).iterdir()
    assert record.read_text() == "a pytest session"
    lease.release()
    assert list((tmp_path / server.LEASES).iterdir()) == []
    with server.unused(tmp_path):  # nobody holds it: no refusal
        pass


def test_the_command_line_names_itself_while_it_runs(tmp_path, monkeypatch):
    """What `medallion-dq <command>` records is its command, and only while it runs."""
    import dataclasses

    from medallion_dq.tools import cli

    seen = []
    status = dataclasses.replace(
        next(c for c in cli.COMMANDS if c.run is cli.cmd_spark),
        run=lambda args: seen.append(machine.activity()) or 0,
    )
    monkeypatch.setattr(
        cli, "COMMANDS", [status if c.run is cli.cmd_spark else c for c in cli.COMMANDS]
    )
    assert cli.main(["--root", str(tmp_path), "spark", "status"]) == 0
    assert seen == ["`medallion-dq spark status`"]
    assert machine.activity() != "`medallion-dq spark status`"


def test_a_wait_for_the_cache_names_what_is_fetching(tmp_path, holders, monkeypatch, caplog):
    """Two first starts at once: the one that waits for the Delta jars says for whom."""
    import logging
    import threading

    from medallion_dq.local import jars

    monkeypatch.setenv("DQ_CACHE_DIR", str(tmp_path))
    fetching = holders("cache", tmp_path, "`medallion-dq run`")
    threading.Timer(1.0, fetching.stdin.close).start()  # it ends its fetch a second later
    with caplog.at_level(logging.INFO), jars._cache_locked("fetch", "fetching the Delta jars"):
        pass
    assert (
        f"waiting for `medallion-dq run` (process {fetching.pid}) fetching the Delta jars into"
        f" {tmp_path}" in caplog.text
    )
