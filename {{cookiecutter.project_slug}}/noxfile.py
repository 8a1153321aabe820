"""Checks of this project, layer by layer: `nox` runs the default set, `nox -l` lists them.

Tests live in tests/<layer>/ (bronze, silver, gold): each layer's session runs its folder, so a
test file you add there runs without touching this file, and the examples written next to the
layer's rules (src/<package>/rules/<layer>/*.yml: one test per example row); `job` runs every
other test (the whole job, and anything outside the layer folders). The Spark sessions share one
local Spark Connect server (embedded, Java 17+): the first starts it, the others connect to it;
it stops when left unused (`medallion-dq spark stop` stops it now).
"""

import importlib.util
import os
import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "rules", "bronze", "silver", "gold", "job"]
PYTHON = "{{ cookiecutter.python_version }}"
LAYERS = ("bronze", "silver", "gold")
RULES = Path("src/{{ cookiecutter.package_name }}/rules")
# PyPI has pyspark as a 1.4 GB source archive only, which uv would unpack for every new venv:
# its wheel is built once into this cache and found there (the version medallion-dq pins);
# DQ_CACHE_DIR moves it, with medallion-dq's own cache (a CI that caches its workspace only).
PYSPARK = "pyspark==4.2.0"
WHEELS = Path(os.environ.get("DQ_CACHE_DIR") or Path.home() / ".cache" / "medallion-dq") / "wheels"


def pyspark_wheel(session: nox.Session) -> None:
    if not list(WHEELS.glob(f"pyspark-{PYSPARK.split('==')[1]}-*.whl")):
        session.log(f"building the {PYSPARK} wheel once into {WHEELS} (about a minute)")
        has_pip = importlib.util.find_spec("pip") is not None  # not where nox came from uvx
        pip = [sys.executable, "-m", "pip"] if has_pip else ["uvx", "pip"]
        session.run(*pip, "wheel", "--no-deps", "-w", str(WHEELS), PYSPARK, external=True)
    for name, sep in (("UV_FIND_LINKS", ","), ("PIP_FIND_LINKS", " ")):  # uv's and pip's
        links = filter(None, os.environ.get(name, "").split(sep))
        os.environ[name] = sep.join(dict.fromkeys([str(WHEELS), *links]))


def pytest(session: nox.Session, *args: str, group: str = "test", env: dict | None = None) -> None:
    if group == "test":
        pyspark_wheel(session)
    session.install("-e", ".", "--group", group)
    junit = f"--junitxml=.local/test-results/{session.name}.xml"  # CI shows them as test results
    session.run("pytest", junit, *args, *session.posargs, env=env)


def layer(name: str) -> list[str]:
    """A layer's tests and its rule files, whose examples pytest collects as tests."""
    return [f"tests/{name}", *([str(RULES / name)] if (RULES / name).is_dir() else [])]


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Lint and format-check the code with ruff."""
    session.install("--group", "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def rules(session: nox.Session) -> None:
    """Check rule files, layer conventions and bundle YAML statically (no Spark)."""
    session.install("-e", ".", "--group", "check")
    session.run("medallion-dq", "--version")
    session.run("medallion-dq", "check")


@nox.session(python=PYTHON)
def bronze(session: nox.Session) -> None:
    """Test the bronze layer: ingestion as landed."""
    pytest(session, *layer("bronze"))


@nox.session(python=PYTHON)
def silver(session: nox.Session) -> None:
    """Test the silver layer: rules and their examples, quarantine, nothing lost."""
    pytest(session, *layer("silver"))


@nox.session(python=PYTHON)
def gold(session: nox.Session) -> None:
    """Test the gold layer: figures, fail rules and their examples, atomic updates."""
    pytest(session, *layer("gold"))


@nox.session(python=PYTHON)
def job(session: nox.Session) -> None:
    """Run the whole job locally (validate, gate, publish) and every test outside the layers."""
    pytest(session, "tests", *(f"--ignore=tests/{layer}" for layer in LAYERS))
{%- if cookiecutter.include_container_backend %}


@nox.session(python=PYTHON)
def container(session: nox.Session) -> None:
    """Run the layer tests against a Spark Connect server in Docker (testcontainers), with
    Spark's light client: this session needs Docker, not Java."""
    env = {"DQ_BACKEND": "container"}
    paths = [path for name in LAYERS for path in layer(name)]
    pytest(session, *paths, group="container", env=env)


@nox.session(python=PYTHON)
def cluster(session: nox.Session) -> None:
    """Run the layer tests and the job on a Spark standalone cluster in Docker (a master, two
    workers, the Spark Connect server as its driver), as on a multi-node cluster; pytest's
    summary says how many tasks ran on each worker. Needs Docker, not Java."""
    env = {"DQ_BACKEND": "cluster"}
    examples = [path for name in LAYERS for path in layer(name)[1:]]  # the rule files
    pytest(session, "tests", *examples, group="container", env=env)
{%- endif %}
