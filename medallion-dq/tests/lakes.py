"""The lasting local lake of a copy of the sample project, as the CLI leaves it: runs in it, and
its tables read by path (Delta time travel) from a test's own Spark session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sample import sample_project

GOLD = ("gold_daily_revenue", "gold_order_keys", "gold_revenue_by_channel")


def cli(project, *args, timeout=900):
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=project,
        env={**os.environ, "DQ_SERVER_IDLE_TIMEOUT": "120"},  # a lake's server outlives no test
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def lake_server(project):
    """What the lake's warm server wrote about itself (server.json)."""
    (state,) = (project / ".local" / "lake" / "dev" / "server").glob("*/server.json")
    return json.loads(state.read_text())


def table_path(project, name):
    return str(project / ".local" / "lake" / "dev" / "warehouse" / "acme_orders.db" / name)


def gold_rows(spark, project, version=None):
    """Every gold table's rows, now or at a Delta version per table."""
    out = {}
    for name in GOLD:
        reader = spark.read.format("delta")
        if version:
            reader = reader.option("versionAsOf", version[name])
        out[name] = sorted(map(tuple, reader.load(table_path(project, name)).collect()), key=repr)
    return out


def versions(spark, project):
    return {
        name: spark.sql(f"DESCRIBE HISTORY delta.`{table_path(project, name)}` LIMIT 1").first()[
            "version"
        ]
        for name in GOLD
    }


def landed(root: Path, *days: str) -> Path:
    """A copy of the sample project at `root`, its orders of these days (e.g. "11-01") and its
    customers landed in deliveries/; its lake empty."""
    subprocess.run(["cp", "-r", str(sample_project()), str(root)], check=True)
    landing = root / "deliveries" / "orders"
    landing.mkdir(parents=True)
    for day in days:
        (fixture,) = (root / "fixtures" / "landing" / "orders").glob(f"*-{day}.*")
        (landing / fixture.name).write_bytes(fixture.read_bytes())
    # The customers, delivered once.
    shutil.copytree(root / "fixtures" / "landing" / "customers", root / "deliveries" / "customers")
    return root


def first_job(root: Path) -> Path:
    """One job run of the project at `root` on deliveries/ (the lake's server started)."""
    summary = root / "first.json"
    done = cli(root, "run", "--job", "medallion", "--landing", "deliveries", "--json", summary)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def lake_after_a_job(root: Path, *days: str) -> Path:
    """A copy of the sample project (`landed`) after one job run there (`first_job`)."""
    return first_job(landed(root, *days))
