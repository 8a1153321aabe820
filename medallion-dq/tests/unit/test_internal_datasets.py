"""The local engine's own datasets (AUTO CDC's events and kept snapshots, a backfill's rows, a SQL
file's source view): one predicate names them all, and `lake check` hides them as Databricks,
which has none of them, would (the runner's result and event log: tests/engine/test_auto_cdc.py).
"""

import json
import shutil
import subprocess
import sys

import pytest

from medallion_dq.local import auto_cdc, internal_dataset, lakeflow_params, snapshots, sql_files
from sample import sample_project


def test_every_name_the_engine_makes_for_itself_is_internal_and_no_dataset_is():
    made = [
        auto_cdc.events_table("`users feed`", "s.users_current"),
        snapshots.table("users_current", "s"),
        lakeflow_params.once_table("s.target", "backfill"),
        sql_files.SOURCE_VIEW,
        "`s`.`__DQ_cdc_events_x`",
    ]
    assert [name for name in made if not internal_dataset(name)] == []
    datasets = ["users", "dq_users", "s.users__dq_", "_dq_quarantine", "s.__dqx"]
    assert [name for name in datasets if internal_dataset(name)] == []


def test_registering_a_dataset_as_the_engines_own_needs_its_prefix():
    with pytest.raises(ValueError, match="starts with __dq_: users"):
        lakeflow_params.register_internal(None, None, "users", "", None, None)


def commit(table, version: int = 0) -> None:
    """An empty Delta table's first commit: its protocol and schema, no data file."""
    log = table / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True}]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "x",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
            }
        },
    ]
    (log / f"{version:020d}.json").write_text("\n".join(map(json.dumps, actions)) + "\n")


def test_lake_check_counts_the_datasets_and_names_only_a_damaged_internal_table(tmp_path):
    """A sound events table is left out of the count; a damaged one of the engine's is named,
    since the next update would fail on it."""
    root = tmp_path / "project"
    shutil.copytree(sample_project(), root, ignore=shutil.ignore_patterns(".local"))
    warehouse = root / ".local" / "lake" / "dev" / "warehouse" / "acme.db"
    for name in ("silver_orders", "__dq_cdc_events_orders", "__dq_cdc_snapshots_customers"):
        commit(warehouse / name)

    def lake_check():
        return subprocess.run(
            [sys.executable, "-m", "medallion_dq", "lake", "check"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = lake_check()
    assert (done.returncode, done.stdout.strip()) == (
        0,
        "lake check: 1 table(s) of .local/lake/dev, all sound",
    ), done.stderr
    (warehouse / "__dq_once_backfill").mkdir()
    (warehouse / "__dq_once_backfill" / "part-0.parquet").write_bytes(b"x")  # no Delta log
    done = lake_check()
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        "acme.__dq_once_backfill: damaged: its Delta log (_delta_log) is missing, its data files"
        " are left"
    )
    assert "1 of 2 table(s)" in done.stdout
