"""An error raised while a pipeline file is loaded, told as one short block about the user's code.

The runner executes each pipeline .py file with importlib (and registers each .sql file), so
whatever goes wrong there surfaces as an exception whose traceback runs through importlib,
pyspark.pipelines, medallion_dq and, for errors of the Spark Connect server, a JVM stack. What the
user needs is where in *their* file it went wrong and what it was::

    src/pipelines/validation/silver/orders.py:23: NameError: name 'typed_ordrs' is not defined. Did you mean: 'typed_orders'?
        return typed_ordrs()

`pipeline_code_error(exc, files, root)` builds that block, a `PipelineCodeError`:

* the location is the innermost traceback frame inside one of `files` (the pipeline's own
  code). When the error happened deeper, in another module of the project (`src/<package>/`),
  that module's line is shown, with the pipeline line that called it. Frames of medallion_dq,
  pyspark, importlib or site-packages are never the location;
* `SyntaxError` (and IndentationError): its own file, line, text and a caret line;
* `DataQualityError` and the `DQ0xx` TypeErrors of misused expectation decorators: their own
  message (it already names the problem and the fix), at the line of the pipeline that called;
* `ImportError` / `ModuleNotFoundError`: the module, and a hint to check the name or install
  the project with its dependencies (`pip install -e .`);
* pyspark errors (`AnalysisException`, `ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION`...): the
  first line of their message only; the JVM stack (`JVM stacktrace:`, `\\tat org.apache...`)
  is dropped.

The original exception and its full traceback stay on the error (`.original`,
`.traceback`) for a `--traceback` flag and bug reports.

Wiring, in `Runner._register` (one file at a time, so that an error of a .sql file, which has no
Python frame, is still named)::

    for file in spec.libraries:
        with loading.reporting([file], spec.root, keep=lambda e: self.local.lost(e) is not None):
            ...  # exec_module / sql_files.register, as today

`PipelineCodeError` is a `ValueError`: `medallion-dq run` already turns ValueError into
`error: <message>` and exit 2.
"""

from __future__ import annotations

import difflib
import linecache
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import medallion_dq
from medallion_dq.problems import MedallionDQError

__all__ = [
    "PipelineCodeError",
    "first_line",
    "pipeline_code_error",
    "reporting",
    "source_and_caret",
]

#: Where the framework's own code lives (the runtime's folder and the tools', one folder once
#: installed): never the location of a user's mistake.
_PACKAGE_DIRS = [Path(folder).resolve() for folder in medallion_dq.__path__]
#: Folders whose modules are installed or generated code, not the project's own.
_NOT_PROJECT_PARTS = {"site-packages", "dist-packages", ".venv", "venv", ".nox", ".tox", ".local"}
#: A rule / decorator problem of medallion_dq: "DQ015 expect_or_drop takes two strings ...".
_DQ_CODE = re.compile(r"^DQC?\d{3}\b")
#: The JVM's part of a Spark error message.
_JVM_LINE = re.compile(r"^\s*(at [\w$.]+\(|\.\.\. \d+ more|Caused by:|JVM stacktrace:)")

#: Hints for pyspark error conditions a pipeline file can run into while it is loaded.
_SPARK_HINTS = {
    "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION": (
        "a query function may only build its DataFrame: df.columns, df.schema, count(),"
        " collect() and the like are refused there; compute them in a query instead"
    ),
    "SESSION_MUTATION_IN_DECLARATIVE_PIPELINE": (
        "pipeline files may not change the session (spark.conf.set, SET, CREATE TEMP VIEW...):"
        " put settings in the pipeline's configuration in resources/*.pipeline.yml"
    ),
    "DECORATOR_ARGUMENT_NOT_CALLABLE": (
        "write @dp.table or @dp.table(name=...): options are keyword arguments"
    ),
}


class PipelineCodeError(MedallionDQError, ValueError):
    """A pipeline file could not be loaded; `str()` is the short block to show the user.

    Attributes:
        file: the file the location is in, relative to the project root when inside it (None
            when no file could be named).
        line: the line number there (None when unknown).
        kind: `syntax` | `import` | `data_quality` | `spark` | `python`.
        original: the exception that was raised.
        traceback: the original exception's full traceback, formatted (for `--traceback`).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        kind: str = "python",
        original: BaseException | None = None,
        traceback_text: str = "",
    ):
        super().__init__(message)
        self.file = file
        self.line = line
        self.kind = kind
        self.original = original
        self.traceback = traceback_text


# --------------------------------------------------------------------------- helpers


def first_line(text: str) -> str:
    """The first non-empty line of an error message, never a line of a JVM stack."""
    for line in str(text).splitlines():
        if _JVM_LINE.match(line) or line.startswith("\t"):
            continue
        if line.strip():
            return line.strip()
    return ""


def _shown(path: Path | str, root: Path) -> str:
    path = Path(path)
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _is_project_code(filename: str, root: Path) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    path = Path(filename).resolve()
    if any(map(path.is_relative_to, _PACKAGE_DIRS)) or not path.is_relative_to(root):
        return False
    return not (_NOT_PROJECT_PARTS & set(path.relative_to(root).parts))


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(exc.__traceback__)) if exc.__traceback__ else []


def _locate(
    exc: BaseException, files: set[Path], root: Path
) -> tuple[traceback.FrameSummary | None, traceback.FrameSummary | None]:
    """(innermost frame in a pipeline file, innermost deeper frame in other project code)."""
    pipeline_frame = deeper = None
    for frame in _frames(exc):
        if frame.filename.startswith("<"):
            continue
        if Path(frame.filename).resolve() in files:
            pipeline_frame, deeper = frame, None
        elif pipeline_frame is not None and _is_project_code(frame.filename, root):
            deeper = frame
    if pipeline_frame is None:  # e.g. a helper module run on its own: any project frame will do
        project = [f for f in _frames(exc) if _is_project_code(f.filename, root)]
        return (project[-1] if project else None), None
    return pipeline_frame, deeper


def _source(frame: traceback.FrameSummary) -> str:
    line = frame.line or linecache.getline(frame.filename, frame.lineno or 0)
    return line.strip()


def _error_class(exc: BaseException) -> str | None:
    for getter in ("getCondition", "getErrorClass"):
        method = getattr(exc, getter, None)
        if callable(method):
            try:
                value = method()
            except Exception:  # noqa: BLE001 - best effort: the message still says it
                value = None
            if value:
                return str(value)
    match = re.match(r"^\[([A-Z_]+)(?:\.[A-Z_]+)*\]", first_line(str(exc)))
    return match.group(1) if match else None


def _is_spark_error(exc: BaseException) -> bool:
    return any(
        klass.__module__.startswith(("pyspark", "py4j", "grpc")) for klass in type(exc).__mro__
    )


def _suggestion(exc: BaseException, frame: traceback.FrameSummary | None) -> str:
    """Python 3.12+ puts "Did you mean" in tracebacks only; add it to the message here."""
    name = getattr(exc, "name", None)
    if not isinstance(name, str) or not name:
        return ""
    candidates: Iterable[str] = ()
    if isinstance(exc, NameError):
        tb_frame = None
        for tb in _walk_tb(exc):
            if frame is None or tb.tb_frame.f_code.co_filename == frame.filename:
                tb_frame = tb.tb_frame
        if tb_frame is not None:
            import builtins

            candidates = [*tb_frame.f_locals, *tb_frame.f_globals, *dir(builtins)]
    elif isinstance(exc, AttributeError):
        obj = getattr(exc, "obj", None)
        if obj is not None:
            try:
                candidates = dir(obj)
            except Exception:  # noqa: BLE001 - an object whose dir() fails: no suggestion
                candidates = ()
    close = difflib.get_close_matches(name, [c for c in candidates if c != name], n=1, cutoff=0.7)
    return f" Did you mean: {close[0]!r}?" if close else ""


def _walk_tb(exc: BaseException) -> Iterator:
    tb = exc.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def source_and_caret(
    text: str, offset: int | None, end_offset: int | None = None
) -> tuple[str, str]:
    """A SyntaxError's line, stripped, and a caret line under the error (1-based offsets, as
    `SyntaxError.offset` / `end_offset`); the caret line is empty without an offset."""
    raw = text.rstrip("\n").expandtabs(1)
    stripped = raw.lstrip()
    if not offset or offset < 1:
        return stripped, ""
    indent = len(raw) - len(stripped)
    start = max(0, offset - 1 - indent)
    start = min(start, len(stripped))
    width = 1
    if end_offset and end_offset > offset:
        width = max(1, min(end_offset - offset, len(stripped) - start))
    return stripped, " " * start + "^" * width


def _where(file: str | None, line: int | None) -> str:
    if file is None:
        return "pipeline code"
    return f"{file}:{line}" if line else file


# --------------------------------------------------------------------------- public API


def pipeline_code_error(
    exc: BaseException, files: Iterable[Path | str], root: Path | str
) -> PipelineCodeError:
    """The short block for `exc`, raised while loading or registering pipeline `files`.

    `files`: the pipeline files being loaded (absolute, or relative to the current folder):
    the location is the innermost traceback frame in one of them. When no frame is (a .sql file,
    or an error raised before the file's code ran) and `files` holds exactly one file, that
    file is named without a line. `root`: the project root, for relative paths.

    Never raises; returns a `PipelineCodeError` (already one: returned as it is).
    """
    if isinstance(exc, PipelineCodeError):
        return exc
    root = Path(root).resolve()
    file_set = {Path(f).resolve() for f in files}
    full = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    frame, deeper = _locate(exc, file_set, root)

    file: str | None = None
    line: int | None = None
    source = caret = ""
    if frame is not None:
        file, line, source = _shown(frame.filename, root), frame.lineno, _source(frame)
    elif len(file_set) == 1:
        file = _shown(next(iter(file_set)), root)
    via = ""  # the pipeline line that called into the project module where it went wrong
    if deeper is not None:
        via = f"(called from {file}:{line}: {source})"
        file, line, source = _shown(deeper.filename, root), deeper.lineno, _source(deeper)

    message = str(exc)
    extra: list[str] = []
    hint = ""
    if isinstance(exc, SyntaxError):
        kind = "syntax"
        if exc.filename and not str(exc.filename).startswith("<"):
            if frame is not None and Path(exc.filename).resolve() != Path(frame.filename).resolve():
                via = f"(imported from {_where(file, line)}: {source})"
            file = _shown(exc.filename, root)
        line = exc.lineno or line
        source, caret = source_and_caret(
            exc.text or "", exc.offset, getattr(exc, "end_offset", None)
        )
        if not source and file and line:
            source = linecache.getline(str(root / file), line).strip()
        headline = f"{type(exc).__name__}: {exc.msg}"
    elif _DQ_CODE.match(message) or type(exc).__name__ == "DataQualityError":
        kind = "data_quality"
        lines = [ln for ln in message.splitlines() if ln.strip()]
        headline, extra = (lines[0], lines[1:]) if lines else (type(exc).__name__, [])
    elif isinstance(exc, ImportError):
        kind = "import"
        module = exc.name or ""
        headline = f"{type(exc).__name__}: {first_line(message)}"
        if isinstance(exc, ModuleNotFoundError) and module:
            hint = (
                f"hint: is {module.split('.')[0]!r} spelt right? If it is a dependency, add it to"
                " pyproject.toml and install the project with its dependencies: pip install -e ."
            )
        else:
            hint = (
                "hint: check the imported name; if it comes from a dependency, install the"
                " project with its dependencies: pip install -e ."
            )
    elif _is_spark_error(exc):
        kind = "spark"
        headline = f"{type(exc).__name__}: {first_line(message) or type(exc).__name__}"
        condition = _error_class(exc)
        if condition in _SPARK_HINTS:
            hint = f"hint: {_SPARK_HINTS[condition]}"
    else:
        kind = "python"
        text = first_line(message)
        suggestion = "" if "Did you mean" in text else _suggestion(exc, deeper or frame)
        if suggestion and not text.endswith((".", "?", "!")):
            suggestion = "." + suggestion
        headline = f"{type(exc).__name__}: {text}{suggestion}" if text else type(exc).__name__

    block = [f"{_where(file, line)}: {headline}"]
    if source:
        block.append(f"    {source}")
    if caret:
        block.append(f"    {caret}")
    if via:
        block.append(f"  {via}")
    block.extend(f"  {ln}" for ln in extra)
    if hint:
        block.append(hint)
    return PipelineCodeError(
        "\n".join(block),
        file=file,
        line=line,
        kind=kind,
        original=exc,
        traceback_text=full,
    )


@contextmanager
def reporting(
    files: Iterable[Path | str],
    root: Path | str,
    *,
    keep: Callable[[BaseException], bool] | None = None,
) -> Iterator[None]:
    """Raise any `Exception` of the block as a `PipelineCodeError` (see
    `pipeline_code_error`), from None: its `.original` and `.traceback` keep the rest.

    `keep(exc)` true leaves `exc` as it is: pass e.g. `lambda e: local.lost(e) is not None`
    so that a lost Spark server still ends the run with exit 3. KeyboardInterrupt, SystemExit
    and other BaseExceptions are never converted.
    """
    files = list(files)
    try:
        yield
    except PipelineCodeError:
        raise
    except Exception as exc:
        if keep is not None and keep(exc):
            raise
        raise pipeline_code_error(exc, files, root) from None
