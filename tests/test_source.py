"""Where a baked project gets medallion-dq: `[tool.uv.sources]`, written by the post-generation
hook from the template repository it was baked from (git, no network)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bakery import TEMPLATE_DIR, bake, commit_all, git
from test_hooks import post_gen

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A template repository with the package folder, one commit on main."""
    repo = tmp_path / "upstream"
    (repo / "medallion-dq").mkdir(parents=True)
    (repo / "medallion-dq" / "pyproject.toml").write_text("[project]\nname = 'medallion-dq'\n")
    commit_all(repo, "one")
    return repo


@pytest.fixture
def clone(upstream: Path, tmp_path: Path) -> Path:
    """A clone of ``upstream``: what cookiecutter (or cruft) bakes from a git URL."""
    target = tmp_path / "clone"
    git(upstream, "clone", "--quiet", str(upstream), str(target))
    return target


def test_a_clone_gives_its_origin_at_the_baked_commit(clone: Path, upstream: Path) -> None:
    source = post_gen.template_source(clone)
    assert source == {
        "git": upstream.resolve().as_uri(),
        "subdirectory": "medallion-dq",
        "rev": git(clone, "rev-parse", "HEAD"),
    }


def test_a_checkout_without_origin_gives_its_folder(upstream: Path) -> None:
    assert post_gen.template_source(upstream) == {"path": str(upstream / "medallion-dq")}


def test_local_changes_or_an_unpublished_commit_give_the_folder(clone: Path) -> None:
    (clone / "medallion-dq" / "pyproject.toml").write_text("[project]\nname = 'changed'\n")
    assert "path" in post_gen.template_source(clone)
    git(clone, "commit", "--quiet", "--all", "-m", "local only")  # not on any remote branch
    assert "path" in post_gen.template_source(clone)
    # cookiecutter --checkout names a ref it fetched from the remote: that one is published
    assert "git" in post_gen.template_source(clone, checkout="v1")


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        ("git@github.com:acme/template.git", "ssh://git@github.com/acme/template.git"),
        ("https://x-access-token:s3cret@github.com/acme/t.git", "https://github.com/acme/t.git"),
        ("https://user@dev.azure.com:8443/acme/t", "https://dev.azure.com:8443/acme/t"),
        ("ssh://git@gitlab.example/acme/t.git", "ssh://git@gitlab.example/acme/t.git"),
    ],
)
def test_remote_urls_are_urls_uv_takes_and_carry_no_credentials(
    remote: str, url: str, tmp_path: Path
) -> None:
    assert post_gen.remote_url(remote, tmp_path) == url


def test_a_remote_folder_becomes_a_file_url(tmp_path: Path) -> None:
    assert post_gen.remote_url("../shared/template", tmp_path / "clone") == (
        (tmp_path / "shared" / "template").resolve().as_uri()
    )


def test_the_bake_writes_the_source_and_the_pip_line(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    """A bake from this checkout: uv's sources (the runtime and the engine with its tools)
    and pip's requirements say the same places."""
    project = bake(tmp_path / "out", cookiecutter_config)
    source = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    entries = source["tool"]["uv"]["sources"]
    dev = post_gen.template_source(TEMPLATE_DIR)  # a folder, or a git URL (a clone: CI's)
    if "path" in dev:
        runtime = {"path": str(Path(dev["path"]) / "runtime")}
        assert (Path(runtime["path"]) / "pyproject.toml").is_file()
    else:
        runtime = {**dev, "subdirectory": "medallion-dq/runtime"}
    assert entries == {"medallion-dq": runtime, "medallion-dq-dev": dev}
    readme = (project / "README.md").read_text(encoding="utf-8")
    runtime, tools = post_gen.pip_requirements(dev)
    assert f"pip install '{runtime}' '{tools}'" in readme
    assert "@medallion-dq-" not in readme


def test_index_bakes_no_source(tmp_path: Path, cookiecutter_config: Path) -> None:
    project = bake(tmp_path / "out", cookiecutter_config, medallion_dq_source="index")
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert "sources" not in pyproject.get("tool", {}).get("uv", {})
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert "package index" in readme
    assert "@medallion-dq-" not in readme


def test_pip_requirements_for_git_and_path() -> None:
    git_source = {"git": "https://h/a/t.git", "subdirectory": "medallion-dq", "rev": "abc"}
    assert post_gen.pip_requirements(git_source) == [
        "medallion-dq @ git+https://h/a/t.git@abc#subdirectory=medallion-dq/runtime",
        "medallion-dq-dev[local] @ git+https://h/a/t.git@abc#subdirectory=medallion-dq",
    ]
    assert post_gen.pip_requirements({"path": "/a b/medallion-dq"}) == [
        "medallion-dq @ file:///a%20b/medallion-dq/runtime",
        "medallion-dq-dev[local] @ file:///a%20b/medallion-dq",
    ]


def test_uv_resolves_the_baked_sources_of_both_distributions(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    """The baked project's `[tool.uv.sources]` and medallion-dq-dev's own (the runtime, its
    workspace member) name the runtime alike, so uv installs the project's `check` group: a
    conflict ("conflicting URLs for package medallion-dq") stopped every nox session once."""
    import shutil
    import subprocess

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed; nox -s tests installs it")
    project = bake(tmp_path / "out", cookiecutter_config)
    subprocess.run([uv, "venv", "--quiet", str(tmp_path / "venv")], check=True)
    venv, group = str(tmp_path / "venv"), f"{project / 'pyproject.toml'}:check"
    done = subprocess.run(
        [uv, "pip", "install", "--dry-run", "--python", venv, "-e", str(project), "--group", group],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # ` + medallion-dq==0.5.0 (from file:///…/runtime)`, or from git+…#subdirectory=…
    installs = re.findall(r"^ \+ (medallion-dq(?:-dev)?)\b", done.stderr, re.MULTILINE)
    assert sorted(installs) == ["medallion-dq", "medallion-dq-dev"], done.stderr
