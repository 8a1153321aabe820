"""Testing a project's layers on real local Spark, with assertions that speak data quality.

`Lake` is one test's slice of the lake (the `lake` fixture of the pytest plugin); the
`assert_*` helpers check what a user cares about: an update's status, exact per-rule failure
counts, which rows went to quarantine with which rules, and that no row was lost. A run
returns an `UpdateResult`: status, flows, per-dataset expectation metrics, the error.

`python -m medallion_dq.testing` builds pyspark's wheel once (a project's noxfile runs it with
medallion-dq alone installed, so the local engine is imported by `Lake`, not here).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import logging
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterable, Mapping
from importlib.metadata import requires
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_dq.project import settings
from medallion_dq.tools import console

if TYPE_CHECKING:
    from medallion_dq.local import UpdateResult
    from medallion_dq.project.pipelines import PipelineCode

log = logging.getLogger("medallion_dq.testing")  # also when run as __main__


class Lake:
    """One test's slice of the lake: a schema, a landing folder, and the bundle's pipelines and
    jobs, run in that schema. The project's files (bundle, settings, rule files) are read once,
    as a command reads them: a test that rewrites a rule file makes a new lake after it."""

    def __init__(self, local, root: Path):
        from medallion_dq.local import LocalProject

        self.id = uuid.uuid4().hex[:8]
        self.schema = f"test_{self.id}"
        self.landing = local.work_dir / "landing" / self.id
        self.landing.mkdir(parents=True)
        self.root = Path(root)
        # Every pipeline and job of the bundle runs in this test's schema.
        self.project = LocalProject(root, local, landing=self.landing, database=self.schema)
        self.spark = local.spark
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {self.schema}")
        configuration = self.project.bundle.pipelines["validation"].configuration
        self.file_format = configuration.get("medallion.source.file_format", "json")
        # Every source the pipelines read gets a landing folder, empty until a test lands files
        # there: a test about orders needs no customers, and a missing folder fails the update.
        for folder in self.project.manifest.code().landing_folders():
            (self.landing / folder).mkdir(parents=True, exist_ok=True)

    # -- inputs ---------------------------------------------------------------------------------
    def land(self, folder: str, name: str, rows: Iterable[Mapping[str, object]] | str) -> Path:
        """Write one landing file (rows as dicts, or raw text) in the project's source format."""
        path = self.landing / folder / f"{name}.{self.file_format}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(rows, str):
            path.write_text(rows)
        elif self.file_format == "csv":
            rows = list(rows)
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=sorted({k for r in rows for k in r}))
            writer.writeheader()
            writer.writerows([{k: ("" if v is None else v) for k, v in r.items()} for r in rows])
            path.write_text(out.getvalue())
        else:
            path.write_text(
                "".join(
                    json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows
                )
            )
        return path

    def land_fixtures(self, folder: str = "orders", source: Path | None = None) -> list[Path]:
        """Copy the project's sample landing files (fixtures/landing/<folder>), as they are: a
        source may land another format than the project's."""
        source = source or self.root / "fixtures" / "landing" / folder
        (self.landing / folder).mkdir(parents=True, exist_ok=True)
        return [
            Path(shutil.copyfile(file, self.landing / folder / file.name))
            for file in sorted(source.iterdir())
            if file.is_file()
        ]

    def seed(
        self, table: str, rows: list[Mapping[str, object]] | list[tuple], schema: str | None = None
    ) -> None:
        """Create `table` in this test's schema from rows, as an upstream layer would have."""
        df = (
            self.spark.createDataFrame(rows, schema) if schema else self.spark.createDataFrame(rows)
        )
        if "_corrupt_record" not in df.columns and self._marked(table):
            # Bronze as read_landing writes it (a seed written before silver read the mark).
            df = df.selectExpr("*", "CAST(NULL AS STRING) AS _corrupt_record")
        name = f"{self.schema}.{table}"
        if any(set(" ,;{}()\n\t=") & set(f.name) for f in df.schema.fields):
            # Delta keeps such a name only in a table that maps its columns by name.
            writer = df.writeTo(name).using("delta")
            writer.tableProperty("delta.columnMapping.mode", "name").createOrReplace()
        else:
            df.write.format("delta").mode("overwrite").saveAsTable(name)

    def _marked(self, table: str) -> bool:
        """Whether the project's bronze defines `table` with read_landing over JSON or CSV, which
        marks a record it could not parse in `_corrupt_record`."""
        return any(
            query.dataset == table and query.text_landing
            for file in self.project.manifest.folder_code.files
            for query in file.queries
        )

    # -- runs -----------------------------------------------------------------------------------
    def run(
        self,
        pipeline: str,
        layers: list[str] | None = None,
        *,
        datasets: list[str] | None = None,
        full_refresh: bool = False,
    ) -> UpdateResult:
        """Run bundle pipeline `pipeline` (only `layers`' files if given) in this test's schema.
        `datasets`: only the files defining these (or their `_quarantine`), so a test seeds the
        tables they read and no other source's."""
        spec = self.project.spec(
            pipeline, layers=layers, database=self.schema, name=f"{pipeline}-{self.id}"
        )
        if datasets is not None:
            from medallion_dq.local import internal_dataset

            if hidden := [d for d in datasets if internal_dataset(d)]:
                raise ValueError(
                    f"run(datasets=...): {', '.join(hidden)} is the local engine's own table,"
                    " not a dataset: name the dataset it serves"
                )
            code = self.project.project.pipeline_code(spec.libraries)
            spec.libraries = dataset_files(code, datasets)
        return self.project.runner.run(spec, full_refresh=full_refresh)

    def table(self, name: str):
        """Dataset `name` of this test's schema; the local engine's own tables are no dataset
        (Databricks has none of them): a test reads the AUTO CDC target, not its events."""
        from medallion_dq.local import internal_dataset

        if internal_dataset(name):
            raise ValueError(
                f"{name} is the local engine's own table, not a dataset of the pipeline:"
                " read the dataset it serves (the AUTO CDC target, the append flow's table)"
            )
        return self.spark.read.table(f"{self.schema}.{name}")

    def rows(self, name: str, key: str) -> dict:
        """Rows of a table by key, as dicts: easy to assert on. A date Python cannot hold (year
        12000) is ValueOutOfRange naming its column and value."""
        from medallion_dq.local import collected

        return {r[key]: r.asDict() for r in collected(self.table(name), name)}

    def version(self, name: str) -> int:
        return self.spark.sql(f"DESCRIBE HISTORY {self.schema}.{name} LIMIT 1").collect()[0][
            "version"
        ]


def dataset_files(code: PipelineCode, datasets: Iterable[str]) -> list[Path]:
    """The files of `code` defining `datasets` or their `_quarantine` (a dataset of any kind,
    named by `name=` or by its function), in the pipeline's order."""
    wanted = {*datasets, *(f"{d}_quarantine" for d in datasets)}
    return [f.path for f in code.files if {d.name for d in f.datasets} & wanted]


# -- assertions ---------------------------------------------------------------------------------
def assert_update_ok(result: UpdateResult) -> None:
    assert result.ok, (
        f"update of {result.pipeline} failed: {result.error.message if result.error else result.flows}"
    )


def assert_expectations(
    result: UpdateResult,
    dataset: str,
    failed: Mapping[str, int],
    *,
    input_records: int | None = None,
) -> None:
    """Failed record counts per expectation of `dataset` in this update, exactly."""
    assert dataset in result.metrics, (
        f"no expectation metrics for {dataset} in update {result.update_id} (flows: {result.flows})"
    )
    metrics = result.metrics[dataset]
    actual = {e["name"]: e["failed_records"] for e in metrics.expectations}
    wrong = {
        name: (count, actual.get(name))
        for name, count in failed.items()
        if actual.get(name) != count
    }
    assert not wrong, f"{dataset}: expectation failures (expected, actual): {wrong}; all: {actual}"
    if input_records is not None:
        assert metrics.input_records == input_records, (
            f"{dataset}: {metrics.input_records} input records, expected {input_records}"
        )


def assert_quarantined(
    quarantine_df, key: str, expected: Mapping[object, set[str] | list[str]]
) -> None:
    """Exactly these keys are quarantined, each with exactly these broken rules."""
    from medallion_dq.local import collected

    rows = collected(quarantine_df.select(key, "_dq_failed_rules"), "the quarantine")
    actual = {r[key]: set(r["_dq_failed_rules"]) for r in rows}
    expected = {k: set(v) for k, v in expected.items()}
    assert actual == expected, f"quarantine by {key}: expected {expected}, got {actual}"


def assert_nothing_lost(input_df, target_df, quarantine_df, key: str) -> None:
    """Every input row is in exactly one of target and quarantine: none lost, none in both."""
    from medallion_dq.local import collected

    inputs = [r[0] for r in collected(input_df.select(key), "the input")]
    kept = [r[0] for r in collected(target_df.select(key), "the target")]
    quarantined = [r[0] for r in collected(quarantine_df.select(key), "the quarantine")]
    assert len(kept) + len(quarantined) == len(inputs), (
        f"{len(inputs)} input rows, {len(kept)} kept + {len(quarantined)} quarantined"
    )
    both = set(kept) & set(quarantined) - {None}
    assert not both, f"rows both kept and quarantined: {sorted(both)[:10]}"
    assert sorted(map(str, kept + quarantined)) == sorted(map(str, inputs)), (
        "kept + quarantined rows differ from the input rows"
    )


# -- pyspark's wheel ------------------------------------------------------------------------------
def pyspark_wheel() -> Path:
    """The folder holding the wheel of the pyspark medallion-dq-dev[local] pins, built there once.

    PyPI has pyspark as a 1.4 GB source archive only, which uv would unpack for every new venv;
    installers find the wheel with `--find-links <folder>`. The folder is in medallion-dq's
    cache ($DQ_CACHE_DIR, for a CI that caches its workspace only)."""
    (pin,) = (
        match[1]
        for requirement in requires("medallion-dq-dev") or []
        if (match := re.match(r"pyspark(?:\[[^\]]*\])?==([\w.]+)", requirement))
    )
    wheels = settings.CACHE_DIR.get() / "wheels"
    if not list(wheels.glob(f"pyspark-{pin}-*.whl")):
        log.warning("building the pyspark %s wheel once into %s (about a minute)", pin, wheels)
        has_pip = importlib.util.find_spec("pip") is not None  # not in a venv uv made
        pip = [sys.executable, "-m", "pip"] if has_pip else ["uvx", "pip"]
        command = [*pip, "wheel", "--no-deps", "-w", str(wheels), f"pyspark=={pin}"]
        subprocess.run(command, check=True, stdout=sys.stderr)
    return wheels


if __name__ == "__main__":  # the folder, on stdout alone: a noxfile reads it
    console.result(str(pyspark_wheel()))
