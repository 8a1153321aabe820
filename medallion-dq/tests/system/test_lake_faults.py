"""A local lake whose updates end badly: interrupted, killed, on a full disk, its tables damaged;
each put back, refused with the fix, or rebuilt.

The CLI runs in a copy of the sample project, as a team runs it, on a lake of this module's own
(the faults leave it as no other test expects): its lake is `.local/lake/dev/`, read here by
path from the test's own Spark session.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakes import GOLD, cli, gold_rows, lake_after_a_job, table_path, versions
from sample import sample_project

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The sample project after a job on the first day, the second day's validation and a
    publish: both days in every table (201 orders landed, 188 in silver and gold)."""
    root = lake_after_a_job(tmp_path_factory.mktemp("lake") / "project", "11-01")
    (second,) = (root / "fixtures" / "landing" / "orders").glob("*-11-04.*")
    (root / "deliveries" / "orders" / second.name).write_bytes(second.read_bytes())
    for args in (
        ["--pipeline", "validation", "--landing", "deliveries"],
        ["--pipeline", "publish"],
    ):
        done = cli(root, "run", *args)
        assert done.returncode == 0, done.stdout + done.stderr
    yield root
    stopped = cli(root, "spark", "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def interrupt(project, send, *args, after=0.5, pipeline=None):
    """Start `run *args`, call send(process) `after` seconds into its first update (of
    `pipeline`, e.g. "acme_orders_publish", when given), or once `after()` is true; return
    (exit code, output)."""
    cli_process = subprocess.Popen(
        [sys.executable, "-m", "medallion_dq", "run", *args],
        cwd=project,
        # A crash of the process (once: SIGSEGV, exit -11, during a put-back) shows where.
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    updates = project / ".local" / "lake" / "dev" / "updates"
    deadline = time.monotonic() + 600
    while (
        not [  # the update has begun
            journal
            for journal in updates.glob("*/journal.json")
            if pipeline in (None, json.loads(journal.read_text())["pipeline"])
        ]
    ):
        assert cli_process.poll() is None, cli_process.communicate()[0]
        assert time.monotonic() < deadline, "the update did not begin"
        time.sleep(0.1)
    while callable(after) and not after():
        assert cli_process.poll() is None, cli_process.communicate()[0]
        time.sleep(0.02)
    time.sleep(0 if callable(after) else after)
    send(cli_process)
    output, _ = cli_process.communicate(timeout=300)
    return cli_process.returncode, output


def interrupt_publish(project, send, job=False, mid_write=False):
    """A publish update, alone or the job's, interrupted half a second in (on the lake's warm
    server a whole publish takes a few seconds), or `mid_write`: once the engine has emptied
    every gold view (two commits each) and is computing their rows."""
    args = ("--job", "medallion", "--landing", "deliveries", "--allow-empty")
    args = args if job else ("--pipeline", "publish")
    logs = [Path(table_path(project, name)) / "_delta_log" for name in GOLD]
    commits = {log: len(list(log.glob("*.json"))) for log in logs}

    def written() -> bool:
        return all(len(list(log.glob("*.json"))) >= n + 2 for log, n in commits.items())

    return interrupt(
        project, send, *args, after=written if mid_write else 0.5, pipeline="acme_orders_publish"
    )


def test_a_canceled_full_refresh_is_finished_by_the_next_run(project, spark):
    """Ctrl-C early in a full refresh: the engine had started the streams' checkpoints again
    but not yet emptied their tables. The next run then read every landing file again (188
    duplicate orders, the gold uniqueness check failed), and the canceled update went on
    writing on the lake's warm server after its process had gone."""
    args = ["--pipeline", "validation", "--landing", "deliveries", "--full-refresh"]
    returncode, output = interrupt(project, lambda p: os.killpg(p.pid, signal.SIGINT), *args)
    assert returncode == 130, output
    assert "its full refresh did not finish: its next update is a full refresh too" in output
    tables = ["bronze_orders", "silver_orders", "silver_customers"]
    history = {
        name: spark.sql(f"DESCRIBE HISTORY delta.`{table_path(project, name)}`") for name in tables
    }
    now = {name: frame.count() for name, frame in history.items()}
    time.sleep(3)  # the engine stopped with the update: nothing more is written
    assert {name: frame.count() for name, frame in history.items()} == now
    done = cli(project, "run", "--pipeline", "validation", "--landing", "deliveries")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "its last full refresh did not finish: this update is a full refresh too" in done.stdout
    bronze = spark.read.format("delta").load(table_path(project, "bronze_orders"))
    assert bronze.count() == 201
    silver = spark.read.format("delta").load(table_path(project, "silver_orders"))
    assert silver.count() == silver.select("order_id").distinct().count() == 188
    # Completed: nothing is left that would make the next run a full refresh.
    assert not list((project / ".local" / "lake" / "dev" / "updates").glob("*.full-refresh"))


@pytest.mark.parametrize(
    ("how", "code", "job", "mid_write"),
    [
        (lambda p: os.killpg(p.pid, signal.SIGINT), 130, True, False),  # Ctrl-C in a terminal
        (lambda p: p.send_signal(signal.SIGTERM), 143, False, False),  # kill, CI's cancel
        # The canceled flows go on with the jobs they start after the cancel, and commit: the
        # put-back waits for them (before, RESTORE met their commit, or could have preceded it).
        (lambda p: os.killpg(p.pid, signal.SIGINT), 130, False, True),
    ],
    ids=["SIGINT-job", "SIGTERM", "SIGINT-mid-write"],
)
def test_interrupted_publish_leaves_every_gold_table_as_it_was(
    project, spark, how, code, job, mid_write
):
    before_versions = versions(spark, project)
    before = gold_rows(spark, project)
    returncode, output = interrupt_publish(project, how, job, mid_write)
    assert returncode == code, output
    assert "could not put back" not in output, output
    said = signal.Signals(code - 128).name  # at once: the put-back takes a few seconds
    assert f"{said}: canceling; tables are put back once its flows stop" in output
    if mid_write:  # nothing of the canceled update is written after its process ends
        put_back = versions(spark, project)
        time.sleep(3)
        assert versions(spark, project) == put_back
    if job:  # its gate had passed the rows: the way to publish them is said
        assert "job medallion: CANCELED by SIGINT; " in output
        assert output.rstrip().endswith(
            "; the rows its quality gate passed are not published: `medallion-dq run --job"
            " medallion` judges them again and publishes them"
        )
    else:
        assert f"pipeline publish: CANCELED by {signal.Signals(code - 128).name}" in output
    assert "Traceback" not in output and "at org.apache" not in output, output
    assert gold_rows(spark, project) == before == gold_rows(spark, project, before_versions)
    assert not list((project / ".local" / "lake" / "dev" / "updates").glob("*/journal.json"))


def test_killed_publish_is_put_back_by_the_next_run(project, spark):
    before = gold_rows(spark, project)
    returncode, output = interrupt_publish(project, lambda p: os.killpg(p.pid, signal.SIGKILL))
    assert returncode == -signal.SIGKILL
    (journal,) = (project / ".local" / "lake" / "dev" / "updates").glob("*/journal.json")
    checked = cli(project, "lake", "check")  # the tables are sound, the update not put back
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        f"acme_orders_publish: update {journal.parent.name} has not finished: a run is still on"
        " it, or it ended mid-update and the next run on this lake puts its tables back"
    ) in checked.stdout
    # The next run (a validation update, nothing new) puts the killed update back first.
    done = cli(project, "run", "--pipeline", "validation", "--landing", "deliveries")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "did not finish (its process ended): put back" in done.stdout
    assert "silver_orders: no new rows, so its rules judged none (--full-refresh" in done.stdout
    assert gold_rows(spark, project) == before


def without_checkpoints(project, table):
    """Remove the table's checkpoints (Delta writes one every 100 commits here): its log then
    needs every commit from 0."""
    folder = Path(table_path(project, table)) / "_delta_log"
    for checkpoint in [*folder.glob("*.checkpoint*"), *folder.glob("*_last_checkpoint*")]:
        checkpoint.unlink(missing_ok=True)  # with their checksum files (.….crc)


def damage(project):
    """A missing Delta commit (silver_orders) and a truncated data file (bronze_orders)."""
    without_checkpoints(project, "silver_orders")
    folder = Path(table_path(project, "silver_orders")) / "_delta_log"
    log = sorted(folder.glob("*.json"))
    log[-2].unlink()
    # The newest file: one of the current version (an older one may be a full refresh's past).
    data = max(Path(table_path(project, "bronze_orders")).glob("*.parquet"), key=os.path.getmtime)
    data.write_bytes(data.read_bytes()[:100])
    return log[-2].name


def test_a_file_listed_in_the_tables_checkpoint_alone_is_checked_too(tmp_path, spark):
    """Delta writes a checkpoint every `delta.checkpointInterval` commits (the local lake's
    tables: 100) and `run` reads the log from the latest one: a truncated file that only the
    checkpoint lists is found."""
    from medallion_dq.local import delta_log

    folder = tmp_path / "events"
    spark.sql(
        f"CREATE TABLE delta.`{folder}` (day INT, at TIMESTAMP) USING delta"
        " TBLPROPERTIES ('delta.checkpointInterval' = '10')"
    )
    for day in range(1, 12):  # versions 1-11: a checkpoint at 10
        frame = spark.sql(f"SELECT {day} AS day, TIMESTAMP'2026-11-{day:02d} 10:00' AS at")
        frame.write.format("delta").mode("append").save(str(folder))
    assert (folder / "_delta_log" / f"{10:020d}.checkpoint.parquet").is_file()
    assert delta_log.damage(folder) is None
    first = min(folder.glob("*.parquet"), key=os.path.getmtime)  # the first append's
    size = first.stat().st_size
    first.write_bytes(first.read_bytes()[:100])
    assert delta_log.damage(folder) == (
        f"data file {first.name} is 100 bytes, its commit says {size:,} (truncated?)"
    )


def test_damaged_tables_are_named_and_rebuilt_by_a_full_refresh(project, spark):
    """A missing commit, a truncated parquet file: once a 38-line traceback naming no table,
    from --full-refresh too, and validation appended to the broken table before the gate
    crashed."""
    missing = damage(project)
    done = cli(project, "run", "--job", "medallion", "--landing", "deliveries")
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [
        "error: RUN017 table acme_orders.bronze_orders: damaged: data file "
        + errors[0].split("data file ")[1],
        f"error: RUN017 table acme_orders.silver_orders: damaged: version {int(missing[:20])} of "
        f"its Delta log is missing ({missing}); fix: --full-refresh --pipeline validation "
        "rebuilds it, --fresh runs in a new lake, `medallion-dq lake check` lists every damaged "
        "table of .local/lake/dev",
    ]
    assert "is 100 bytes, its commit says" in errors[0] and "Traceback" not in done.stderr
    checked = cli(project, "lake", "check")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert [ln.split(":")[0] for ln in checked.stdout.splitlines()[:2]] == [
        "acme_orders.bronze_orders",
        "acme_orders.silver_orders",
    ]
    assert "2 of 10 table(s) of .local/lake/dev damaged" in checked.stdout
    # A full refresh of the pipeline writing them removes and rebuilds them.
    done = cli(
        project, "run", "--pipeline", "validation", "--landing", "deliveries", "--full-refresh"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "acme_orders.silver_orders: damaged (" in done.stdout
    assert cli(project, "lake", "check").returncode == 0
    silver = spark.read.format("delta").load(table_path(project, "silver_orders"))
    assert silver.count() == silver.select("order_id").distinct().count() > 0


def lose_last_commit(project, table, *, checksums_left):
    """Delete the table's latest commit (with ``checksums_left``, not its checksum files: the
    issue's case), or its commits back to its last micro-batch, checksums and all. Return the
    first version lost."""
    commits = sorted((Path(table_path(project, table)) / "_delta_log").glob("*.json"))
    if not checksums_left:  # back to the last micro-batch its flow's checkpoint recorded
        commits = commits[max(i for i, c in enumerate(commits) if '"txn"' in c.read_text()) :]
    else:
        commits = commits[-1:]
    for commit in commits:
        commit.unlink()
        if not checksums_left:
            for crc in (f".{commit.name}.crc", f"{commit.stem}.crc", f".{commit.stem}.crc.crc"):
                (commit.parent / crc).unlink(missing_ok=True)
    return int(commits[0].stem)


def test_half_written_tables_are_named_refused_and_rebuilt(project, spark):
    """Ways a local table is left half-written, one a table. Before: a lost last commit whose
    checksum files were left made the run fail inside the engine on a Hadoop "Checksum error",
    and --full-refresh too (the lake was stuck); so did a log file that disagrees with its
    checksum; a data file that does made the gate end in a traceback; a table folder without
    its _delta_log failed the update (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION); a lost
    commit without its checksums went unsaid, and the flow's checkpoint made the next update
    skip the lost rows for good."""
    tables = ["bronze_customers", "bronze_orders", "gold_daily_revenue", "gold_order_keys"]
    tables += ["silver_customers", "silver_orders", "silver_orders_quarantine"]
    rows = {
        name: spark.read.format("delta").load(table_path(project, name)).count() for name in tables
    }
    # Delta reads a version a checkpoint holds from the checkpoint, not from its commit: after
    # the updates before this test, a damaged latest commit may be one no reader reads (in CI,
    # three of these were). Without checkpoints every commit is read, the damaged one too.
    for name in ("bronze_customers", "gold_daily_revenue", "gold_order_keys", "silver_customers"):
        without_checkpoints(project, name)
    lost = lose_last_commit(project, "silver_customers", checksums_left=True)
    lose_last_commit(project, "silver_orders_quarantine", checksums_left=False)
    log = Path(table_path(project, "bronze_customers")) / "_delta_log"
    empty = max(log.glob("*.json"))
    empty.write_bytes(b"")
    (log / f".{empty.name}.crc").unlink()
    changed = max((Path(table_path(project, "gold_daily_revenue")) / "_delta_log").glob("*.json"))
    text = changed.read_text()
    changed.write_text(text.replace('"timestamp":1', '"timestamp":2', 1))  # its size kept
    assert changed.read_text() != text
    lose_last_commit(project, "gold_order_keys", checksums_left=True)
    shutil.rmtree(Path(table_path(project, "bronze_orders")) / "_delta_log")
    # The newest file: one of the current version (as in `damage` above).
    data = max(Path(table_path(project, "silver_orders")).glob("*.parquet"), key=os.path.getmtime)
    crc = data.with_name(f".{data.name}.crc")
    crc.write_bytes(crc.read_bytes()[:-1] + bytes([crc.read_bytes()[-1] ^ 0xFF]))
    why = {
        "bronze_customers": f"commit {int(empty.stem)} of its Delta log is empty ({empty.name})",
        "bronze_orders": "its Delta log (_delta_log) is missing, its data files are left",
        "gold_daily_revenue": (
            f"{changed.name} of its Delta log disagrees with its checksum .{changed.name}.crc"
        ),
        "gold_order_keys": "its latest commit, version ",
        "silver_customers": (
            f"its latest commit, version {lost} ({lost:020d}.json), is missing and its checksum "
            "files are left behind ("
        ),
        "silver_orders": f"data file {data.name} disagrees with its checksum file (.crc)",
        "silver_orders_quarantine": (
            "its flow silver_orders_quarantine's streaming checkpoint says micro-batch "
        ),
    }
    checked = cli(project, "lake", "check")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert len(lines) == 8 and "7 of 10 table(s) of .local/lake/dev damaged" in lines[-1], (
        "\n".join(lines)
    )
    for line, (table, start) in zip(lines, why.items(), strict=False):
        assert line.startswith(f"acme_orders.{table}: damaged: {start}"), line
    # A plain run is refused before Spark starts, one line a table with the fix.
    done = cli(project, "run", "--job", "medallion", "--landing", "deliveries")
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert [ln.split(": damaged: ")[0] for ln in errors] == [
        f"error: RUN017 table acme_orders.{table}" for table in why
    ]
    fix = "rebuilds it, --fresh runs in a new lake, `medallion-dq lake check` lists every damaged"
    assert all(ln.endswith(f"{fix} table of .local/lake/dev") for ln in errors), errors
    assert "--full-refresh --pipeline publish rebuilds it" in errors[2]
    assert "ready in" not in done.stdout and "Traceback" not in done.stderr
    # A full refresh of the job removes them with their flows' checkpoints and rebuilds them.
    args = ("--landing", "deliveries", "--allow-empty")
    done = cli(project, "run", "--job", "medallion", "--full-refresh", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    rebuilt = [ln.split(":")[0] for ln in done.stdout.splitlines() if ": damaged (" in ln]
    assert rebuilt == [f"acme_orders.{table}" for table in why]
    assert cli(project, "lake", "check").returncode == 0
    after = {
        name: spark.read.format("delta").load(table_path(project, name)).count() for name in tables
    }
    assert after == rows
    done = cli(project, "run", "--job", "medallion", *args)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_put_back_that_fails_is_said_and_tried_again(project):
    """An update whose tables could not be put back (here: a RESTORE to a version that is not
    there; on a full disk RESTORE cannot write) was a 55-line traceback."""
    updates = project / ".local" / "lake" / "dev" / "updates" / "left-behind"
    updates.mkdir(parents=True)
    journal = {
        "pipeline": "acme_orders_publish",
        "update_id": "left-behind",
        "tables": {"gold_daily_revenue": "acme_orders.gold_daily_revenue"},
        "kinds": {"gold_daily_revenue": "MaterializedView"},
        "versions": {"gold_daily_revenue": 999},
        "storage": str(project / ".local" / "lake" / "dev" / "storage" / "acme_orders_publish"),
        "folder": str(updates),
    }
    (updates / "journal.json").write_text(json.dumps(journal))
    summary = project / "put-back.json"
    done = cli(project, "run", "--pipeline", "publish", "--json", summary)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "could not put back" in ln]
    assert line.startswith("pipeline publish: FAILED: could not put back gold_daily_revenue: ")
    assert line.endswith("; the next run will try again")
    assert "could not put back gold_daily_revenue" in json.loads(summary.read_text())["error"]
    assert (updates / "journal.json").exists()  # kept for the next run
    journal["versions"]["gold_daily_revenue"] = 0  # now it can be put back
    (updates / "journal.json").write_text(json.dumps(journal))
    done = cli(project, "run", "--pipeline", "publish")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "update left-behind did not finish (its process ended): put back" in done.stdout
    assert not updates.exists()


def test_an_empty_delivery_stops_at_the_gate_and_allow_empty_passes_it(project):
    """No new landing file since the last publish: the gate fails the job and gold is not
    refreshed (a day without orders is a failure, CONVENTIONS.md); `run --allow-empty` (README,
    CONVENTIONS.md), once rejected as an unknown option, passes it. The publish before this
    test took every row the gate had not judged."""
    summary = project / "empty.json"
    done = cli(project, "run", "--job", "medallion", "--landing", "deliveries", "--json", summary)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "silver_orders: 0 input records: an empty delivery (no new landing files?)" in (
        done.stdout
    )
    tasks = json.loads(summary.read_text())["tasks"]
    assert (tasks["quality_gate"]["status"], tasks["publish"]["status"]) == ("FAILED", "SKIPPED")
    assert (
        "no rows arrived for silver_orders since the last publish: land the next delivery, or run "
        "again with --allow-empty where a day without data is normal"
    ) in tasks["quality_gate"]["message"]
    args = ("--landing", "deliveries", "--allow-empty", "--json", summary)
    done = cli(project, "run", "--job", "medallion", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "silver_orders: 0 input records" in done.stdout
    tasks = json.loads(summary.read_text())["tasks"]
    assert (tasks["quality_gate"]["status"], tasks["publish"]["status"]) == ("SUCCESS", "SUCCESS")


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (needs root)")
def test_a_full_disk_ends_in_one_line_and_the_next_run_recovers(tmp_path, spark):
    """The lake on a 16 MB tmpfs, filled but for 1 MB, then a delivery of 8 MB: once a 55-line
    traceback, `"error": null` in --json and 44 MB of files no table used. The delivery is
    1,000 orders of 8 kB each: its bytes fill the disk, and few rows keep the runs short."""
    from medallion_dq.local import delta_log, lake

    root = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(root)], check=True)
    disk = root / ".local" / "lake" / "dev"
    disk.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    try:
        first = cli(root, "run", "--pipeline", "validation")
        assert first.returncode == 0, first.stdout + first.stderr
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * (free - 1_000_000))
        rows = [
            {
                "order_id": f"O-{900000 + i}",
                "customer_id": "C-0001",
                "order_ts": "2026-11-05T10:00:00",
                "channel": "web",
                "currency": "EUR",
                "amount": "10.00",
                "quantity": "1",
                "note": os.urandom(4_000).hex(),
            }
            for i in range(1_000)
        ]
        big = root / "fixtures" / "landing" / "orders" / "orders-2026-11-05.json"
        big.write_text("".join(json.dumps(r) + "\n" for r in rows))
        started = time.time()
        summary = tmp_path / "full.json"
        done = cli(root, "run", "--pipeline", "validation", "--json", summary)
        assert done.returncode == 1, done.stdout + done.stderr
        output = done.stdout + done.stderr
        assert "Traceback" not in output and "at org.apache" not in output, output
        assert "No space left on device" in output
        # One line, from the update or, if the event log could not be written either, the CLI.
        (line,) = [ln for ln in output.splitlines() if "could not be written" in ln]
        assert "the lake" in line and "MB free on its disk" in line, line
        error = json.dumps(json.loads(summary.read_text())["error"])
        assert "could not be written" in error and "MB free on its disk" in error
        # Nothing the failed update wrote is left that no table uses.
        for name, folder in delta_log.tables(disk / "warehouse").items():
            assert lake.untracked_files(folder, started) == [], name
        (disk / "filler").unlink()
        done = cli(root, "run", "--pipeline", "validation", "--json", summary)
        assert done.returncode == 0, done.stdout + done.stderr
        # Every order once: the two fixture days (201 records) and the 1,000 new ones.
        bronze = str(disk / "warehouse" / "acme_orders.db" / "bronze_orders")
        assert spark.read.format("delta").load(bronze).count() == 201 + 1_000
        assert cli(root, "lake", "check").returncode == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
