"""The sample project these tests run against: the template beside this package, baked with its
default answers once per test process, so the framework is tested on exactly what teams get
(and with other answers where a test needs them: `sample_project(source_format="csv")`)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[2]  # the template repository holding this package


# The previous release: medallion-dq 0.5.0, "the template pins ~=0.5.0" (what `upgrade` upgrades).
PREVIOUS_RELEASE = "5915495"


def previous_release(folder: Path) -> Path:
    """The template repository at PREVIOUS_RELEASE (git archive), in `folder` (skipped in a
    clone without that commit: a shallow one)."""
    import pytest

    git = ["git", "-C", str(TEMPLATE)]
    if subprocess.run([*git, "cat-file", "-e", PREVIOUS_RELEASE]).returncode:
        pytest.skip(f"this checkout has no commit {PREVIOUS_RELEASE} (a shallow clone)")
    folder.mkdir(exist_ok=True)
    tar = subprocess.run(
        [*git, "archive", "--format=tar", PREVIOUS_RELEASE], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=tar.stdout, check=True)
    return folder


def bake_release(template: Path, out: Path, **answers: str) -> Path:
    """A project baked from `template` (a release's folder) into `out`, with `answers`."""
    from cookiecutter.main import cookiecutter

    out.mkdir()
    config = out / "cookiecutter.yaml"
    config.write_text(
        f"cookiecutters_dir: {json.dumps(str(out / 'cc'))}\nreplay_dir: {json.dumps(str(out / 'r'))}\n",
        encoding="utf-8",
    )
    return Path(
        cookiecutter(
            str(template), no_input=True, extra_context=answers, output_dir=str(out / "baked"),
            config_file=str(config),
        )
    )  # fmt: skip


@cache
def sample_project(**answers: str) -> Path:
    """Bake the default project (once per set of `answers`) and make its package importable,
    here and in the subprocesses the tests start: its pipelines import it for their rule files."""
    from cookiecutter.main import cookiecutter

    out = Path(tempfile.mkdtemp(prefix="medallion-sample-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    config = out / "cookiecutter.yaml"
    config.write_text(
        f"cookiecutters_dir: {json.dumps(str(out / 'cookiecutters'))}\n"
        f"replay_dir: {json.dumps(str(out / 'replay'))}\n",
        encoding="utf-8",
    )
    project = Path(
        cookiecutter(
            str(TEMPLATE),
            no_input=True,
            extra_context=answers,
            output_dir=str(out / "baked"),
            config_file=str(config),
        )
    )
    src = str(project / "src")
    sys.path.insert(0, src)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    return project


def project_copy(folder: Path, *, pack: str | None = None) -> Path:
    """A copy of the sample in `folder` (no local state); with `pack`, on that conventions pack
    (`[tool.medallion] pack`)."""
    shutil.copytree(sample_project(), folder, ignore=shutil.ignore_patterns(".local"))
    if pack is not None:
        pyproject = folder / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8")
        pyproject.write_text(
            text.replace("[tool.medallion]\n", f'[tool.medallion]\npack = "{pack}"\n', 1),
            encoding="utf-8",
        )
    return folder


def typed_like_silver(frame):
    """Landed order rows typed as the sample's silver pipeline types them (silver/orders.py),
    written again here: tests compare the pipeline with an independent computation."""
    from pyspark.sql import functions as F

    return frame.select(
        "order_id",
        "customer_id",
        F.expr("try_cast(order_ts AS TIMESTAMP)").alias("order_ts"),
        F.lower(F.trim("channel")).alias("channel"),
        F.upper(F.trim("currency")).alias("currency"),
        F.expr("try_cast(amount AS DECIMAL(12,2))").alias("amount"),
        F.expr("try_cast(quantity AS INT)").alias("quantity"),
    )


def project_files(root: Path) -> dict[str, float]:
    """A project's files (not local state nor caches) and when each was last written."""
    skip = {".local", "__pycache__", ".pytest_cache"}
    return {
        p.relative_to(root).as_posix(): p.stat().st_mtime
        for p in root.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(root).parts)
    }


def manifest_of(where):
    """The manifest `check` reads of the project at `where` (a folder, read afresh, or a
    `Project`): lenient, as a bundle that does not load is the bundle checks' to say."""
    from medallion_dq.project import Project

    return Project.of(where).manifest(lenient=True)
