"""`medallion-dq upgrade` on a project baked at the previous release (0.5.0), its lake lived in:
a delivery run by 0.5.0's own engine (its tables, checkpoints and event log), the upgrade, a second
delivery run by this one; `check` passes and no row is lost.

Its own Spark servers, two: 0.5.0's engine (installed from that commit into a venv of its own
with uv, about 2 s from uv's cache) starts the lake's server for the first run, and this
version's engine starts its own for the second (a server is shared only by one version: its
plugins jar differs). This version cannot run the 0.5 project before the upgrade: `run` refuses
it (DQC016), which is what the upgrade is for.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sample import TEMPLATE, bake_release, previous_release

PYSPARK_WHEELS = Path.home() / ".cache" / "medallion-dq" / "wheels"  # noxfile: pyspark_wheel

pytestmark = pytest.mark.spark


def old_engine(release: Path, venv: Path) -> Path:
    """A venv with 0.5.0's medallion-dq[local]; its python."""
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH: the test installs medallion-dq 0.5.0 with it"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    links = ["--find-links", str(PYSPARK_WHEELS)] if PYSPARK_WHEELS.is_dir() else []
    requirement = f"medallion-dq[local] @ {(release / 'medallion-dq').as_uri()}"
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), *links, requirement], check=True
    )
    return python


def cli(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess:
    """A command of the engine of `python`, the project's package importable (and no other)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(project / "src"), "DQ_SERVER_IDLE_TIMEOUT": "120"}
    return subprocess.run(
        [str(python), "-m", "medallion_dq", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def delivered(python: Path, project: Path, name: str) -> dict:
    """One job run on deliveries/ (the files not read yet), its summary's rows per dataset."""
    summary = project / f"{name}.json"
    done = cli(python, project, "run", "--job", "medallion", "--landing", "deliveries",
               "--json", str(summary))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = json.loads(summary.read_text(encoding="utf-8"))["tasks"]
    rows = {}
    for task in ("validate", "publish"):
        for dataset, said in tasks[task]["update"]["datasets"].items():
            rows[dataset] = said["output_rows"]
            for rule in said.get("expectations") or []:  # "silver_orders.whole_record": 1
                rows[f"{dataset}.{rule['name']}"] = rule["failed_records"]
    return rows


# A record bronze cannot parse, by format: a JSON line cut short, a CSV line with fields missing.
CUT_SHORT = {".json": '{"order_id": "O-999998", "amount": \n', ".csv": "O-999998,C-0001\n"}


def delivery(project: Path, days: int, *, cut_short: bool = False) -> None:
    """orders-2026-11-01's records as new orders `days` later: other ids, other days (its
    volume passes the gate; the sample's 11-04 alone does not)."""
    (source,) = (project / "fixtures" / "landing" / "orders").glob("orders-2026-11-01.*")
    text = re.sub(r"\bO-000", f"O-{days}00", source.read_text(encoding="utf-8"))
    text = re.sub(r"2026-11-0(\d)", lambda m: f"2026-11-0{int(m[1]) + days}", text)
    text += CUT_SHORT[source.suffix] if cut_short else ""
    name = f"orders-2026-11-0{1 + days}{source.suffix}"
    (project / "deliveries" / "orders" / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """The 0.5 project after a delivery by 0.5.0's engine; (project, rows per delivery)."""
    root = tmp_path_factory.mktemp("upgrade")
    release = previous_release(root / "0.5.0")
    project = bake_release(release, root / "bake")
    python = old_engine(release, root / "venv-0.5")
    landing = project / "fixtures" / "landing"
    deliveries = project / "deliveries"
    (deliveries / "orders").mkdir(parents=True)
    shutil.copytree(landing / "customers", deliveries / "customers")
    (first,) = (landing / "orders").glob("orders-2026-11-01.*")
    shutil.copy(first, deliveries / "orders")
    rows = [delivered(python, project, "first")]
    cli(python, project, "spark", "stop")
    yield project, rows
    cli(Path(sys.executable), project, "spark", "stop")


def test_a_05_project_runs_after_the_upgrade_and_keeps_every_row(lake):
    project, rows = lake
    refused = cli(
        Path(sys.executable), project, "run", "--job", "medallion", "--landing", "deliveries"
    )
    assert refused.returncode == 2 and "DQC016" in refused.stderr  # why the upgrade is needed
    here = str(TEMPLATE / "medallion-dq")
    dry = cli(Path(sys.executable), project, "upgrade", "--dry-run", "--path", here)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1].endswith("change(s), nothing written")
    assert "medallion-dq-dev" not in (project / "pyproject.toml").read_text(encoding="utf-8")
    done = cli(Path(sys.executable), project, "upgrade", "--path", here)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:-1] == dry.stdout.splitlines()[:-1]  # as the dry run said
    assert "rule whole_record (drop) added" in done.stdout
    checked = cli(Path(sys.executable), project, "check")
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.splitlines()[-1] == "check: 0 error(s), 0 warning(s)"
    delivery(project, 4, cut_short=True)
    rows.append(delivered(Path(sys.executable), project, "second"))
    for one in rows:  # every order bronze read is in silver or in its quarantine
        assert one["silver_orders"] + one["silver_orders_quarantine"] == one["bronze_orders"] > 0
    assert rows[1]["bronze_orders"] == rows[0]["bronze_orders"] + 1  # and the one cut short
    assert rows[1]["silver_orders.whole_record"] == 1  # the record cut short, quarantined
    gold = [
        sum(n for name, n in one.items() if name.startswith("gold_") and "." not in name)
        for one in rows
    ]
    assert gold[0] < gold[1], gold
    again = cli(Path(sys.executable), project, "upgrade")
    assert again.stdout.endswith("nothing to change\n"), again.stdout + again.stderr
