"""Hostile and wrong answers: refused with a clear ERROR line and nothing written, or kept as data.

Refusals go through the real ``cookiecutter`` command line in a child process, so the tests see
what a user sees: the exit code, the ``ERROR: <field>:`` lines the pre-generation hook prints on
stderr, and the folder left behind (none). Accepted hostile answers are baked and the project is
checked: Python compiles, YAML/TOML/JSON parse, and the hostile text is still data.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bakery import (
    TEMPLATE_DIR,
    bake,
    bake_api_subprocess,
    bake_cli,
    inert_problems,
    markup_problems,
    parse_problems,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HOOKS = TEMPLATE_DIR / "hooks"
CANARY = "ZQX"
RAW = "{% raw %}", "{% endraw %}"  # lets a literal "{{" reach the hook through --no-input


def load_hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no hooks/__pycache__
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = writes
    return module


pre_gen = load_hook("pre_gen_project")
post_gen = load_hook("post_gen_project")


@dataclass(frozen=True)
class Refused:
    """Expected refusal. ``field`` None: cookiecutter itself refuses before the hook runs."""

    answers: dict[str, Any]
    field: str | None
    stderr: str = ""  # a fragment the refusal must print
    via_api: bool = False  # non-string answers cannot be typed on the command line
    leftover_dirs: tuple[str, ...] = ()  # empty parents cookiecutter creates before any hook
    id: str = field(default="", compare=False)


REFUSED = [
    Refused({"project_name": ""}, "project_name", "is empty", id="name-empty"),
    Refused({"project_name": "   "}, "project_name", "is empty", id="name-spaces"),
    Refused({"project_name": " Acme "}, "project_name", "trailing spaces", id="name-padded"),
    Refused({"project_name": "Acme\nOrders"}, "project_name", "line breaks", id="name-newline"),
    Refused({"project_name": "Acme\tOrders"}, "project_name", "tabs", id="name-tab"),
    Refused({"project_name": "A" * 500}, "project_name", "500 characters", id="name-very-long"),
    Refused({"project_name": "!!!"}, "project_name", "no letter", id="name-no-letters"),
    Refused(
        {"project_name": "C:\\new\\table \\N{DASH} end\\"},
        "project_name",
        "backslash",
        id="name-backslashes",
    ),
    Refused({"description": "x\\"}, "description", "backslash", id="description-backslash"),
    Refused({"project_name": "Acme\u202eOrders"}, "project_name", "control", id="name-bidi"),
    Refused(
        {"project_name": f"{RAW[0]}{{{{ cookiecutter.x }}}}{RAW[1]}"},
        "project_name",
        "markup",
        id="name-jinja-expression-literal",
    ),
    Refused(
        {"project_name": f"{RAW[0]}{{% if x %}}{RAW[1]}"},
        "project_name",
        "markup",
        id="name-jinja-tag-literal",
    ),
    Refused({"project_name": "{{ }}"}, None, "TemplateSyntaxError", id="name-jinja-broken"),
    Refused({"project_name": "{% if %}"}, None, "TemplateSyntaxError", id="name-jinja-tag"),
    Refused({"description": "${var.catalog}"}, "description", "markup", id="description-bundle"),
    Refused(
        {"description": f"{RAW[0]}{{# x #}}{RAW[1]}"},
        "description",
        "markup",
        id="description-jinja-comment",
    ),
    Refused({"description": "x" * 400}, "description", "400 characters", id="description-long"),
    Refused({"project_slug": "../evil"}, "project_slug", "try 'evil'", id="slug-parent-dir"),
    Refused(
        {"project_slug": "nested/evil"},
        "project_slug",
        "try 'nested-evil'",
        leftover_dirs=("nested",),
        id="slug-nested",
    ),
    Refused({"project_slug": "Acme Orders"}, "project_slug", "acme-orders", id="slug-spaces"),
    Refused({"project_slug": "1-orders"}, "project_slug", "start with a letter", id="slug-digit"),
    Refused({"project_slug": "orders-"}, "project_slug", "try 'orders'", id="slug-dash-end"),
    Refused({"project_slug": "a" * 65}, "project_slug", "65 characters", id="slug-long"),
    Refused({"project_slug": "acme'''x"}, "project_slug", "lowercase", id="slug-quotes"),
    Refused({"package_name": "class"}, "package_name", "keyword", id="package-keyword"),
    Refused({"package_name": "match"}, "package_name", "soft keyword", id="package-match"),
    Refused({"package_name": "type"}, "package_name", "soft keyword", id="package-type"),
    Refused({"package_name": "pyspark"}, "package_name", "shadow", id="package-pyspark"),
    Refused({"package_name": "delta"}, "package_name", "shadow", id="package-delta"),
    Refused({"package_name": "test"}, "package_name", "shadow", id="package-test"),
    Refused({"package_name": "json"}, "package_name", "shadow", id="package-stdlib"),
    Refused({"package_name": "pipelines"}, "package_name", "shadow", id="package-src-folder"),
    Refused({"package_name": "acme-orders"}, "package_name", "acme_orders", id="package-dash"),
    Refused({"package_name": "Acme"}, "package_name", "lowercase", id="package-upper"),
    Refused({"package_name": "caf\u00e9"}, "package_name", "ASCII", id="package-non-ascii"),
    Refused({"package_name": "../x"}, "package_name", "identifier", id="package-path"),
    Refused({"package_name": "x'''"}, "package_name", "identifier", id="package-quotes"),
    Refused({"package_name": 'x"""'}, "package_name", "identifier", id="package-dquotes"),
    Refused({"package_name": "x\\y"}, "package_name", "identifier", id="package-backslash"),
    Refused({"dev_catalog": "main.sales"}, "dev_catalog", "'main_sales'", id="catalog-dot"),
    Refused({"prod_catalog": "prod-eu"}, "prod_catalog", "'prod_eu'", id="catalog-dash"),
    Refused({"prod_catalog": "system"}, "prod_catalog", "reserved", id="catalog-reserved"),
    Refused({"dev_schema": "acme orders"}, "dev_schema", "'acme_orders'", id="schema-space"),
    Refused({"dev_schema": "1st"}, "dev_schema", "starts with a digit", id="schema-digit"),
    Refused({"dev_schema": "s" * 256}, "dev_schema", "255", id="schema-long"),
    Refused(
        {"prod_schema": 'x"; DROP TABLE t; --'},
        "prod_schema",
        "backquotes",
        id="schema-sql-injection",
    ),
    Refused({"prod_schema": "sch\u00e9ma"}, "prod_schema", "ASCII", id="schema-non-ascii"),
    Refused(
        {"dev_catalog": "main", "prod_catalog": "main", "prod_schema": "acme_orders"},
        "prod_schema",
        "overwrite production",
        id="dev-equals-prod",
    ),
    Refused(
        {"include_container_backend": 2},
        "include_container_backend",
        "boolean",
        via_api=True,
        id="container-number",
    ),
    Refused({"include_container_backend": "maybe"}, None, "boolean", id="container-maybe"),
    Refused({"python_version": "3.9"}, None, "choices", id="python-unsupported"),
    Refused({"source_format": "parquet"}, None, "choices", id="format-unsupported"),
    Refused({"medallion_dq_source": "pypi"}, None, "choices", id="source-unsupported"),
    Refused({"ci": "jenkins"}, None, "choices", id="ci-unknown"),
    Refused({"conventions_pack": "Acme"}, "conventions_pack", "lowercase", id="pack-upper"),
    Refused(
        {"conventions_pack": "acme"}, "conventions_pack_requirement", "write e.g.", id="pack-no-req"
    ),
    Refused(
        {"conventions_pack_requirement": "acme-data-conventions~=1.0"},
        "conventions_pack_requirement",
        "leave it empty",
        id="pack-built-in-with-req",
    ),
    Refused(
        {"conventions_pack": "acme", "conventions_pack_requirement": 'acme"]\nx = ["'},
        "conventions_pack_requirement",
        "is not a requirement",
        id="pack-req-toml-injection",
    ),
    Refused(
        {
            "conventions_pack": "acme",
            "conventions_pack_requirement": "acme @ https://me:s3cret@pypi.acme.example/a.whl",
        },
        "conventions_pack_requirement",
        "user or password",
        id="pack-req-credentials",
    ),
    Refused(
        {"conventions_pack": "acme", "conventions_pack_requirement": "medallion_dq==0.5"},
        "conventions_pack_requirement",
        "medallion-dq itself",
        id="pack-req-self",
    ),
]


@pytest.mark.parametrize("case", REFUSED, ids=[case.id for case in REFUSED])
def test_refused(case: Refused, tmp_path: Path, cookiecutter_config: Path) -> None:
    out = tmp_path / "out"
    run = bake_api_subprocess if case.via_api else bake_cli
    result = run(out, cookiecutter_config, case.answers)
    assert result.returncode != 0, f"accepted {case.answers!r}:\n{result.stderr}"
    errors = [
        line
        for line in result.stderr.splitlines()
        if line.startswith("ERROR: ") and not line.startswith("ERROR: Stopping generation")
    ]
    if case.field is None:
        assert not errors, "cookiecutter should refuse this before the hook runs"
    else:
        assert errors, f"no ERROR line:\n{result.stderr}"
        assert any(line.startswith(f"ERROR: {case.field}: ") for line in errors), errors
        # one line per problem: field, a repr()'d value, and why
        for line in errors:
            assert re.match(r"ERROR: \w+: .+: .+", line), line
            assert len(line) < 500, line
    assert case.stderr in result.stderr, result.stderr
    # nothing written: no project folder inside the output folder, nor next to it ('../')
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")}
    allowed = {"out"} | {f"out/{folder}" for folder in case.leftover_dirs}
    assert written <= allowed, sorted(written - allowed)


@pytest.mark.parametrize("answers", [{}, {"project_slug": "Bad Slug"}], ids=["baked", "refused"])
def test_a_bake_leaves_no_file_in_the_temporary_folder(
    answers: dict[str, str], tmp_path: Path, cookiecutter_config: Path
) -> None:
    """Cookiecutter runs a rendered copy of each hook from the temporary folder and keeps it
    (cookiecutter#886): the hooks remove their copy, whether the bake is made or refused."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    result = bake_cli(
        tmp_path / "out", cookiecutter_config, answers, env={"TMPDIR": str(temporary)}
    )
    assert result.returncode == (1 if answers else 0), result.stderr
    assert list(temporary.iterdir()) == []


def test_all_problems_reported_at_once(tmp_path: Path, cookiecutter_config: Path) -> None:
    answers = {
        "project_slug": "Bad Slug",
        "package_name": "class",
        "dev_catalog": "a.b",
        "prod_schema": "x-y",
    }
    result = bake_cli(tmp_path / "out", cookiecutter_config, answers)
    lines = result.stderr.splitlines()
    fields = [line.split(":")[1].strip() for line in lines if line.startswith("ERROR: ")]
    assert result.returncode == 1
    assert fields[:4] == ["project_slug", "package_name", "dev_catalog", "prod_schema"], fields


HOSTILE_NAMES = {
    "quotes": f'{CANARY} Acme\'s "Best" Orders',
    "triple-single": f"{CANARY} x''' + __import__('os').getcwd() + '''",
    "triple-double": f'{CANARY} x""" + __import__("os").getcwd() + """',
    "yaml-toml-specials": f"{CANARY} - a: b # c, [d], {{e}}, &f *g !h | > %",
    "path": f"../{CANARY}/../etc",
    "shell": f"{CANARY} $(touch pwned) `id`; rm -rf x",
    "non-ascii": f"{CANARY} Caf\u00e9 \u00d8rders \u6570\u636e \u2713",
    "max-length": f"{CANARY} " + "n" * 76,
}


@pytest.mark.parametrize("value", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
@pytest.mark.parametrize("answer", ["project_name", "description"])
def test_hostile_text_stays_data(
    answer: str, value: str, tmp_path: Path, cookiecutter_config: Path
) -> None:
    answers: dict[str, Any] = {answer: value}
    if answer == "description":
        answers["project_name"] = "Acme Orders"
    project = bake(tmp_path, cookiecutter_config, **answers)
    assert project.parent == tmp_path
    assert parse_problems(project) == []
    problems, _ = markup_problems(project)
    assert problems == []
    assert inert_problems(project, value, CANARY) == []
    saved = json.loads((project / ".cookiecutter.json").read_text(encoding="utf-8"))
    assert saved[answer] == value
    assert not (tmp_path / "pwned").exists()


def test_jinja_in_answers_is_rendered_once(tmp_path: Path, cookiecutter_config: Path) -> None:
    """Cookiecutter renders --no-input answers; the result is baked as plain data."""
    project = bake(tmp_path, cookiecutter_config, project_name=CANARY + " {{ 7 * 7 }}")
    saved = json.loads((project / ".cookiecutter.json").read_text(encoding="utf-8"))
    assert saved["project_name"] == f"{CANARY} 49"
    assert project.name == "zqx-49"
    assert parse_problems(project) == []
    assert inert_problems(project, f"{CANARY} 49", CANARY) == []


# --- the hooks as plain Python, without cookiecutter ----------------------------------------


def test_hooks_are_plain_python_with_one_rendered_line() -> None:
    for name in ("pre_gen_project", "post_gen_project"):
        source = (HOOKS / f"{name}.py").read_text(encoding="utf-8")
        ast.parse(source)
        markup = [line for line in source.splitlines() if "{{" in line or "{%" in line]
        assert markup == ["# cookiecutter-answers: {{ cookiecutter | tojson }}"], name
        assert "{#" not in source, name


def _render(source: str, answers: dict[str, Any]) -> str:
    """Render ``source`` the way cookiecutter renders a hook."""
    if source not in _COMPILED:
        from cookiecutter.environment import StrictEnvironment

        env = StrictEnvironment(context={"cookiecutter": {}})
        _COMPILED[source] = env.from_string(source)
    return _COMPILED[source].render(cookiecutter=answers)


_COMPILED: dict[str, Any] = {}


@functools.cache
def _source_ast(source: str) -> str:
    return ast.dump(ast.parse(source))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.text(max_size=20),
        st.one_of(st.text(), st.booleans(), st.none(), st.lists(st.text(), max_size=3)),
        max_size=6,
    )
)
def test_rendered_hook_reads_any_answers_back_as_data(answers: dict[str, Any]) -> None:
    """Whatever the answers hold, rendering changes a comment only and they read back equal."""
    for name, module in (("pre_gen_project", pre_gen), ("post_gen_project", post_gen)):
        source = (HOOKS / f"{name}.py").read_text(encoding="utf-8")
        rendered = _render(source, answers)
        assert ast.dump(ast.parse(rendered)) == _source_ast(source)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, f"{name}.py")
            path.write_text(rendered, encoding="utf-8")
            assert module.load_answers(path) == answers


HOSTILE_FOR_RENDERING = [
    "'''",
    '"""',
    "\\",
    "'''\nimport os\n'''",
    "\r\n\u2028\u2029\x85\x0c\x00",
    "}}{{ cookiecutter }}{% raw %}",
    "</script><!--",
]


@pytest.mark.parametrize("value", HOSTILE_FOR_RENDERING)
def test_rendered_hook_named_hostile_values(value: str, tmp_path: Path) -> None:
    source = (HOOKS / "pre_gen_project.py").read_text(encoding="utf-8")
    rendered = _render(source, {"project_name": value})
    assert ast.dump(ast.parse(rendered)) == ast.dump(ast.parse(source))
    path = tmp_path / "hook.py"
    path.write_text(rendered, encoding="utf-8")
    assert pre_gen.load_answers(path) == {"project_name": value}


def test_unrendered_hook_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no rendered answers"):
        pre_gen.load_answers(HOOKS / "pre_gen_project.py")


# --- validate_* directly --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("validator", "value"),
    [
        (pre_gen.validate_python_version, "3.9"),
        (pre_gen.validate_python_version, 3.11),
        (pre_gen.validate_source_format, "parquet"),
        (pre_gen.validate_medallion_dq_source, "pypi"),
        (pre_gen.validate_ci, "azure"),
        (pre_gen.validate_ci, None),
        (pre_gen.validate_include_container_backend, "true"),
        (pre_gen.validate_include_container_backend, 1),
        (pre_gen.validate_project_name, None),
        (pre_gen.validate_project_slug, ["acme"]),
        (pre_gen.validate_package_name, 3),
        (pre_gen.validate_catalog, {"a": 1}),
    ],
)
def test_validators_refuse_wrong_types_and_choices(validator: Any, value: Any) -> None:
    assert validator(value)


@pytest.mark.parametrize(
    ("validator", "value"),
    [
        (pre_gen.validate_python_version, "3.10"),
        (pre_gen.validate_python_version, "3.12"),
        (pre_gen.validate_source_format, "csv"),
        (pre_gen.validate_medallion_dq_source, "index"),
        (pre_gen.validate_ci, "azure_devops"),
        (pre_gen.validate_ci, "none"),
        (pre_gen.validate_include_container_backend, False),
        (pre_gen.validate_project_name, 'Caf\u00e9 \u00d8rders\'s "best" 2 \'\'\' """'),
        (pre_gen.validate_project_slug, "a"),
        (pre_gen.validate_project_slug, "acme-orders-2"),
        (pre_gen.validate_package_name, "acme_orders2"),
        (pre_gen.validate_catalog, "Main_2"),
        (pre_gen.validate_schema, "_private"),
    ],
)
def test_validators_accept(validator: Any, value: Any) -> None:
    assert validator(value) == []


def test_defaults_are_valid() -> None:
    answers = {
        "project_name": "Acme Orders",
        "project_slug": "acme-orders",
        "package_name": "acme_orders",
        "description": "Medallion pipelines for Acme Orders.",
        "dev_catalog": "dev",
        "dev_schema": "acme_orders",
        "prod_catalog": "prod",
        "prod_schema": "acme_orders",
        "source_format": "json",
        "include_container_backend": True,
        "medallion_dq_source": "template",
        "python_version": "3.11",
        "ci": "github",
        "conventions_pack": "medallion",
        "conventions_pack_requirement": "",
    }
    assert pre_gen.validate(answers) == []
    assert pre_gen.validate({}) == [
        f"ERROR: {name}: (missing): the template expects this answer"
        for name in [*pre_gen.VALIDATORS, "conventions_pack_requirement"]
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_validators_never_crash_and_accepted_names_are_safe(value: str) -> None:
    for validator in pre_gen.VALIDATORS.values():
        validator(value)
    line = pre_gen.show(value)
    assert "\n" not in line
    assert "\r" not in line
    assert len(line) < 120
    if not pre_gen.validate_package_name(value):
        assert value.isidentifier()
        assert value.isascii()
        assert value.islower()
    if not pre_gen.validate_project_slug(value):
        assert re.fullmatch(r"[a-z][a-z0-9-]{0,63}", value)
        assert not value.endswith("-")
    if not pre_gen.validate_catalog(value):
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", value)
    if not pre_gen.validate_project_name(value):
        assert value.isprintable()
        assert "{{" not in value
        assert "${" not in value
        assert "\\" not in value


def test_post_gen_removal_list_is_data() -> None:
    removed = post_gen.paths_to_remove({"source_format": "json", "package_name": "p"})
    assert removed == [
        "fixtures/landing/orders/orders-2026-11-01.csv",
        "fixtures/landing/orders/orders-2026-11-04.csv",
        "fixtures/landing/customers/customers-2026-11-01.csv",
        "fixtures/bad_day/orders/orders-2026-11-07.csv",
    ]
    assert post_gen.paths_to_remove({"source_format": "xml"}) == []
    # the container backend is a session and an extra, not files: it removes nothing
    assert post_gen.paths_to_remove({"include_container_backend": False}) == []
    # one CI file per answer, none for none
    assert post_gen.paths_to_remove({"ci": "gitlab"}) == [".github", "azure-pipelines.yml"]
    assert post_gen.paths_to_remove({"ci": "none"}) == [
        ".github",
        "azure-pipelines.yml",
        ".gitlab-ci.yml",
    ]


def test_post_gen_never_leaves_the_project(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(SystemExit, match="outside the project"):
        post_gen.remove(tmp_path / "project", "../keep.txt")
    with pytest.raises(SystemExit, match="outside the project"):
        post_gen.remove(tmp_path / "project", ".")
    assert (tmp_path / "keep.txt").exists()
