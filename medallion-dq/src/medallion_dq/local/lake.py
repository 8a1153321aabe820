"""A local lake that lasts, and updates that are all-or-nothing whatever ends them.

`medallion-dq run` keeps one lake per project and bundle target, `.local/lake/<target>/`:
tables (the warehouse), streaming checkpoints (storage), the event log. As on Databricks'
dev target, tables persist between updates: a second run reads only new landing files, and
the publish pipeline reads what the validation pipeline wrote in an earlier run.

Open-source Spark's catalog lives in the server's memory, so a new server knows no table:
`register_tables` registers every Delta table found in the warehouse again, by location.

An update first writes a journal (`updates/<id>/journal.json`): each table's kind and Delta
version before the update (null when it did not exist). When the update fails, is interrupted or
its process dies, `put_back` returns every materialized view to that version and removes every
table the update created (with its checkpoint), and deletes the data files the update wrote that
no commit records (a commit that failed, e.g. on a full disk); the next run on the lake finds a
journal left behind by a killed process, or by a put-back that failed, and puts it back first.
A streaming table that existed keeps the micro-batches its flow committed: its checkpoint says
they were read, so they are neither lost nor read twice (rolling its data back alone would make
the next update skip them).

The lake also remembers the landing folder it was built from (`landing.json`): the file source
knows files by path (as Auto Loader does), so the same files under another folder would all be
read again; `medallion-dq run` refuses another folder unless told (preflight RUN016).

A damaged table is named before an update touches it, and `medallion-dq lake check` verifies
a whole lake (`delta_log.damage`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from medallion_dq.local import delta_log, machine
from medallion_dq.problems import MedallionDQError

UPDATES = "updates"
LANDING = "landing.json"


class LakeBusy(MedallionDQError, RuntimeError):
    """Another process is running an update on this lake."""


@contextlib.contextmanager
def locked(work_dir: Path) -> Iterator[None]:
    """Hold the lake for this process: two runs on one lake would mix their updates. The lock
    file says who holds it (machine.sign), for the one it turns away; a process that died
    holding it left no lock, whatever the file still says."""

    def busy(handle) -> None:
        raise LakeBusy(
            f"{machine.holder(handle, 'another run')} is using the lake {work_dir}: wait for it"
            " to end, or use --fresh for a throwaway lake"
        )

    with machine.exclusive(work_dir / ".lock", busy) as handle:
        machine.sign(handle)
        yield


def prune(runs: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` throwaway lakes of `runs` (their names start with
    the time they were made), never one a run holds; return those removed."""
    removed = []
    lakes = sorted(p for p in Path(runs).glob("*") if p.is_dir())
    for old in lakes[: max(0, len(lakes) - keep)]:
        try:
            with locked(old):
                shutil.rmtree(old)
        except LakeBusy:
            continue
        removed.append(old)
    return removed


def register_tables(spark, warehouse: Path) -> list[str]:
    """Register the warehouse's Delta tables (`<schema>.db/<table>/_delta_log`) in a new
    server's catalog; return their names. Known tables are left as they are."""
    names = []
    for schema_dir in sorted(Path(warehouse).glob("*.db")):
        schema = schema_dir.name[: -len(".db")]
        tables = [t for t in sorted(schema_dir.iterdir()) if (t / "_delta_log").is_dir()]
        if not tables:
            continue
        spark.sql(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
        known = {row.tableName for row in spark.sql(f"SHOW TABLES IN `{schema}`").collect()}
        for table in tables:
            if table.name not in known:
                location = str(table).replace("'", "\\'")
                spark.sql(
                    f"CREATE TABLE `{schema}`.`{table.name}` USING delta LOCATION '{location}'"
                )
            names.append(f"{schema}.{table.name}")
    return names


@dataclass(frozen=True)
class FullRefresh:
    """A full refresh of a pipeline's streaming tables under way. The engine starts their
    checkpoints again, then empties them, table by table: that cannot be put back (a stream
    reading a table emptied and filled again stops on the deletes), and a run stopped between
    the two would read every landing file again into a table that kept them. So until a full
    refresh of the pipeline completes, each of its updates is a full refresh."""

    work_dir: Path
    pipeline: str
    database: str | None = None  # a test's slice of the lake (ProjectLake's database)

    @property
    def marker(self) -> Path:
        return self.work_dir / UPDATES / f"{self.pipeline}.{self.database or '-'}.full-refresh"

    def begin(self) -> None:
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        self.marker.touch()

    def unfinished(self) -> bool:
        return self.marker.exists()

    def end(self) -> None:
        self.marker.unlink(missing_ok=True)


@dataclass(frozen=True)
class Ungated:
    """Rows that a canceled, failed or killed update committed to streaming tables. They stay
    (the tables' checkpoints record them, and the next update does not read them again), but no
    quality gate judged them; the job's gate fails on them until a full refresh of the pipeline
    judges every row again."""

    work_dir: Path
    pipeline: str

    @property
    def marker(self) -> Path:
        return self.work_dir / UPDATES / f"{self.pipeline}.ungated.json"

    def entries(self) -> list[dict]:
        """`[{"update_id", "status", "rows": {dataset: rows or None (not known)}}]`."""
        try:
            return json.loads(self.marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []

    def add(self, update_id: str, status: str, rows: dict[str, int | None]) -> None:
        entries = [*self.entries(), {"update_id": update_id, "status": status, "rows": rows}]
        _write_json(self.marker, entries)

    def end(self) -> None:
        self.marker.unlink(missing_ok=True)


@dataclass(frozen=True)
class Unjudged:
    """Completed updates of a gated pipeline whose rows no publish has taken yet: one run alone
    (`run --pipeline`), a job stopped before its gate, or a gate that failed. Their rows stay
    in the tables the publish reads, so the next gate judges them with its own update, as one
    delivery; a completed publish clears the list, and a completed full refresh starts it again
    (it judges every row). A gate that failed them is kept with them: a publish run by hand
    refuses them (preflight's RUN018) until a later gate passes them."""

    work_dir: Path
    pipeline: str
    database: str | None = None

    @property
    def marker(self) -> Path:
        return self.work_dir / UPDATES / f"{self.pipeline}.{self.database or '-'}.unjudged.json"

    @property
    def _rejection(self) -> Path:
        return self.marker.with_name(self.marker.name.replace(".unjudged.", ".rejected."))

    def updates(self) -> list[str]:
        """Their ids, oldest first."""
        try:
            return [str(u) for u in json.loads(self.marker.read_text(encoding="utf-8"))]
        except (OSError, ValueError, TypeError):
            return []

    def add(self, update_id: str, *, full_refresh: bool = False) -> None:
        if full_refresh:
            self._rejection.unlink(missing_ok=True)
        _write_json(self.marker, [update_id] if full_refresh else [*self.updates(), update_id])

    def judged(self, job: str, failed: list[str]) -> None:
        """Job `job`'s gate judged them: `failed`, why it failed them (none: it passed)."""
        if not failed or not self.updates():
            self._rejection.unlink(missing_ok=True)
        else:
            _write_json(self._rejection, {"job": job, "reasons": failed, "updates": self.updates()})

    def rejected(self) -> dict | None:
        """The job, reason and updates of the gate that failed them, while not published."""
        try:
            return (
                json.loads(self._rejection.read_text(encoding="utf-8")) if self.updates() else None
            )
        except (OSError, ValueError):
            return None

    def published(self) -> None:
        self.marker.unlink(missing_ok=True)
        self._rejection.unlink(missing_ok=True)

    @staticmethod
    def in_words(rejected: dict) -> str:
        """`rejected()` in words, its first reason alone (the rest: `report`)."""
        first, *more = rejected.get("reasons") or ["see `medallion-dq report`"]
        also = f"; {len(more)} more reason(s): `medallion-dq report`" if more else ""
        return f"job {rejected['job']}'s quality gate failed ({first}{also})"


gate_failed = Unjudged.in_words


@dataclass
class Journal:
    """What an update must put back if it does not complete."""

    pipeline: str
    update_id: str
    tables: dict[str, str]  # dataset -> qualified table name
    kinds: dict[str, str]  # dataset -> MaterializedView | StreamingTable | Sink ...
    versions: dict[str, int | None]  # dataset -> Delta version before the update (None: absent)
    storage: str  # the pipeline's storage folder (streaming checkpoints)
    folder: str  # this journal's folder (updates/<id>/)
    started: float = field(default_factory=time.time)  # files newer than this are the update's

    @classmethod
    def begin(
        cls,
        work_dir: Path,
        pipeline: str,
        update_id: str,
        tables: dict[str, str],
        kinds: dict[str, str],
        versions: dict[str, int | None],
        storage: Path,
    ) -> Journal:
        folder = work_dir / UPDATES / update_id
        folder.mkdir(parents=True)
        journal = cls(pipeline, update_id, tables, kinds, versions, str(storage), str(folder))
        _write_json(folder / "journal.json", asdict(journal))
        return journal

    def end(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    @classmethod
    def left_behind(cls, work_dir: Path) -> list[Journal]:
        """Journals of updates whose process ended before they finished."""
        out = []
        for path in sorted((work_dir / UPDATES).glob("*/journal.json")):
            out.append(cls(**json.loads(path.read_text(encoding="utf-8"))))
        for partial in (work_dir / UPDATES).glob("*/journal.tmp"):  # died while writing it:
            shutil.rmtree(partial.parent, ignore_errors=True)  # the update had not started
        return out


def unfinished(work_dir: Path) -> list[str]:
    """A line per update of the lake begun and not ended (its journal is there)."""
    return [
        f"{json.loads(journal.read_text(encoding='utf-8'))['pipeline']}: update"
        f" {journal.parent.name} has not finished: a run is still on it, or it ended mid-update"
        " and the next run on this lake puts its tables back"
        for journal in sorted((Path(work_dir) / UPDATES).glob("*/journal.json"))
    ]


def current_version(spark, table: str) -> int | None:
    """The table's latest Delta version; None when it does not exist."""
    from pyspark.errors import AnalysisException

    try:
        return spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()[0]["version"]
    except AnalysisException:
        return None


# -- Delta versions and rows written, from the table's log folder ------------------------------------
# The lake is a local folder (embedded server; the container mounts it at the same path), so a
# table's versions and its commits' metrics are read from its `_delta_log` directly: no query per
# table. What is not found there (a table elsewhere, a remote server) is asked of Spark, which
# reads the same commit files for DESCRIBE HISTORY.
_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def table_folder(warehouse: Path | None, table: str) -> Path | None:
    """Where the session catalog keeps managed table `table` (`[schema.]name`) under
    `warehouse`, by Spark's rule (lower-case names, `<schema>.db`; the default schema in the
    warehouse itself); None when the name is not a plain one."""
    if warehouse is None:
        return None
    parts = table.split(".")
    if len(parts) > 2 or not all(_NAME.match(part) for part in parts):
        return None
    schema, name = parts if len(parts) == 2 else ["default", *parts]
    base = warehouse if schema.lower() == "default" else warehouse / f"{schema.lower()}.db"
    return base / name.lower()


def _commit_versions(folder: Path) -> list[int] | None:
    """The versions of the table's commit files, ascending; None when it has no Delta log."""
    try:
        names = os.listdir(folder / "_delta_log")
    except OSError:
        return None
    versions = sorted(int(m[1]) for m in map(delta_log.COMMIT_FILE.match, names) if m)
    return versions or None


def versions(spark, tables: dict[str, str], warehouse: Path | None) -> dict[str, int | None]:
    """Each table's latest Delta version (None: it does not exist): from its log folder, one
    catalog listing per schema for those without one, and DESCRIBE HISTORY only for a table the
    catalog knows elsewhere."""
    out: dict[str, int | None] = {}
    listings: dict[str, set[str] | None] = {}
    for name, table in tables.items():
        folder = table_folder(warehouse, table)
        found = _commit_versions(folder) if folder else None
        if found:
            out[name] = found[-1]
            continue
        if folder is None:
            out[name] = current_version(spark, table)
            continue
        schema = table.split(".")[0] if "." in table else "default"
        if schema not in listings:
            listings[schema] = _table_names(spark, schema)
        known = listings[schema]
        if known is not None and folder.name not in known:
            out[name] = None  # neither in the catalog nor in the warehouse
        else:
            out[name] = current_version(spark, table)
    return out


def _table_names(spark, schema: str) -> set[str] | None:
    from pyspark.errors import AnalysisException

    try:
        rows = spark.sql(f"SHOW TABLES IN `{schema}`").collect()
    except AnalysisException:
        return set()  # no such schema: no such table
    except Exception:  # noqa: BLE001 - unknown: let DESCRIBE HISTORY answer per table
        return None
    return {row.tableName.lower() for row in rows if not row.isTemporary}


def rows_written(spark, table: str, since: int | None, warehouse: Path | None) -> int | None:
    """Rows the table's commits after version `since` wrote (all commits when None), leaving
    out TRUNCATE and RESTORE, as DESCRIBE HISTORY's operationMetrics.numOutputRows say them."""
    folder = table_folder(warehouse, table)
    found = _commit_versions(folder) if folder else None
    if folder and found:
        wanted = [v for v in found if since is None or v > since]
        expected = found[-1] - (since if since is not None else -1)
        if len(wanted) == expected and (since is not None or found[0] == 0):
            total = 0
            for version in wanted:
                info = _commit_info(folder / "_delta_log" / f"{version:020d}.json")
                if info is None:
                    break
                if info.get("operation") not in ("TRUNCATE", "RESTORE"):
                    total += int((info.get("operationMetrics") or {}).get("numOutputRows", 0))
            else:
                return total
    return _rows_written_by_history(spark, table, since)


def _commit_info(path: Path) -> dict | None:
    try:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.startswith('{"commitInfo"'):
                    return json.loads(line)["commitInfo"]
                if '"commitInfo"' in line:
                    action = json.loads(line)
                    if "commitInfo" in action:
                        return action["commitInfo"]
    except (OSError, ValueError):
        return None
    return None


def _rows_written_by_history(spark, table: str, since: int | None) -> int | None:
    from pyspark.errors import AnalysisException

    try:
        history = spark.sql(f"DESCRIBE HISTORY {table}").collect()
    except AnalysisException:
        return None
    return sum(
        int((h["operationMetrics"] or {}).get("numOutputRows", 0))
        for h in history
        if (since is None or h["version"] > since) and h["operation"] not in ("TRUNCATE", "RESTORE")
    )


def _location(spark, table: str) -> Path | None:
    with contextlib.suppress(Exception):
        location = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"]
        return Path(location.removeprefix("file:"))
    return None


class PutBackFailed(MedallionDQError, RuntimeError):
    """Some tables of a failed update could not be put back (e.g. the disk is full): the journal
    stays, and the next run on the lake tries again."""

    def __init__(self, failed: dict[str, str], restored: list[str], removed: list[str]):
        self.failed, self.restored, self.removed = failed, restored, removed
        super().__init__(
            "; ".join(f"could not put back {name}: {cause}" for name, cause in failed.items())
            + "; the next run will try again"
        )


# What a Spark or Python error says about the disk, as users know the words.
_IO_FAULT = re.compile(
    r"No space left on device|Disk quota exceeded|Read-only file system|Input/output error"
)


def io_fault(error: BaseException | str) -> str | None:
    """The disk fault (a full disk...) an error or an engine's message reports, or None: a
    Spark error's first line is its wrapper, the disk's words are further down, or only on the
    server (then the error has Spark's I/O error state, 58030, and its first line is said)."""
    text = str(error)
    if found := _IO_FAULT.search(text):
        return found[0]
    if "SQLSTATE: 58030" in text:
        return text.strip().splitlines()[0].replace(" SQLSTATE: 58030", "")[:300]
    return None


def disk_note(folder: Path, low: int = 64 * 2**20) -> str:
    """'; 1.0 MB free on its disk' when little space is left where `folder` is, else ''."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f"; {free / 2**20:.1f} MB free on its disk" if free < low else ""


def cause(error: BaseException) -> str:
    """One line for an error: the disk fault it reports, else its first line."""
    text = str(error)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(error).__name__)
    return io_fault(text) or line[:300]


def put_back(spark, journal: Journal, warehouse: Path | None = None) -> tuple[list[str], list[str]]:
    """Return every materialized view of `journal` to its version before the update and drop
    the tables it created, with their checkpoints; delete the data files the update wrote that
    no commit records; return (restored, removed) dataset names.

    The tables are put back at once, on threads of the one session: a RESTORE is 6-8 small Spark
    jobs (a failed publish's three gold tables: 13.3 s one after another, 7.8 s at once). Every
    table is put back even when another one fails; then `PutBackFailed` names those that
    could not be."""
    now = versions(spark, journal.tables, warehouse)
    changed = {
        name: table
        for name, table in journal.tables.items()
        if now[name] is not None and now[name] != journal.versions.get(name)
    }

    def one(name: str, table: str) -> str | None:
        before = journal.versions.get(name)
        if before is None:
            location = _location(spark, table)
            spark.sql(f"DROP TABLE IF EXISTS {table}")
            if location and location.is_dir():  # registered by location: drop kept the files
                shutil.rmtree(location, ignore_errors=True)
            schema, _, short = table.rpartition(".")
            for checkpoint in Path(journal.storage).glob(f"_checkpoints/*/{schema}/{short}"):
                shutil.rmtree(checkpoint, ignore_errors=True)
            return "removed"
        if journal.kinds.get(name) == "MaterializedView":
            _restore(spark, table, before)
            return "restored"
        return None  # a streaming table keeps its committed micro-batches (module docstring)

    with ThreadPoolExecutor(max_workers=max(1, len(changed))) as pool:
        futures = {name: pool.submit(one, name, table) for name, table in changed.items()}
    done = {name: future.exception() or future.result() for name, future in futures.items()}
    for table in journal.tables.values():  # a commit that failed leaves its files behind
        folder = table_folder(warehouse, table)
        if folder is not None and folder.is_dir():
            for orphan in untracked_files(folder, journal.started):
                orphan.unlink(missing_ok=True)
    restored = [name for name, what in done.items() if what == "restored"]
    removed = [name for name, what in done.items() if what == "removed"]
    if failed := {n: cause(e) for n, e in done.items() if isinstance(e, BaseException)}:
        raise PutBackFailed(failed, restored, removed)
    return restored, removed


def _restore(spark, table: str, version: int, tries: int = 4) -> None:
    """RESTORE, tried again when a commit came in between (Delta's DELTA_CONCURRENT_* errors):
    a canceled flow that had begun a write may still commit after its session looked idle.
    Restoring to the version before the update is right whatever came after it."""
    for attempt in range(1, tries + 1):
        try:
            spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {version}")
            return
        except Exception as error:  # pyspark's error classes differ by backend: read the text
            if "DELTA_CONCURRENT_" not in str(error) or attempt == tries:
                raise
            time.sleep(0.5 * attempt)


def untracked_files(folder: Path, since: float) -> list[Path]:
    """Files of the table written since `since` that no commit of its log names: the data of
    a commit that failed, and the log's own temporary files. A file its log names, at any
    version, is kept (time travel reads it)."""
    try:
        named = delta_log.files(folder, every=True)
    except (OSError, ValueError):
        return []  # a damaged log: leave the table as it is (`lake check` names it)
    if named is None:
        return []  # a V2 checkpoint: which files it names is not known here
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or path.stat().st_mtime < since or rel in named:
            continue
        if rel.startswith("_delta_log/"):
            if ".tmp" in path.name:  # a commit never renamed into place, or its checksum
                out.append(path)
        elif path.name.startswith(".") and path.name.endswith(".crc"):  # a file's checksum
            if (
                path.with_name(path.name[1 : -len(".crc")]).relative_to(folder).as_posix()
                not in named
            ):
                out.append(path)
        else:
            out.append(path)
    return out


# -- the landing folder the lake was built from ---------------------------------------------------
def landings(work_dir: Path) -> list[Path]:
    """The landing folders the lake's files were read from, the current one last ([]: unknown,
    a new lake)."""
    try:
        record = json.loads((Path(work_dir) / LANDING).read_text(encoding="utf-8"))
        return [Path(p) for p in record["landings"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def remember_landing(work_dir: Path, landing: Path, *, reset: bool = False) -> None:
    """Record that the lake reads `landing` now; `reset`: every file is read again from it
    (a full refresh), earlier folders no longer count."""
    landing = Path(landing).resolve()
    earlier = [] if reset else [p for p in landings(work_dir) if p != landing]
    _write_json(Path(work_dir) / LANDING, {"landings": [str(p) for p in [*earlier, landing]]})


def _write_json(path: Path, value: object) -> None:
    """`value` as JSON at `path`, written whole or not at all (a stop mid-write leaves the old)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(value, indent=2), encoding="utf-8")
    partial.replace(path)
