"""What a pipeline's files define, read offline by the project's one reader of pipeline Python
(`pipeline_code`, by syntax tree) and one of pipeline SQL (`pipeline_sql`): nothing is run.

`read_code(files)` gives a `PipelineCode`: its datasets of every kind, the expectations and SQL
constraints on them and the landing folders it reads, with their formats. `check`, `run`'s
preflight and damaged-table rule (RUN017), the engine and the test harness all ask it, so a
dataset named only by its function (`@dp.table def orders():`) is one to each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from medallion_dq.project import pipeline_code, pipeline_sql
from medallion_dq.text import short_name

#: The kind of each SQL CREATE statement's dataset, as `pipeline_code` names Python's.
_SQL_KINDS = {
    "STREAMING TABLE": "streaming table",
    "MATERIALIZED VIEW": "materialized view",
    "TEMPORARY VIEW": "temporary view",
    "VIEW": "view",
}


@dataclass(frozen=True)
class Dataset:
    """A dataset a pipeline file defines. `kind`: table, materialized view, streaming table,
    temporary view, view (persisted, SQL), flow target, auto cdc target or sink."""

    name: str  # short: the last part of a qualified name
    kind: str
    file: Path
    line: int

    @property
    def is_table(self) -> bool:
        """A table of the lake (a view lives in its update, a sink writes elsewhere)."""
        return self.kind not in pipeline_code.NOT_TABLES


@dataclass(frozen=True)
class Expectation:
    """A rule a pipeline file gives a dataset: a decorator's (`name` None when the rules are an
    expression such as a rule set's `R.drop`) or a SQL constraint's."""

    dataset: str
    name: str | None
    constraint: str  # the SQL where it is written there, else the decorator's argument
    action: str  # warn | drop | fail
    file: Path
    line: int


@dataclass(frozen=True)
class Landing:
    """A landing sub-folder a pipeline reads; `format` None: the pipeline's configured one."""

    folder: str
    file: Path
    line: int
    format: str | None


@dataclass(frozen=True)
class PipelineFile:
    """One pipeline file as read; `unread` says why it could not be (then it defines nothing)."""

    path: Path
    datasets: tuple[Dataset, ...] = ()
    expectations: tuple[Expectation, ...] = ()
    landing: tuple[Landing, ...] = ()
    unread: str = ""


@dataclass(frozen=True)
class PipelineCode:
    """The files of a pipeline (or of several) as read."""

    files: tuple[PipelineFile, ...]

    @property
    def datasets(self) -> tuple[Dataset, ...]:
        return tuple(d for f in self.files for d in f.datasets)

    @property
    def expectations(self) -> tuple[Expectation, ...]:
        return tuple(e for f in self.files for e in f.expectations)

    @property
    def landing(self) -> tuple[Landing, ...]:
        return tuple(landing for f in self.files for landing in f.landing)

    def names(self, *, views: bool = False) -> set[str]:
        """The datasets' short names: the lake's tables (and the views and sinks, with `views`)."""
        return {d.name for d in self.datasets if views or d.is_table}

    def landing_folders(self) -> dict[str, list[tuple[Path, int]]]:
        """Landing sub-folder -> [(file, line), ...] of the calls reading it."""
        found: dict[str, list[tuple[Path, int]]] = {}
        for landing in self.landing:
            found.setdefault(landing.folder, []).append((landing.file, landing.line))
        return found

    def landing_formats(self) -> dict[str, str]:
        """The landing folders whose reader names its own format -> that format."""
        return {x.folder: x.format for x in self.landing if x.format}

    def defining(self, name: str) -> list[Path]:
        """The files defining dataset `name` (short)."""
        return [f.path for f in self.files if name in {d.name for d in f.datasets}]


def read_file(path: Path, text: str | None = None) -> PipelineFile:
    """One .py or .sql pipeline file (its `text`, when the caller has read it)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8") if text is None else text
    except (OSError, UnicodeDecodeError) as error:
        return PipelineFile(path, unread=f"cannot read the file: {error}")
    return _read_sql(path, text) if path.suffix == ".sql" else _read_python(path, text)


def read_code(
    files: Iterable[Path], read: Callable[[Path], PipelineFile] = read_file
) -> PipelineCode:
    """The pipeline files `files` (`.py` and `.sql`; others left out), each read by `read`
    (a `Project` passes its own, which reads each file once per command)."""
    paths = dict.fromkeys(Path(f) for f in files if Path(f).suffix in (".py", ".sql"))
    return PipelineCode(tuple(read(path) for path in paths))


def _read_python(path: Path, text: str) -> PipelineFile:
    tree = pipeline_code.parse_python(text, str(path))
    if tree is None:
        return PipelineFile(path, unread="cannot parse the file")
    module = pipeline_code.PipelineModule(tree)
    datasets = tuple(Dataset(name, kind, path, line) for name, kind, line in module.datasets())
    expectations = []
    for func in module.query_functions():
        dataset = module.dataset_of(func)
        for deco in func.decorator_list:
            kind, call = module.decorator(deco)
            if kind not in pipeline_code.EXPECT_DECORATORS or call is None:
                continue
            action = pipeline_code.EXPECT_DECORATORS[kind]
            for name, source, _ in module.rule_names(kind, call):
                expectations.append(Expectation(dataset, name, source, action, path, deco.lineno))
    landing = tuple(Landing(folder, path, line, fmt) for folder, line, fmt in module.landing())
    return PipelineFile(path, datasets, tuple(expectations), landing)


def _read_sql(path: Path, text: str) -> PipelineFile:
    try:
        statements = pipeline_sql.read(text, str(path))
    except ValueError as error:  # the text cannot be tokenized: the run says it too
        return PipelineFile(path, unread=str(error))
    found: list[tuple[str, str, int]] = []
    expectations = []
    for statement in statements:
        if statement.cdc_target:
            found.append((short_name(statement.cdc_target), "auto cdc target", statement.line))
        head = pipeline_sql.created(statement.text)  # a statement `parse` refuses still names it
        if head:
            name = short_name(head[0])
            found.append((name, _SQL_KINDS[head[1]], statement.line))
        created = statement.created or {}
        for c in created.get("constraints", ()):
            line = created["lines"][c.name]
            expectations.append(Expectation(name, c.name, c.constraint, c.action, path, line))
    datasets = tuple(
        Dataset(n, k, path, line) for n, k, line in pipeline_code.first_declared(found)
    )
    return PipelineFile(path, datasets, tuple(expectations))
