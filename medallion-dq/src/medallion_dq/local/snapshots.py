"""Databricks' AUTO CDC FROM SNAPSHOT (`create_auto_cdc_from_snapshot_flow`) for the local engine.

Each snapshot the flow reads is kept, with its version, in the Delta table
`__dq_cdc_snapshots_<target>` of the target's schema, written while the pipeline's files are
registered, before the update runs:

- `source` a function: it is called as Databricks calls it, with the last version kept (None at
  first and after a full refresh), again with each version it returns, until it returns None;
- `source` a table's name: one snapshot per update, its version the time the update read it.

The target is then computed by auto_cdc's SCD type 1 or 2 from change events that consecutive
snapshots make: every row of snapshot v is an upsert sequenced v (an unchanged row changes
nothing: SCD type 2 opens a version only when a tracked column changed), and a key of snapshot v
missing from the next snapshot w is a delete sequenced w. So __START_AT and __END_AT are snapshot
versions. Every snapshot is kept (what the target is computed from), so the table grows by a
snapshot per version read.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from medallion_dq.local.lakeflow_params import INTERNAL_PREFIX
from medallion_dq.local.lakeflow_params import LakeflowError as AutoCdcError

INTERNAL = INTERNAL_PREFIX + "cdc_"  # auto_cdc's: its columns and tables
VERSION, GONE, NEXT = (INTERNAL + n for n in ("version", "gone", "next"))
CALL = "create_auto_cdc_from_snapshot_flow"


def table(target: str, database: str | None) -> str:
    """Where the snapshots of `target`'s flow are kept."""
    *schema, name = target.split(".")
    schema = schema or ([database] if database else [])
    return ".".join([*schema, INTERNAL + "snapshots_" + re.sub(r"\W", "_", name.strip("`"))])


def store(spark, flow: Any, update: dict[str, Any]) -> str:
    """Keep the snapshots `flow.snapshots` gives since the last one kept; the table's name."""
    from pyspark.sql import functions as F

    kept = table(flow.target, update.get("database"))
    exists = spark.catalog.tableExists(kept)
    if exists and update.get("full_refresh"):  # every snapshot read again, from the first
        # Emptied by a write: a pipeline's files may not run DROP or DELETE statements.
        emptied = spark.read.table(kept).limit(0).write.format("delta").mode("overwrite")
        emptied.saveAsTable(kept)
    latest = spark.read.table(kept).agg(F.max(VERSION)).first()[0] if exists else None

    def append(df, version) -> None:
        writer = df.select("*", F.lit(version).alias(VERSION)).write.format("delta")
        writer.mode("append").option("mergeSchema", "true").saveAsTable(kept)

    if isinstance(flow.snapshots, str):
        append(spark.read.table(flow.snapshots), datetime.now(timezone.utc).replace(tzinfo=None))
        return kept
    while (found := flow.snapshots(latest)) is not None:
        if not (isinstance(found, tuple) and len(found) == 2):
            raise AutoCdcError(
                f"{CALL}: source must return (DataFrame, version) or None, got {found!r}"
            )
        df, version = found
        if version is None or (latest is not None and not version > latest):
            raise AutoCdcError(
                f"{CALL}: source returned version {version!r} after {latest!r}: each snapshot's"
                " version must be greater than the last one"
            )
        append(df, version)
        latest, exists = version, True
    if not exists:
        raise AutoCdcError(
            f"{CALL}: source {flow.source} gave no snapshot yet (it returned None for version"
            " None): the target is made from the first one"
        )
    return kept


def changes(snapshots, flow: Any):
    """The change events of the kept snapshots (see the module's doc), as auto_cdc reads them:
    every column of the source, VERSION (the sequence) and GONE (a delete)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keyed = [k.alias(f"{INTERNAL}k{i}") for i, k in enumerate(flow.keys)]
    keys = [f"{INTERNAL}k{i}" for i in range(len(flow.keys))]
    versions = snapshots.select(VERSION).distinct()
    following = versions.select(VERSION, F.lead(VERSION).over(Window.orderBy(VERSION)).alias(NEXT))
    present = snapshots.select(*keyed, F.col(VERSION).alias(NEXT))
    leaving = snapshots.join(following, on=VERSION).select("*", *keyed)
    gone = leaving.filter(F.col(NEXT).isNotNull()).join(present, on=[*keys, NEXT], how="left_anti")
    source_columns = f"`(?!{INTERNAL}).+`"
    deletes = gone.select(
        gone.colRegex(source_columns), F.col(NEXT).alias(VERSION), F.lit(True).alias(GONE)
    )
    upserts = snapshots.select(
        snapshots.colRegex(source_columns), VERSION, F.lit(False).alias(GONE)
    )
    return upserts.unionByName(deletes)
