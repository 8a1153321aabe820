"""Checks of this project, layer by layer: `nox` runs the default set, `nox -l` lists them.

Each layer's session runs tests/<layer>/ (a test file you add there runs without touching this
file) and the examples of its rule files (src/<package>/rules/<layer>/); `job` runs every other
test. The Spark sessions share one local Spark Connect server (CONVENTIONS.md, "Working on this
machine").
"""

from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "rules", "bronze", "silver", "gold", "job"]
PYTHON = "{{ cookiecutter.python_version }}"
LAYERS = ("bronze", "silver", "gold")
RULES = Path("src/{{ cookiecutter.package_name }}/rules")


def pytest(session: nox.Session, *args: str, group: str = "test", env: dict | None = None) -> None:
    links = []
    if group == "test":  # pyspark's wheel, built once by medallion-dq: PyPI has its source only
        session.install("-e", ".", "--group", "check")  # medallion-dq-dev, no Spark yet
        wheels = session.run("python", "-m", "medallion_dq.testing", silent=True, stderr=None)
        links = ["--find-links", str(wheels).strip()]
    session.install("-e", ".", "--group", group, *links)
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
    """Check rule files, layer conventions, bundle YAML and that the rule files agree with the
    data contracts (contracts/), statically (no Spark)."""
    session.install("-e", ".", "--group", "check")
    session.run("medallion-dq", "--version")
    session.run("medallion-dq", "check")
    for contract in sorted(Path("contracts").glob("*.odcs.yaml")):
        session.run("medallion-dq", "contract", "check", str(contract))


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
