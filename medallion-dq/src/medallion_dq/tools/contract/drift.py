"""Drift between a contract and the project: the rule files it makes against the files there,
and its columns against the local lake's tables (read from their Delta logs, without Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from medallion_dq import rules
from medallion_dq.problems import DataQualityError
from medallion_dq.project import Project, config
from medallion_dq.tools.contract.files import existing_files, merge, place, raw, render
from medallion_dq.tools.contract.model import Translation
from medallion_dq.tools.contract.values import quote_field


def canonical(spark_type: str) -> str:
    """A Spark type spelt one way (int = integer, bigint = long, ...), for comparing."""
    try:
        return exp.DataType.build(spark_type, dialect="spark").sql(dialect="spark").lower()
    except (ParseError, TokenError, ValueError):
        return spark_type.strip().lower()


def delta_type(kind: Any) -> str:
    """A Delta log's JSON type as Spark SQL."""
    if isinstance(kind, str):
        return {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(
            kind, kind
        )
    if kind.get("type") == "array":
        return f"array<{delta_type(kind['elementType'])}>"
    if kind.get("type") == "map":
        return f"map<{delta_type(kind['keyType'])}, {delta_type(kind['valueType'])}>"
    fields = ", ".join(f"{quote_field(f['name'])}: {delta_type(f['type'])}" for f in kind["fields"])
    return f"struct<{fields}>"


def lake_schema(root: Path, dataset: str) -> tuple[Path, dict[str, str]] | None:
    """The columns of the dataset's table in a local lake (`medallion-dq run`), from its Delta
    log's latest metadata (no Spark); None when no lake holds it."""
    name = dataset.split(".")[-1].lower()
    logs = sorted((root / config.STATE_DIR / "lake").glob(f"*/**/{name}/_delta_log"))
    for log in logs:
        schema = None
        for commit in sorted(log.glob("*.json")):
            for line in commit.read_text(encoding="utf-8").splitlines():
                action = json.loads(line) if line.strip() else {}
                if "metaData" in action:
                    schema = json.loads(action["metaData"]["schemaString"])
        if schema is not None:
            return log.parent, {f["name"]: delta_type(f["type"]) for f in schema["fields"]}
    return None


def drift(project: Project | Path, translation: Translation) -> list[str]:
    """Every difference between the rule files the contract makes and the project's, one line
    each; and between the contract's columns and the local lake's tables."""
    project = Project.of(project)
    root = project.root
    existing = existing_files(project)
    lines = []
    placed = place(project, translation)
    made_for = {made.dataset for _, made in placed}
    for dataset, path in existing.items():  # a file of the contract it no longer describes
        written = raw(project, path)
        ours = (written.get("contract") or {}) if isinstance(written.get("contract"), dict) else {}
        if (
            translation.whole
            and dataset not in made_for
            and ours.get("id") == translation.contract["id"]
        ):
            where = rules.display_path(path)
            lines += [
                f"{where}: {item.get('name')}: made from clause {item['contract']!r}, which the "
                "contract no longer has"
                for section in ("rules", "checks")
                for item in written.get(section) or []
                if isinstance(item, dict) and item.get("contract")
            ]
    for path, made in placed:
        found_file = existing.get(made.dataset)
        if found_file is None:
            where = rules.display_path(path)
            lines.append(f"{where}: missing: the contract describes dataset {made.dataset}")
            continue
        where = rules.display_path(found_file)
        try:
            now = project.rule_set(found_file)
        except DataQualityError as error:  # its own problems are said by `check`, once
            lines.append(
                f"{where}: its rules do not load ({len(error.problems)} problem(s), the first: "
                f"{error.problems[0].code}): the contract is compared with it once they do"
            )
            continue
        data, _ = merge(made, raw(project, found_file))
        want = rules.parse(render(data), where)
        lines += [f"{where}: {line}" for line in _differences(want, now)]
        found = lake_schema(root, made.dataset)
        if found is not None and want.schema:
            table, columns = found
            shown = table.relative_to(root)
            have = {c.lower(): (c, t) for c, t in columns.items()}
            for column in want.schema:
                got = have.get(column.name.lower())
                if got is None:
                    lines.append(
                        f"{shown}: column {column.name}: in the contract, not in the table"
                    )
                elif canonical(got[1]) != canonical(column.type):
                    lines.append(
                        f"{shown}: column {column.name}: the table has {got[1]}, "
                        f"the contract {column.type}"
                    )
    return lines


def _said(value: object) -> str:
    """A setting's value as a difference says it: `none` where it is not set."""
    return "none" if value is None else repr(value)


def _differences(want: rules.RuleSet, now: rules.RuleSet) -> list[str]:
    # The file's own settings: `want` has the file's value where the contract sets none.
    lines = [
        f"{key}: {_said(getattr(now, field))} in the file, {_said(getattr(want, field))} in the contract"
        for field, key in (("threshold", "threshold"), ("quarantine_declared", "quarantine"))
        if getattr(want, field) != getattr(now, field)
    ]
    declared = {c.name.lower(): c for c in now.schema}
    for column in want.schema:
        have = declared.pop(column.name.lower(), None)
        spelt = column.type + (" not null" if column.not_null else "")
        if have is None:
            lines.append(f"column {column.name}: in the contract ({spelt}), not in schema:")
        elif canonical(have.type) != canonical(column.type) or have.not_null != column.not_null:
            was = have.type + (" not null" if have.not_null else "")
            lines.append(f"column {column.name}: {was} in schema:, {spelt} in the contract")
    if want.schema:
        lines += [f"column {c.name}: in schema:, not in the contract" for c in declared.values()]
    for kind, wanted, present in (
        ("rule", want.rules, now.rules),
        ("check", want.checks, now.checks),
    ):
        by_name = {item.name: item for item in present}
        for item in wanted:
            other = by_name.pop(item.name, None)
            if other is None:
                lines.append(
                    f"{kind} {item.name}: in the contract ({item.contract}), not in the file"
                )
                continue
            for attribute in ("constraint", "action", "threshold", "kind", "options", "contract"):
                a, b = getattr(item, attribute, None), getattr(other, attribute, None)
                if a != b:
                    lines.append(
                        f"{kind} {item.name}: {attribute} {_said(b)} in the file, {_said(a)} in"
                        " the contract"
                    )
        lines += [
            f"{kind} {item.name}: made from clause {item.contract!r}, which the contract no longer has"
            for item in by_name.values()
            if item.contract
        ]
    return lines
