"""Checks of this pack: `nox` runs them all, `nox -l` lists them."""

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """The policy and every library rule's examples, judged on an embedded Spark server."""
    session.install("-e", ".", "--group", "check")  # medallion-dq-dev, no Spark yet
    # pyspark's wheel, built once by medallion-dq: PyPI has its source only.
    wheels = session.run("python", "-m", "medallion_dq.testing", silent=True, stderr=None)
    session.install("-e", ".", "--group", "test", "--find-links", str(wheels).strip())
    # A server for this run alone, stopped at its end: a pack has no project to stop it from.
    session.run("pytest", *session.posargs, env={"DQ_REUSE": "0"})
