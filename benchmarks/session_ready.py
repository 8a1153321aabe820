"""How long a test process waits for its Spark session, each measured in a new process as a
pytest run would be: cold (no server runs, so it starts the project's shared server), warm (it
connects to that server), and with reuse off (DQ_REUSE=0: a server of its own, as before)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from progress import say

CLIENT = """
import json, sys, time
started = time.perf_counter()
from pathlib import Path
from medallion_dq.local import spark
import pyspark.sql.connect.session  # what any Spark Connect program imports
imported = time.perf_counter()
local = spark.start("embedded", reuse=Path(sys.argv[1]))
local.spark.sql("SELECT 1").collect()
ready = time.perf_counter()
print(json.dumps({"imports": imported - started, "ready": ready - imported}))
local.stop()
"""


def _client(root: Path, **env: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, str(root)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the session client failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def stop_all(root: Path) -> None:
    from medallion_dq.local import server

    for folder, _ in server.servers(root):
        server.stop(folder)


def measure(root: Path, repeats: int = 3) -> dict:
    """Seconds from `spark.start` to a first answer (imports apart), cold, warm and unshared."""
    say("\n== Spark session of a test process: cold, warm, reuse off")
    stop_all(root)
    try:
        cold = _client(root, DQ_REUSE="1")
        warm = [_client(root, DQ_REUSE="1") for _ in range(repeats)]
    finally:
        stop_all(root)
    own = _client(root, DQ_REUSE="0")
    out = {
        "cold": round(cold["ready"], 2),
        "warm": round(statistics.median(w["ready"] for w in warm), 2),
        "warm_runs": [round(w["ready"], 2) for w in warm],
        "reuse_off": round(own["ready"], 2),
        "imports": round(statistics.median(w["imports"] for w in [cold, *warm, own]), 2),
    }
    say(
        f"   cold {out['cold']} s, warm {out['warm']} s (runs {out['warm_runs']}), "
        f"reuse off {out['reuse_off']} s; imports {out['imports']} s each"
    )
    return out


def markdown(ready: dict) -> list[str]:
    intro = (
        "Seconds from `spark.start` to the answer of a first query, each in a new process as a"
        " pytest run (imports apart: pyspark's Spark Connect client took "
        f"{ready['imports']} s, median, as in any program that uses it):"
    )
    return [
        "## A test process's Spark session",
        "",
        intro,
        "",
        "| server | ready s |",
        "|---|---:|",
        f"| cold: none runs, the process starts the project's shared server | {ready['cold']} |",
        f"| warm: the shared server runs (median of {len(ready['warm_runs'])}) | {ready['warm']} |",
        f"| reuse off (`DQ_REUSE=0`): a server of its own | {ready['reuse_off']} |",
        "",
    ]
