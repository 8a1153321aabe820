"""Checks of this project, layer by layer: `nox` runs the default set.

Spark sessions start one local Spark Connect server each (embedded, Java 17+); `container`
runs the same layer tests against a server in Docker, `slow` the property-based tests.
"""

import os
import shutil
import subprocess

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
PYTHON = "{{ cookiecutter.python_version }}"
PACKAGE = "{{ cookiecutter.package_name }}"


def docker_running() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0


nox.options.sessions = ["lint", "rules", "bronze", "silver", "gold", "job"]
{%- if cookiecutter.include_container_backend %}
if docker_running():
    nox.options.sessions.append("container")
{%- endif %}


def install(session: nox.Session, group: str = "test") -> None:
    session.install("-e", ".", "--group", group)


def pytest(session: nox.Session, *tests: str, env: dict | None = None) -> None:
    session.run("pytest", "-v", *tests, *session.posargs, env=env)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Lint and format-check the code with ruff."""
    session.install("--group", "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def rules(session: nox.Session) -> None:
    """Check rule files, layer conventions and bundle YAML statically (no Spark)."""
    install(session)
    session.run("python", "-m", PACKAGE, "check")
    static = ["test_rules.py", "test_conventions.py", "test_bundle.py", "test_infrastructure.py"]
    pytest(session, *(f"tests/{name}" for name in static), "-m", "not spark")


@nox.session(python=PYTHON)
def bronze(session: nox.Session) -> None:
    """Test the bronze layer: ingestion, schema, bad files."""
    install(session)
    pytest(session, "tests/test_bronze.py")


@nox.session(python=PYTHON)
def silver(session: nox.Session) -> None:
    """Test the silver layer and the expectation semantics on the real engine."""
    install(session)
    pytest(
        session, "tests/test_silver.py", "tests/test_expectations.py", "tests/test_seed_examples.py"
    )


@nox.session(python=PYTHON)
def gold(session: nox.Session) -> None:
    """Test the gold layer: aggregates, fail rules, atomic updates, uniqueness."""
    install(session)
    pytest(session, "tests/test_gold.py")


@nox.session(python=PYTHON)
def job(session: nox.Session) -> None:
    """Run the whole job locally (validate, gate, publish) and the report."""
    install(session)
    pytest(session, "tests/test_job.py", "tests/test_report.py")


@nox.session(python=PYTHON)
def slow(session: nox.Session) -> None:
    """Property-based 'nothing lost' tests on the real engine (hypothesis)."""
    install(session)
    pytest(session, "tests/test_reliability.py")
{%- if cookiecutter.include_container_backend %}


@nox.session(python=PYTHON)
def container(session: nox.Session) -> None:
    """Run the layer tests against a Spark Connect server in Docker (testcontainers)."""
    install(session)
    env = {
        "DQ_BACKEND": "container",
        "TESTCONTAINERS_RYUK_DISABLED": os.environ.get("TESTCONTAINERS_RYUK_DISABLED", "true"),
    }
    layers = ["test_container.py", "test_bronze.py", "test_silver.py", "test_gold.py"]
    pytest(session, *(f"tests/{name}" for name in layers), env=env)
{%- endif %}
