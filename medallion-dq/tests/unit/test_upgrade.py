"""`medallion-dq conventions diff --to`: a candidate that cannot be tried is one line and exit 2,
before any Spark server starts (the comparison itself: tests/engine/test_pack_upgrade.py)."""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from medallion_dq.tools import cli
from sample import project_copy

LIBRARY = """\
rules:
  - name: plausible_amount
    params: {column: column}
    constraint: "{column} >= 0"
    description: "{column} is an amount"
    owner: finance-platform
"""
USING = """\
dataset: silver_orders
layer: silver
rules:
  - {name: valid_amount, use: acme.plausible_amount(column=amount), action: drop}
"""


@pytest.fixture
def project(tmp_path, installed_pack, monkeypatch) -> Path:
    """The sample on pack acme 1.0.0, its silver orders rule from the library."""
    site = installed_pack(LIBRARY).parent
    root = project_copy(tmp_path / "acme", pack="acme")
    (root / "src/acme_orders/rules/silver/orders.yml").write_text(USING, encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setattr("medallion_dq.tools.diff.judge_all", _no_spark)
    return site


def _no_spark(*_args, **_kwargs):
    pytest.fail("the candidate should have been refused before any data is judged")


def wheel(
    site: Path,
    out: Path,
    *,
    pack: str = "acme",
    library: str = LIBRARY,
    extra=(),
    package: str = "acme_conventions",
) -> Path:
    """The installed pack's files as a wheel (a zip of the package and its .dist-info)."""
    path = out / "acme_conventions-1.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("acme_conventions/__init__.py", "")
        archive.writestr("acme_conventions/library.yml", library)
        info = "acme_conventions-1.1.0.dist-info"
        archive.writestr(f"{info}/METADATA", "Name: acme-conventions\nVersion: 1.1.0\n")
        archive.writestr(f"{info}/entry_points.txt", f"[medallion_dq.packs]\n{pack} = {package}\n")
        for name, text in extra:
            archive.writestr(name, text)
    return path


def said(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_diff_without_a_candidate_is_one_line(project, capsys):
    assert cli.main(["conventions", "diff"]) == 2
    assert said(capsys) == ["error: conventions diff takes --to <wheel, folder or requirement>"]


def test_a_candidate_of_another_pack_is_refused(project, tmp_path, capsys):
    candidate = wheel(project, tmp_path, pack="other")
    assert cli.main(["conventions", "diff", "--to", str(candidate)]) == 2
    assert said(capsys) == ["error: the candidate is pack 'other'; the project uses 'acme'"]


def test_a_wheel_member_that_would_land_outside_is_refused_and_not_written(
    project, tmp_path, capsys
):
    candidate = wheel(project, tmp_path, extra=[("../../escaped.txt", "x")])
    assert cli.main(["conventions", "diff", "--to", str(candidate)]) == 2
    (line,) = said(capsys)
    assert line == f"error: {candidate.name}: member '../../escaped.txt' would be written outside"
    assert not list(tmp_path.parent.rglob("escaped.txt"))


def test_a_rule_the_candidate_no_longer_has_is_named(project, tmp_path, capsys):
    candidate = wheel(project, tmp_path, library="rules: []\n")
    assert cli.main(["conventions", "diff", "--to", str(candidate)]) == 2
    (line,) = said(capsys)
    assert line.startswith("error: DQ031 rules/silver/orders.yml: rule 'valid_amount'")
    assert "plausible_amount" in line


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("missing.whl", "error: --to missing.whl: no such file"),
        ("not-a-wheel.whl", "error: {tmp}/not-a-wheel.whl: not a readable wheel"),
        (".", "error: {tmp}: no entry point"),
    ],
)
def test_a_candidate_that_is_no_pack_is_one_line(project, tmp_path, capsys, given, expected):
    (tmp_path / "not-a-wheel.whl").write_text("text")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    target = given if given == "missing.whl" else str(tmp_path / given)
    assert cli.main(["conventions", "diff", "--to", target]) == 2
    (line,) = said(capsys)
    assert line.startswith(expected.format(tmp=tmp_path.resolve()).split(": no entry")[0])


def test_a_project_on_the_built_in_conventions_names_the_setting(project, capsys):
    pyproject = Path("pyproject.toml")
    pyproject.write_text(pyproject.read_text().replace('pack = "acme"\n', ""))
    Path("src/acme_orders/rules/silver/orders.yml").unlink()
    assert cli.main(["conventions", "diff", "--to", str(project)]) == 2
    assert said(capsys)[0].startswith("error: the project uses the built-in conventions")


def test_an_output_that_cannot_be_written_is_said_before_anything_runs(project, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    candidate = wheel(project, tmp_path)
    out = tmp_path / "file" / "pr.md"  # a folder that is a file
    assert cli.main(["conventions", "diff", "--to", str(candidate), "--markdown", str(out)]) == 2
    (line,) = said(capsys)
    assert line.startswith(f"error: --markdown {out}: ")


# --------------------------------------------------------------------------- read, never run

BACKEND = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"
PYPROJECT = """\
[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]
"""
PROJECT_TABLE = """
[project]
name = "acme-conventions"
version = "1.1.0"

[project.entry-points."medallion_dq.packs"]
acme = "acme_conventions"
"""


def source(folder: Path, marker: Path, *, table: bool = True, pyproject: bool = True) -> Path:
    """A pack's source folder whose build writes `marker`: setup.py, and an in-tree build backend
    with no requirements, so a build would run here, offline."""
    package = folder / "src" / "acme_conventions"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "library.yml").write_text("rules: []\n")
    (folder / "setup.py").write_text(BACKEND.format(marker=str(marker)))
    (folder / "backend.py").write_text(BACKEND.format(marker=str(marker)))
    if pyproject:
        (folder / "pyproject.toml").write_text(PYPROJECT + (PROJECT_TABLE if table else ""))
    return folder


def sdist(folder: Path, out: Path) -> Path:
    out.mkdir(exist_ok=True)
    path = out / "acme_conventions-1.1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        archive.add(folder, arcname="acme_conventions-1.1.0")
    return path


@pytest.mark.parametrize(
    "form",
    ["sdist-file", "sdist-url", "folder-url", "index", "setup-py-folder", "built-metadata-folder"],
)
def test_a_candidate_that_would_have_to_be_built_is_refused_and_nothing_runs(
    project, tmp_path, capsys, monkeypatch, form
):
    """A candidate is read, never run: an sdist, a requirement resolving to one (by URL, or on
    an index with no wheel: here a find-links folder, offline) or a source folder whose pack only
    a build names is one line, exit 2, and its setup.py / build backend never ran."""
    marker = tmp_path / "built.txt"
    folder = source(
        tmp_path / "pack",
        marker,
        table=form != "built-metadata-folder",
        pyproject=form != "setup-py-folder",
    )
    archive = sdist(folder, tmp_path / "links")
    for name, value in {"NO_INDEX": "1", "FIND_LINKS": str(archive.parent)}.items():
        monkeypatch.setenv(f"UV_{name}", value)
        monkeypatch.setenv(f"PIP_{name}", value)
    monkeypatch.setenv("UV_OFFLINE", "1")
    if form == "index" and not shutil.which("uv"):
        pytest.skip("fetching a requirement needs uv (or pip) on PATH")
    given = {
        "sdist-file": str(archive),
        "sdist-url": f"acme-conventions @ {archive.as_uri()}",
        "folder-url": f"acme-conventions @ {folder.as_uri()}",
        "index": "acme-conventions==1.1.0",
    }.get(form, str(folder))
    assert cli.main(["conventions", "diff", "--to", given]) == 2
    assert not marker.exists()
    (line,) = said(capsys)
    assert "a candidate is read, never run: build its wheel (uv build --wheel)" in line, line


@pytest.mark.parametrize("where", [".", "src/acme_conventions"])
def test_a_source_folder_with_its_pack_in_pyproject_is_read_not_built(
    project, tmp_path, capsys, where
):
    """The pack's source folder, or its package folder within: library.yml is data, read from
    there (here it drops the rule the project uses); its setup.py never runs."""
    marker = tmp_path / "built.txt"
    folder = source(tmp_path / "pack", marker)
    assert cli.main(["conventions", "diff", "--to", str(folder / where)]) == 2
    (line,) = said(capsys)
    assert line.startswith("error: DQ031 rules/silver/orders.yml: rule 'valid_amount'")
    assert "pack 'acme' has no rule 'plausible_amount'" in line
    assert not marker.exists()


def test_a_package_folder_that_nothing_names_is_one_line(project, tmp_path, capsys):
    package = tmp_path / "loose" / "acme_conventions"
    package.mkdir(parents=True)
    (package / "library.yml").write_text(LIBRARY)
    assert cli.main(["conventions", "diff", "--to", str(package)]) == 2
    assert said(capsys) == [
        f"error: {package}: holds library.yml, but no .dist-info beside it nor pyproject.toml"
        " above it names its pack: give the pack's source folder or its wheel"
    ]


@pytest.mark.parametrize("package", ["../../etc", "/etc", "acme conventions"])
def test_a_wheel_naming_a_path_as_its_package_is_refused(project, tmp_path, capsys, package):
    """The entry point's package is where library.yml is read: a path would read outside."""
    candidate = wheel(project, tmp_path, package=package)
    assert cli.main(["conventions", "diff", "--to", str(candidate)]) == 2
    assert said(capsys) == [
        f"error: {candidate.name}: pack 'acme' names {package!r}, which is no package name"
    ]


def test_a_wheel_too_large_unzipped_is_refused_before_a_byte_is_written(
    project, tmp_path, capsys, monkeypatch
):
    from medallion_dq.tools import upgrade

    monkeypatch.setattr(upgrade, "MAX_UNPACKED", 64)  # the wheel's members hold more
    written = []
    monkeypatch.setattr(zipfile.ZipFile, "extractall", lambda *a, **k: written.append(a))
    candidate = wheel(project, tmp_path)
    assert cli.main(["conventions", "diff", "--to", str(candidate)]) == 2
    assert said(capsys) == [f"error: {candidate.name}: unzips to more than 64 bytes"]
    assert written == []


def test_an_installed_package_folder_is_read_among_other_packs(project, capsys):
    """A site holding several packs: the .dist-info naming this package folder names its pack."""
    other = project / "aaa_other-2.0.dist-info"  # sorts first
    other.mkdir()
    (other / "METADATA").write_text("Name: aaa-other\nVersion: 2.0\n")
    (other / "entry_points.txt").write_text("[medallion_dq.packs]\nother = aaa_other\n")
    assert cli.main(["conventions", "diff", "--to", str(project / "acme_conventions")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "conventions diff: pack acme 1.0.0 -> 1.0.0",
        "no rule of the project changes",
    ]
