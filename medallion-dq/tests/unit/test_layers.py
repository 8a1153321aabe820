"""The package's layers stay apart. Which module may import which is a contract checked by
import-linter (`lint-imports`, [tool.importlinter] in pyproject.toml, run by `nox -s lint`);
these tests check what it cannot see: every module is placed in a layer, what runs on Databricks
uses no pyspark internals, and no module uses another's private names."""

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from medallion_dq.project.config import load_toml

ROOT = Path(__file__).resolve().parents[2]
# The package's two folders: the runtime's distribution (medallion-dq) and this one's.
RUNTIME = ROOT / "runtime" / "src" / "medallion_dq"
TOOLS = ROOT / "src" / "medallion_dq"
FOLDERS = (RUNTIME, TOOLS)
CONTRACTS = load_toml(ROOT / "pyproject.toml")["tool"]["importlinter"]["contracts"]
LAYERS = [
    {name.strip() for name in layer.split(":")}
    for layer in next(c for c in CONTRACTS if c["type"] == "layers")["layers"]
]
ON_DATABRICKS = sorted(name.removeprefix("medallion_dq.") for name in LAYERS[-1])
PUBLIC_PYSPARK = ("pyspark.sql", "pyspark.pipelines", "pyspark.errors")  # Databricks has them


def module_name(path: Path) -> str:
    folder = next(folder for folder in FOLDERS if path.is_relative_to(folder))
    parts = path.relative_to(folder.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(text: str, me: str, package: str) -> list[tuple[str, str | None, str]]:
    """(module, name or None, local alias) of every import in module ``me`` (its source
    ``text``, in ``package``), relative ones made absolute."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(a.name, None, a.asname or a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, [base, node.module]))
            found += [(module, a.name, a.asname or a.name) for a in node.names]
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(text: str, me: str, package: str) -> set[str]:
    """``me: other.name`` for each private name of another medallion_dq module that module
    ``me`` imports (``from other import _name``) or reads (``other._name``)."""
    aliases, used = {}, set()
    for module, name, alias in imports(text, me, package):
        if module.startswith("medallion_dq"):
            aliases[alias] = f"{module}.{name}" if name else module
            if name and _private(name) and module != me:
                used.add(f"{me}: {module}.{name}")
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and _private(node.attr)
            and aliases.get(node.value.id, me) != me
        ):
            used.add(f"{me}: {aliases[node.value.id]}.{node.attr}")
    return used


def package_modules():
    """(source, module name, its package) of every module of medallion_dq."""
    for path in sorted(p for folder in FOLDERS for p in folder.rglob("*.py")):
        me = module_name(path)
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        yield path.read_text(encoding="utf-8"), me, package


def _children(folder: Path, package: str) -> set[str]:
    """The modules and packages directly in ``folder`` (package ``package``)."""
    return {f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"} | {
        f"{package}.{p.name}" for p in folder.iterdir() if (p / "__init__.py").is_file()
    }


def test_every_module_has_its_layer():
    """A new module or folder is placed in the layers contracts, or import-linter would not
    check it: the dev distribution's folders (project, local, tools) and the tools' modules."""
    placed = set().union(*LAYERS)
    assert sorted(_children(TOOLS, "medallion_dq") - placed) == []
    tools = next(c for c in CONTRACTS if c.get("containers") == ["medallion_dq.tools"])
    in_tools = {
        f"medallion_dq.tools.{name.strip()}"
        for layer in tools["layers"]
        for name in layer.replace("|", ":").split(":")
    }
    assert sorted(_children(TOOLS / "tools", "medallion_dq.tools") ^ in_tools) == []


def test_the_folders_are_the_layers():
    """A module's path says where it runs: the dev distribution has three folders and the entry
    points a user names (`python -m medallion_dq`, the pytest plugin, `medallion_dq.testing`)."""
    assert sorted(_children(TOOLS, "medallion_dq")) == [
        "medallion_dq.__main__",
        "medallion_dq.local",
        "medallion_dq.project",
        "medallion_dq.pytest_plugin",
        "medallion_dq.testing",
        "medallion_dq.tools",
    ]


def test_the_runtime_folder_holds_what_runs_on_databricks_and_only_that():
    """The runtime's distribution is its folder: a module of the last layer lives there, and
    nothing else does (the engine and the tools are medallion-dq-dev's)."""
    runtime = {module_name(path) for path in RUNTIME.glob("*.py")} - {"medallion_dq"}
    assert runtime == LAYERS[-1]
    assert not (TOOLS / "__init__.py").exists()  # one __init__.py: the runtime's
    assert sorted(p.name for p in RUNTIME.iterdir() if p.is_dir() and p.name[0] != "_") == []
    mypy = load_toml(ROOT / "pyproject.toml")["tool"]["mypy"]["overrides"]
    strict = next(o for o in mypy if o.get("disallow_untyped_defs"))  # checked strictly
    assert set(strict["module"]) == runtime | {"medallion_dq"}


def test_the_two_distributions_are_one_version():
    """medallion-dq-dev depends on the runtime at its own version: released together."""
    import medallion_dq

    dependencies = load_toml(ROOT / "pyproject.toml")["project"]["dependencies"]
    assert f"medallion-dq=={medallion_dq.__version__}" in dependencies


@pytest.mark.parametrize("name", ON_DATABRICKS)
def test_what_runs_on_databricks_uses_no_pyspark_internals(name):
    me = f"medallion_dq.{name}"
    text = (RUNTIME / f"{name}.py").read_text(encoding="utf-8")
    wrong = [
        module
        for module, _, _ in imports(text, me, "medallion_dq")
        if module.startswith("pyspark")
        and not module.startswith(PUBLIC_PYSPARK)
        or module.startswith(("pyspark.sql.connect", "pyspark.pipelines."))
    ]
    assert wrong == [], f"{name}.py imports {wrong}"


def test_no_module_uses_private_names_of_another():
    """``from medallion_dq.x import _y`` and ``x._y`` alike (e.g. ``sql_files._split``)."""
    used = set().union(*(private_uses(*module) for module in package_modules()))
    assert sorted(used) == []


def test_a_private_name_read_as_an_attribute_is_seen():
    text = (
        "from medallion_dq.local import sql_files\n"
        "from . import gate as g\n"
        "def f():\n    return sql_files._split('a;b', ';'), g._short('x'), sql_files.__doc__\n"
    )
    assert private_uses(text, "medallion_dq.tools.diff", "medallion_dq") == {
        "medallion_dq.tools.diff: medallion_dq.local.sql_files._split",
        "medallion_dq.tools.diff: medallion_dq.gate._short",
    }


def test_every_error_the_package_raises_has_its_root():
    """``except MedallionDQError`` catches every error the package defines (a stop signal, such
    as the runner's ``Interrupted``, is no Exception, as KeyboardInterrupt is not)."""
    from medallion_dq.problems import MedallionDQError

    rootless = set()
    for _, me, _ in package_modules():
        if me.endswith("__main__"):
            continue
        module = importlib.import_module(me)
        rootless |= {
            f"{me}.{name}"
            for name, value in vars(module).items()
            if isinstance(value, type)
            and issubclass(value, Exception)
            and value.__module__ == me
            and not issubclass(value, MedallionDQError)
        }
    assert sorted(rootless) == []


def printed_in_a_fresh_process(code: str) -> str:
    """What ``code`` prints in a new Python process: what an import loads, with nothing loaded
    before it."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_engine_is_not_imported_by_what_runs_on_databricks_at_run_time():
    """Importing the Databricks-side modules loads no local engine module, nor the tools' data
    contracts and their JSON schema validator (a fresh process)."""
    code = (
        "import sys, medallion_dq.rules, medallion_dq.gate, medallion_dq.constraints,"
        " medallion_dq.quarantine, medallion_dq.sources;"
        "print(sorted(m for m in sys.modules"
        " if m.startswith(('medallion_dq.local', 'medallion_dq.tools.contract', 'jsonschema'))))"
    )
    assert printed_in_a_fresh_process(code) == "[]"


def test_the_engine_face_serves_every_name_it_lists_and_imports_nothing_before():
    """`medallion_dq.local` (its face) costs nothing to import: no engine module, no pyspark;
    each name it lists is the engine's own object, loaded at its first use."""
    code = (
        "import sys, json, medallion_dq.local as face;"
        "before = sorted(m for m in sys.modules if m.startswith(('medallion_dq.local.', 'pyspark')));"
        "served = [n for n in face.__all__ if getattr(face, n) is not None];"
        "print(json.dumps([before, sorted(face.__all__), len(served)]))"
    )
    before, names, served = json.loads(printed_in_a_fresh_process(code))
    assert before == []
    assert served == len(names) and {"start", "LocalProject", "ServerLost"} <= set(names)
    import medallion_dq.local as face
    from medallion_dq.local import server

    assert face.stop_server is server.stop  # the engine's own function, under the face's name
    with pytest.raises(AttributeError, match="no attribute 'lake_internals'"):
        face.lake_internals  # noqa: B018
