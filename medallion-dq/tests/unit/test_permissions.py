"""A project the user may not write: a copy owned by root, used by a second user of the machine;
a lake or a cache of another user; a read-only file system; a full disk.

Every command that would write says so in one line naming the path and what it needed there,
exits 2 and changes nothing; commands that only read still work. `run` and `check --examples`
refuse before a Spark server starts, so this tier needs none (its conftest fails a test that
asks for one; a server started by the CLI would show as minutes, and as a changed tree).

The second user is made here (useradd) and the CLI runs as that user through setpriv; it keeps
one capability, reading any file (CAP_DAC_READ_SEARCH), so that it can run this environment's
Python wherever it is installed (root's home here): writing stays the user's own."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sample import project_copy

USER = "dq-second"
CLI = [sys.executable, "-m", "medallion_dq"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("useradd") and shutil.which("setpriv")),
    reason="makes a second OS user: runs as root, with useradd and setpriv",
)


@pytest.fixture(scope="module")
def second_user():
    made = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", USER], check=True)
        made = True
    yield pwd.getpwnam(USER)
    if made:
        subprocess.run(["userdel", USER], check=False)


@pytest.fixture
def home(tmp_path, second_user) -> Path:
    """The second user's own home: its cache (~/.cache/medallion-dq) is writable."""
    folder = tmp_path / "home"
    folder.mkdir()
    os.chown(folder, second_user.pw_uid, second_user.pw_gid)
    return folder


def as_user(user, home: Path, cwd: Path, *args: str, **env: str):
    """`medallion-dq ARGS` in `cwd`, run by `user`."""
    setpriv = [
        "setpriv",
        f"--reuid={user.pw_uid}",
        f"--regid={user.pw_gid}",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
    ]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DQ_")}
    environment |= {"HOME": str(home), "DQ_REUSE": "1", **env}
    return subprocess.run(
        [*setpriv, "--", *CLI, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def tree(root: Path) -> dict[str, str]:
    """Every file and folder under `root`: its content's digest (a folder: its mode), so that a
    file written, removed, made or changed in mode shows."""
    out = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        if path.is_dir():
            out[key] = f"folder {path.stat().st_mode:o}"
        else:
            out[key] = hashlib.sha256(path.read_bytes()).hexdigest() + f" {path.stat().st_mode:o}"
    return out


def refused(done, path: str, what: str) -> None:
    """Exit 2 with one line, naming `path` and what the command needed there."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith(f"error: cannot write {path} ("), errors[0]
    assert what in errors[0] and "fix: " in errors[0], errors[0]


@pytest.fixture
def read_only(tmp_path) -> Path:
    """The sample, owned by root, with a lake's event log in it (what `report` reads): the
    second user may read all of it and write none."""
    project = project_copy(tmp_path / "project")
    (project / ".local" / "lake" / "dev" / "event_log" / "_delta_log").mkdir(parents=True)
    return project


WRITERS = [
    (["run", "--job", "medallion"], ".local/lake/dev", "the run keeps its lake there"),
    (["run", "--job", "medallion", "--fresh"], ".local/runs", "the run keeps its lake there"),
    (["check", "--examples"], "{root}/.local/check", "Spark keeps the command's state there"),
    (["report"], ".local/dq-report.html", "give --out a folder you can write"),
    (
        ["contract", "import", "contracts/orders.odcs.yaml"],
        "src/acme_orders/rules/silver/orders.yml",
        "contract import writes the rule file",
    ),
    (
        ["add", "source", "shipments", "--from", "fixtures/landing/orders", "--dry-run"],
        "src/pipelines/validation/bronze/shipments_raw.py",
        "add source writes it",
    ),
    (
        ["add", "source", "shipments", "--from", "fixtures/landing/orders"],
        "src/pipelines/validation/bronze/shipments_raw.py",
        "add source writes it",
    ),
    (
        ["profile", "fixtures/landing/orders", "--dataset", "orders", "--out", "rules.yml"],
        "{root}/rules.yml",
        "profile --out asked for it",
    ),
    (
        ["contract", "export", "--dataset", "orders", "--out", "contracts/out.odcs.yaml"],
        "{root}/contracts/out.odcs.yaml",
        "contract export --out asked for it",
    ),
]


@pytest.mark.parametrize(("args", "path", "what"), WRITERS, ids=[" ".join(w[0]) for w in WRITERS])
def test_a_command_that_writes_a_read_only_project_says_where_and_changes_nothing(
    read_only, second_user, home, args, path, what
):
    before = tree(read_only)
    done = as_user(second_user, home, read_only, *args)
    refused(done, path.format(root=read_only), what)
    assert tree(read_only) == before
    assert not list(home.rglob("*.jar")), "no Spark server was started"


def test_commands_that_only_read_a_read_only_project_work(read_only, second_user, home):
    before = tree(read_only)
    done = as_user(second_user, home, read_only, "check")
    assert (done.returncode, done.stdout.strip()) == (0, "check: 0 error(s), 0 warning(s)")
    done = as_user(second_user, home, read_only, "lake", "check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "lake check: 0 table(s) of .local/lake/dev, all sound"
    done = as_user(second_user, home, read_only, "spark", "status")
    assert (done.returncode, done.stdout.strip()) == (
        0,
        f"spark: no shared Spark server runs for {read_only}",
    )
    assert tree(read_only) == before


def test_a_lake_of_another_user_in_a_project_of_ones_own(tmp_path, second_user, home):
    """The project is the second user's; its lake was made by root (a run under sudo)."""
    project = project_copy(tmp_path / "project")
    shutil.chown(project, second_user.pw_uid, second_user.pw_gid)
    for path in project.rglob("*"):
        os.chown(path, second_user.pw_uid, second_user.pw_gid)
    lake = project / ".local" / "lake" / "dev"
    lake.mkdir(parents=True)
    os.chown(project / ".local", second_user.pw_uid, second_user.pw_gid)
    before = tree(project)
    done = as_user(second_user, home, project, "run", "--job", "medallion")
    refused(done, ".local/lake/dev", "the run keeps its lake there")
    assert tree(project) == before


def test_a_cache_of_another_user(tmp_path, second_user, home):
    """~/.cache made by root (a `sudo pip install` that ran Spark): the jars' folder is named,
    with DQ_CACHE_DIR as the fix, before a server starts or the project is touched."""
    project = project_copy(tmp_path / "project")
    for path in [project, *project.rglob("*")]:
        os.chown(path, second_user.pw_uid, second_user.pw_gid)
    (home / ".cache").mkdir()  # root's
    before = tree(project)
    for args in (["check", "--examples"], ["run", "--job", "medallion"]):
        done = as_user(second_user, home, project, *args)
        refused(done, f"{home}/.cache/medallion-dq", "fix: set DQ_CACHE_DIR to a folder")
    assert tree(project) == before


def test_a_read_only_file_system(tmp_path):
    """Even root cannot write a folder mounted read-only (EROFS): the project is bound read-only
    in a mount namespace of the command's own (unshare)."""
    project = project_copy(tmp_path / "project")
    mount = f"mount --bind {project} {project} && mount -o remount,ro,bind {project}"
    if subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True).returncode:
        pytest.skip("no mount namespace here (unshare -m)")
    before = tree(project)
    for args, path in (
        (["run", "--job", "medallion"], ".local/lake/dev"),
        (["contract", "import", "contracts/orders.odcs.yaml"], "src/acme_orders/rules/silver"),
    ):
        command = " ".join(["exec", *CLI, *args])
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", f"{mount} && {command}"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert "a read-only file system" in done.stderr, done.stderr
        assert f"error: cannot write {path}" in done.stderr
        assert "Traceback" not in done.stderr
    assert tree(project) == before


def test_a_full_disk_is_one_line(tmp_path):
    """/dev/full: every write fails with ENOSPC; what the command wrote there is named."""
    project = project_copy(tmp_path / "project")
    done = subprocess.run(
        [*CLI, "contract", "export", "--dataset", "orders", "--out", "/dev/full"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: cannot write /dev/full (the disk is full): contract export --out asked for it;"
        " fix: free space on that disk"
    )


def test_remove_source_in_a_read_only_project_removes_nothing(read_only, second_user, home):
    """What `add source` wrote (its record names the files and their digests): none is removed
    unless every one can be."""
    added = read_only / "fixtures" / "landing" / "orders"
    files = {p.relative_to(read_only).as_posix(): p for p in sorted(added.iterdir())[:2]}
    record = read_only / ".local" / "added" / "shipments.json"
    record.parent.mkdir(parents=True)
    digests = {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in files.items()}
    record.write_text(json.dumps({"files": digests}))
    before = tree(read_only)
    done = as_user(second_user, home, read_only, "remove", "source", "shipments")
    refused(done, ".local/added", "remove source deletes its files there")
    assert tree(read_only) == before
