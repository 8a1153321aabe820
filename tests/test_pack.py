"""The conventions pack template (`cookiecutter <repo> --directory pack`): what it bakes, the
answers it refuses before writing a file, and the pack as the runtime alone finds it (its
wheel, no engine). Its own `nox` (the library's examples on Spark) runs in `nox -s generated`."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest
import tomllib
from bakery import TEMPLATE_DIR, bake_cli

RUNTIME = TEMPLATE_DIR / "medallion-dq" / "runtime"


@pytest.fixture(scope="module")
def pack(tmp_path_factory, cookiecutter_config: Path) -> Path:
    out = tmp_path_factory.mktemp("pack")
    done = bake_cli(out, cookiecutter_config, {"pack_name": "Acme Data Conventions"}, "pack")
    assert done.returncode == 0, done.stderr
    return out / "acme-data-conventions"


def test_the_pack_bakes_a_distribution_named_in_the_packs_entry_point(pack: Path) -> None:
    files = sorted(p.relative_to(pack).as_posix() for p in pack.rglob("*") if p.is_file())
    assert files == [
        ".cookiecutter.json",
        ".gitignore",
        "CHANGELOG.md",
        "README.md",
        "noxfile.py",
        "pyproject.toml",
        "src/acme_data_conventions/CONVENTIONS.md",
        "src/acme_data_conventions/__init__.py",
        "src/acme_data_conventions/library.yml",
        "src/acme_data_conventions/policy.yml",
        "tests/conftest.py",
        "tests/test_pack.py",
    ]
    project = tomllib.loads((pack / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["version"] == "1.0.0"
    assert project["project"]["entry-points"]["medallion_dq.packs"] == {
        "acme": "acme_data_conventions"
    }
    sources = project["tool"]["uv"]["sources"]  # this checkout: its folders
    assert set(sources) == {"medallion-dq", "medallion-dq-dev"}
    assert "@medallion-dq" not in (pack / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        ({"pack": "medallion"}, "ERROR: pack: 'medallion': is medallion-dq's built-in pack"),
        ({"pack": "Acme Corp"}, "ERROR: pack: 'Acme Corp': must be a lowercase identifier"),
        ({"package_name": "import"}, "ERROR: package_name: 'import': is a Python keyword"),
        ({"pack_slug": "Acme Pack"}, "ERROR: pack_slug: 'Acme Pack': must be lowercase"),
        ({"owner": " "}, "ERROR: owner: ' ': is empty; give the owning team such as"),
        ({"description": "rules \\ checks"}, "ERROR: description: 'rules \\\\ checks': holds a"),
    ],
)
def test_a_wrong_answer_is_one_line_and_nothing_is_written(
    tmp_path: Path, cookiecutter_config: Path, answers: dict, said: str
) -> None:
    out = tmp_path / "out"
    done = bake_cli(out, cookiecutter_config, answers, "pack")
    assert done.returncode != 0
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists() or not any(out.iterdir())


def test_the_runtime_alone_finds_the_baked_packs_rules_and_policy(pack: Path, tmp_path) -> None:
    """The pack's wheel and the runtime's in a clean venv (no engine, no tools): a rule file's
    `use: acme.email(...)` resolves, as on Databricks."""
    wheels = tmp_path / "wheels"
    for folder in (RUNTIME, pack):
        build = [sys.executable, "-m", "uv", "build", "--wheel", "--out-dir", str(wheels)]
        subprocess.run([*build, str(folder)], check=True, capture_output=True, timeout=300)
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    install = [sys.executable, "-m", "uv", "pip", "install", "--python", str(python)]
    subprocess.run([*install, *wheels.glob("*.whl")], check=True, capture_output=True, timeout=300)
    rule = "{name: ok_email, use: acme.email(column=e), action: drop}"
    script = (
        "from medallion_dq import rules\n"
        f"text = 'dataset: d\\nrules:\\n  - {rule}\\n'\n"
        "rule, = rules.parse(text, 'd.yml').rules\n"
        "print(rule.constraint)\n"
        "import importlib.util as u; print(u.find_spec('medallion_dq.local'))\n"
        "from medallion_dq import library; print(library.library('acme').broken)\n"
    )
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["e RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$'", "None", "{}"]
