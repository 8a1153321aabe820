"""A project's lake, and a run's hold on it.

`LakeFolder` is a lake on disk, read without Spark: its tables, the damaged ones, the updates a
killed run left, the landing folders it was built from (what the preflight and `lake check`
judge). `LakeSession` is one run on it, from the lock to the last put-back: it takes the lake's
lock, removes what a full refresh rebuilds, starts or joins the lake's warm server, puts back an
update a killed run left, runs the job or pipeline, and says what became of an interrupted
update. It reports through `logging`; the tool that opens it keeps the options and the words.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_dq.local import delta_log, lake, lakeflow_params, spark
from medallion_dq.local import server as shared_server
from medallion_dq.project import writable
from medallion_dq.project.config import FRESH_KEPT, STATE_DIR

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local.project import JobResult, LocalProject
    from medallion_dq.local.runner import Interrupted, UpdateResult
    from medallion_dq.project.manifest import Manifest


@dataclass(frozen=True)
class LakeFolder:
    """A lake on disk: `.local/lake/<target>` (it lasts) or `.local/runs/<time>-<id>` (--fresh)."""

    path: Path
    throwaway: bool = False

    @classmethod
    def of(cls, root: Path, target: str) -> LakeFolder:
        return cls(Path(root) / STATE_DIR / "lake" / target)

    @classmethod
    def fresh(cls, root: Path) -> LakeFolder:
        """A new throwaway lake (made when a session takes it)."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        return cls(Path(root) / STATE_DIR / "runs" / f"{stamp}-{uuid.uuid4().hex[:6]}", True)

    @property
    def warehouse(self) -> Path:
        return self.path / shared_server.WAREHOUSE

    def tables(self) -> list[str]:
        """The Delta tables of its warehouse (`schema.table`) but the engine's own (AUTO CDC's
        events...), which `damaged` still checks."""
        return [t for t in delta_log.tables(self.warehouse) if not lakeflow_params.internal(t)]

    def damaged(self) -> dict[str, str]:
        """Damaged tables (`schema.table`) and what is wrong with each."""
        return delta_log.damaged_tables(self.path)

    def unfinished(self) -> list[str]:
        """A line per update a killed run left: the next run puts it back."""
        return lake.unfinished(self.path)

    def interrupted(self) -> bool:
        """Whether an update of it was cut before it was put back (its journal is left)."""
        return any((self.path / lake.UPDATES).glob("*/journal.json"))

    def landings(self) -> list[Path]:
        """The landing folders its tables were built from."""
        return lake.landings(self.path)

    def table(self, name: str) -> Path | None:
        """The folder of table `name` (`schema.table`) in its warehouse, if it is there."""
        return lake.table_folder(self.warehouse, name)

    def unjudged(self, pipeline: str, schema: str | None) -> lake.Unjudged:
        """The updates of gated pipeline `pipeline` (its name) whose rows no publish has taken,
        and the gate that failed them (`rejected()`, `Unjudged.in_words`)."""
        return lake.Unjudged(self.path, pipeline, schema)

    def disk_fault(self, error: BaseException) -> str | None:
        """The disk fault `error` reports (a full disk, a read-only lake), with the space left
        on the lake's disk when little is; None when it reports none."""
        fault = lake.io_fault(error)
        return fault + lake.disk_note(self.path) if fault else None

    def remove(self, table: str) -> None:
        """Remove `table` (`schema.table`) with its flows' checkpoints."""
        delta_log.remove(self.path, table)


class LakeSession:
    """One run on a lake. `check_writable` first (nothing touched yet), then, inside `with`
    (the lake's lock): `open`, `run_job` or `run_pipeline`; `put_back` after an interruption.
    Leaving it stops this process's hold on the server (a warm server stays for the next run)."""

    def __init__(
        self,
        manifest: Manifest,
        folder: LakeFolder,
        *,
        landing: Path,
        backend: str | None = None,
        warm: bool = True,
        failing_examples: int = 0,
    ):
        """`manifest`: the project as read for the run's target and `--var` values."""
        self.manifest, self.folder = manifest, folder
        self.landing, self.backend = landing, backend
        # The lake's own warm server: its catalog knows the lake's tables, and runs after the
        # first skip the JVM's start and its cold first update.
        self.warm = warm
        self.failing_examples = failing_examples
        self.local: spark.LocalSpark | None = None
        self.running: LocalProject | None = None
        self.removed: dict[str, str] = {}  # damaged tables a full refresh rebuilds: why
        self._held = ExitStack()

    def check_writable(self) -> None:
        """Every folder the run writes, before it changes anything or starts Spark:
        CannotWrite names the first it may not write."""
        # A throwaway lake is new: its folder of them is the one to fix.
        lake_dir = self.folder.path.parent if self.folder.throwaway else self.folder.path
        writable.check(lake_dir, "the run keeps its lake there", self.manifest.root)
        reuse = self.folder.path if self.warm else None
        spark.check_writable(self.backend, self.folder.path, reuse=reuse, lake=True)

    def __enter__(self) -> LakeSession:
        if self.folder.throwaway:  # the oldest go, never one a run holds
            lake.prune(self.folder.path.parent, keep=FRESH_KEPT - 1)
        self._held.enter_context(lake.locked(self.folder.path))
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.local is not None:
                self.local.stop()
        finally:
            self._held.close()

    def open(self, rebuilt: Collection[str] = ()) -> LocalProject:
        """Ready the lake for a run: remove its damaged tables whose names are in `rebuilt` (a
        full refresh rebuilds them: `removed`), start or join its server, register its tables
        and put back an update a killed run left."""
        from medallion_dq.local.project import LocalProject

        for table, why in self.folder.damaged().items():
            if table.split(".")[-1] in rebuilt:
                self.folder.remove(table)
                self.removed[table] = why
        if self.removed or self.folder.interrupted():
            # The warm server still holds removed tables in its catalog, or may still run the
            # cut update: a new server, then the put-back.
            shared_server.stop_lake_servers(self.folder.path)
        self.local = spark.start(
            self.backend,
            work_dir=self.folder.path,
            mounts=[self.landing],
            reuse=self.folder.path if self.warm else None,
            lake=True,
        )
        self.running = LocalProject(
            self.manifest.project,
            self.local,
            target=self.manifest.target,
            variables=dict(self.manifest.overrides),
            landing=self.landing,
            failing_examples=self.failing_examples,
        )
        self.running.open_lake()
        return self.running

    def run_job(self, job: str, *, full_refresh: bool, allow_empty: bool) -> JobResult:
        return self._opened().run_job(job, full_refresh=full_refresh, allow_empty=allow_empty)

    def run_pipeline(self, pipeline: str, *, full_refresh: bool) -> UpdateResult:
        return self._opened().run_pipeline(pipeline, full_refresh=full_refresh)

    def put_back(self, stop: Interrupted) -> PutBack:
        """What became of the update a signal cut: the tables put back, or whether the next
        run on this lake puts it back (a second signal cut the put-back)."""
        update = stop.result
        back = [*update.restored, *update.removed] if update else []
        return PutBack(back, pending=not back and self.folder.interrupted())

    def _opened(self) -> LocalProject:
        if self.running is None:
            raise RuntimeError("LakeSession.open() first")
        return self.running


@dataclass(frozen=True)
class PutBack:
    """An interrupted update's end: `tables` put back, or `pending` for the next run."""

    tables: list[str]
    pending: bool
