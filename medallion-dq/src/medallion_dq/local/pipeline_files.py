"""What pipeline files get wrong, found in their text: no pipeline code is run. What they define
is read by the project's one reader (`project.pipelines`).

Files are compiled and read with `ast` / `symtable` only. What can only be seen by running
them (a misused decorator, a Spark error) is reported by `loading` when the runner loads them.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from medallion_dq.local import lakeflow_params
from medallion_dq.local.loading import source_and_caret
from medallion_dq.problems import Problem
from medallion_dq.project import pipeline_code, pipeline_sql, pipelines


def parse_python(file: Path) -> ast.Module | None:
    """The module's syntax tree; None when it cannot be read or parsed."""
    try:
        return pipeline_code.parse_python(file.read_bytes(), str(file))
    except OSError:
        return None


def relative(path: Path, root: Path) -> str:
    """`path` relative to `root` (`/`-separated), or as given when outside it."""
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def compile_pipeline_files(files: Iterable[Path], root: Path) -> list[Problem]:
    """RUN012 for each .py file of `files` that does not compile; nothing is executed.

    The message holds the error, then the source line and a caret line (3 lines in all)::

        RUN012 src/pipelines/validation/silver/orders.py:23: SyntaxError: '(' was never closed
            return typed_orders(
                               ^
    """
    root = Path(root).resolve()
    problems = []
    for file in files:
        file = Path(file)
        if file.suffix != ".py":
            continue
        problem = _compile_problem(file, root)
        if problem:
            problems.append(problem)
    return problems


def _compile_problem(file: Path, root: Path) -> Problem | None:
    rel = relative(file, root)
    try:
        source = file.read_bytes()
    except OSError as error:
        return Problem("RUN012", rel, f"cannot be read: {error.strerror or error}", "")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning etc.: not this check's business
            compile(source, str(file), "exec", dont_inherit=True)
    except SyntaxError as error:
        line = error.lineno
        text, caret = source_and_caret(error.text or "", error.offset, error.end_offset)
        message = f"{type(error).__name__}: {error.msg}"
        if text:
            message += f"\n    {text}" + (f"\n    {caret}" if caret else "")
        return Problem("RUN012", f"{rel}:{line}" if line else rel, message, "", line=line)
    except ValueError as error:  # null bytes, undecodable source
        return Problem("RUN012", rel, f"cannot be compiled: {error}", "save it as UTF-8 text")
    return None


def _module_imports(tree: ast.Module) -> list[tuple[str, int, str]]:
    """(top-level module, line, statement) of the module's own top-level absolute imports.

    Imports inside `try`, `if` or functions are left out: they may be optional.
    """
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name.split(".")[0], node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "__future__":
                continue
            names = ", ".join(alias.name for alias in node.names)
            found.append(
                (node.module.split(".")[0], node.lineno, f"from {node.module} import {names}")
            )
    return found


def _importable(name: str, extra_paths: list[str]) -> bool:
    if name in sys.modules:
        return True
    try:
        if importlib.util.find_spec(name) is not None:
            return True
    except (ImportError, ValueError):
        return True  # found, but odd: leave it to the run
    return (
        bool(extra_paths)
        and importlib.machinery.PathFinder.find_spec(name, extra_paths) is not None
    )


def check_pipeline_code(
    files: Iterable[Path],
    root: Path,
    *,
    search_paths: Iterable[Path] = (),
    read: Callable[[Path], pipelines.PipelineFile] = pipelines.read_file,
) -> list[Problem]:
    """RUN012 (does not compile) and RUN013 (imports a module that is not installed) for the
    .py files of `files`; RUN015 (an undefined name) and RUN019 (a Lakeflow construct the
    local engine does not run) for all of them.

    Only top-level absolute imports are checked, against `sys.path` plus `search_paths`
    (e.g. the pipeline's root_path, which Databricks puts on sys.path): a module found nowhere
    would fail the run with ModuleNotFoundError. `read` reads a file's datasets (a `Project`'s
    own reader, which has read them once already for the command).
    """
    root = Path(root).resolve()
    all_files = [Path(f) for f in files]
    files = [f for f in all_files if f.suffix == ".py"]
    problems = compile_pipeline_files(files, root)
    broken = {p.file.split(":")[0] for p in problems}
    extra = [str(p) for p in search_paths if Path(p).is_dir()]
    for file in files:
        rel = relative(file, root)
        if rel in broken:
            continue
        tree = parse_python(file)
        if tree is None:
            continue
        for name, line, statement in _module_imports(tree):
            if name in RUNTIME_MODULES or _importable(name, [*extra, str(file.parent)]):
                continue
            if (root / "src" / name).is_dir() or (root / "src" / f"{name}.py").is_file():
                fix = "it is this project's package: install the project: pip install -e ."
            else:
                fix = (
                    f"check the name; if {name} is a dependency, add it to pyproject.toml and"
                    " install the project with its dependencies: pip install -e ."
                )
            problems.append(
                Problem(
                    "RUN013",
                    f"{rel}:{line}",
                    f"{statement}: no module {name!r} is installed",
                    fix,
                    line=line,
                )
            )
        problems += undefined_names(file, root) + unknown_functions(tree, file, root)
    for file in (Path(f) for f in all_files):
        problems += unsupported_constructs(file, root)
    return problems + reserved_names(pipelines.read_code(all_files, read), root)


def reserved_names(code: pipelines.PipelineCode, root: Path) -> list[Problem]:
    """RUN020: a dataset named `__dq_...`, as the local engine names its own tables (an AUTO
    CDC source's events, kept snapshots): it would be hidden from every result and reader."""
    return [
        Problem(
            "RUN020",
            f"{relative(d.file, root)}:{d.line}",
            f"dataset {d.name!r}: names starting with {lakeflow_params.INTERNAL_PREFIX!r} are the"
            " local engine's own tables'",
            "rename the dataset",
            line=d.line,
        )
        for d in code.datasets
        if lakeflow_params.internal(d.name)
    ]


#: What the pipeline runtime provides on Databricks: a project installs them only for local
#: runs (medallion-dq-dev[local]), so `check` in a Databricks-only environment must not miss them.
RUNTIME_MODULES = frozenset({"pyspark", "dlt", "databricks", "py4j"})

#: Names a pipeline file may use without defining them: the engine injects `spark`.
INJECTED = frozenset({"spark", "__file__", "__name__"})


def undefined_names(file: Path, root: Path) -> list[Problem]:
    """RUN015: global names a pipeline file reads but never defines, imports or gets from
    Python or the engine (`spark`): the NameError the run would end with, found statically."""
    import builtins
    import symtable

    tree = parse_python(file)
    if tree is None or any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
        for node in ast.walk(tree)
    ):
        return []  # a star import may define anything
    try:
        table = symtable.symtable(file.read_text(encoding="utf-8"), str(file), "exec")
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return []
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    known = defined | set(dir(builtins)) | INJECTED
    used: set[str] = set()

    def walk(scope) -> None:
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (symbol.is_global() or scope is table):
                used.add(symbol.get_name())
        for child in scope.get_children():
            walk(child)

    walk(table)
    problems = []
    for name in sorted(used - known):
        line = next(
            (n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name), None
        )
        close = difflib.get_close_matches(name, sorted(known - set(dir(builtins))), n=1)
        problems.append(
            Problem(
                "RUN015",
                f"{relative(file, root)}:{line}",
                f"name {name!r} is used but never defined or imported",
                f"did you mean {close[0]!r}?" if close else "define or import it",
                line=line,
            )
        )
    return problems


def _pipelines_aliases(tree: ast.Module) -> set[str]:
    """The names a file gives `pyspark.pipelines` (`dp` in `from pyspark import pipelines as
    dp`)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "pyspark":
            aliases |= {a.asname or a.name for a in node.names if a.name == "pipelines"}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "pyspark.pipelines" and a.asname}
    return aliases


@functools.cache
def _pipelines_functions() -> frozenset[str]:
    """Databricks' `pyspark.pipelines` functions and the installed module's own names."""
    try:
        import pyspark.pipelines as dp
    except ImportError:  # a Databricks-only environment: the documented ones
        return lakeflow_params.DATABRICKS_FUNCTIONS
    return lakeflow_params.DATABRICKS_FUNCTIONS | set(dir(dp))


def unknown_functions(tree: ast.Module, file: Path, root: Path) -> list[Problem]:
    """RUN015: `dp.tabel`, a misspelt function of `pyspark.pipelines` (the AttributeError a
    run would end with, or, in a decorator, a dataset that silently is not one)."""
    aliases = _pipelines_aliases(tree)
    problems = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr not in lakeflow_params.DATABRICKS_FUNCTIONS
            and node.attr not in (known := _pipelines_functions())  # imports pyspark: rare
        ):
            close = difflib.get_close_matches(node.attr, sorted(known), n=1)
            problems.append(
                Problem(
                    "RUN015",
                    f"{relative(file, root)}:{node.lineno}",
                    f"{node.value.id}.{node.attr} is not a function of pyspark.pipelines",
                    f"did you mean {node.value.id}.{close[0]}?"
                    if close
                    else "see Databricks' Lakeflow Python reference for its functions",
                    line=node.lineno,
                )
            )
    return problems


def unsupported_constructs(file: Path, root: Path) -> list[Problem]:
    """RUN019: what Databricks runs and the local engine refuses at the call, found in the text
    so that `check` and a run say it before Spark: SQL `INSERT INTO ONCE` (Python's
    `append_flow(once=True)` runs), `create_sink(..., "kafka")`. See local/lakeflow_params.py."""
    rel = relative(file, root)
    found: list[tuple[int, tuple[str, str]]] = []
    if file.suffix == ".sql":
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return []  # RUN012 / DQC000 say it
        for match in lakeflow_params.ONCE_IN_SQL.finditer(pipeline_sql.strip_comments(text)):
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, lakeflow_params.SQL_ONCE))
    elif (tree := parse_python(file)) is not None:
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            keywords = {k.arg: k.value for k in call.keywords}
            form = keywords.get("format", call.args[1] if len(call.args) > 1 else None)
            if (
                name == "create_sink"
                and isinstance(form, ast.Constant)
                and str(form.value).strip().lower() == "kafka"
            ):
                found.append((call.lineno, lakeflow_params.KAFKA))
            if name == "foreach_batch_sink":
                found.append((call.lineno, lakeflow_params.FOREACH_BATCH_SINK))
    return [Problem("RUN019", f"{rel}:{line}", what, fix, line=line) for line, (what, fix) in found]
