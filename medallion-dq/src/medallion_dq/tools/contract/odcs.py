"""Reading a contract: YAML, the versions this package reads, its metrics, and the standard's
own JSON schema (vendored in `schemas/` with its licence), each problem one line with its path."""

from __future__ import annotations

import json
from datetime import date
from importlib.resources import files
from pathlib import Path
from typing import Any

import sqlglot
import yaml
from sqlglot.errors import ParseError, TokenError

from medallion_dq import rule_fields, user_yaml
from medallion_dq.bounds import bound_errors
from medallion_dq.constraints import function_errors
from medallion_dq.problems import MedallionDQError
from medallion_dq.tools.contract.values import SPARK_TYPE_NAMES, contradiction, type_name

ODCS_VERSION = "v3.1.0"
SCHEMA_FILE = "odcs-json-schema-v3.1.0.json"
# Versions the v3.1.0 schema reads and this package translates (3.1 only added fields).
API_VERSIONS = ("v3.0.0", "v3.0.1", "v3.0.2", "v3.1.0")
METRICS = ("nullValues", "missingValues", "invalidValues", "duplicateValues", "rowCount")


class ContractError(MedallionDQError, ValueError):
    """A contract that cannot be read or is not valid ODCS: one line per problem (exit 2)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def _jsonable(value: Any) -> Any:
    """YAML's values as JSON has them (dates become text), for the JSON schema."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, date):
        return value.isoformat()
    return value


def _path(parts) -> str:
    """['schema', 0, 'properties', 2, 'logicalType'] -> schema[0].properties[2].logicalType"""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(top level)"


def _validator():
    import jsonschema

    schema = json.loads(
        (files("medallion_dq.tools.contract") / "schemas" / SCHEMA_FILE).read_text("utf-8")
    )
    return jsonschema.Draft201909Validator(schema)


def _qualities(doc: dict):
    """(path, quality rule) of every quality list in the document."""
    for i, obj in enumerate(doc.get("schema") or []):
        if not isinstance(obj, dict):
            continue
        for j, rule in enumerate(obj.get("quality") or []):
            yield ["schema", i, "quality", j], rule
        for j, prop in enumerate(obj.get("properties") or []):
            for k, rule in enumerate(
                (prop or {}).get("quality") or [] if isinstance(prop, dict) else []
            ):
                yield ["schema", i, "properties", j, "quality", k], rule


def _load_yaml(path: Path, label: str) -> Any:
    try:
        return user_yaml.load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ContractError([f"{label}: no such file"]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ContractError([f"{label}: cannot be read ({error})"]) from None
    except RecursionError:
        raise ContractError([f"{label}: YAML does not parse: nested too deeply"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        if isinstance(error, user_yaml.YAMLTooLarge):
            fix = f"; fix: {error.fix}"
            raise ContractError([f"{label}: YAML is refused{where}: {problem}{fix}"]) from None
        raise ContractError([f"{label}: YAML does not parse{where}: {problem}"]) from None


def read(path: Path, label: str | None = None) -> dict:
    """The contract at `path`, valid ODCS; ContractError with one line per problem."""
    label = label or str(path)
    data = _load_yaml(path, label)
    if not isinstance(data, dict):
        raise ContractError(
            [f"{label}: not an ODCS data contract (a mapping with apiVersion, kind, id, ...)"]
        )
    if "apiVersion" not in data and data.get("kind") != "DataContract":  # another tool's YAML
        raise ContractError(
            [
                f"{label}: not an ODCS data contract: no apiVersion, no kind: DataContract; fix: "
                f"give the contract's file (ODCS {ODCS_VERSION}: apiVersion, kind, id, ...)"
            ]
        )
    version = data.get("apiVersion")
    if version not in API_VERSIONS:
        raise ContractError(
            [
                f"{label}: apiVersion: {version!r} is not a version medallion-dq reads; fix: "
                f"write a contract of ODCS {', '.join(API_VERSIONS)} (checked against the "
                f"{ODCS_VERSION} schema)"
            ]
        )
    unknown = [
        f"{label}: {_path([*where, 'metric'])}: unknown metric {rule['metric']!r}; fix: use one "
        f"of {', '.join(METRICS)}, or a sql rule"
        for where, rule in _qualities(data)
        if isinstance(rule, dict) and "metric" in rule and rule["metric"] not in METRICS
    ]
    if unknown:
        raise ContractError(unknown)
    validate(data, label)
    # A physicalType that starts as a Spark type does must be one: Spark refuses decimal(12.2), and
    # translating it as the logicalType's default type would change the column's type unsaid.
    # And it must hold the logicalType: `string` on a number would be typed one way or the other.
    wrong = []
    for where, prop in _properties(data):
        physical, at = prop["physicalType"], _path(where)
        if type_name(physical) in SPARK_TYPE_NAMES and not rule_fields.spark_type(physical):
            wrong.append(
                f"{label}: {at}.physicalType: {physical!r} is not a Spark SQL type; fix: write it "
                "as Spark does (decimal(12,2), array<string>), or leave it out for the "
                "logicalType's"
            )
        elif why := contradiction(prop.get("logicalType"), physical):
            wrong.append(f"{label}: {at}: {why}")
    if wrong:
        raise ContractError(wrong)
    unsafe = [
        line for where, rule in _qualities(data) for line in _unsafe_calls(label, where, rule)
    ]
    if unsafe:
        raise ContractError(unsafe)
    return data


def _unsafe_calls(label: str, where: list, rule: Any) -> list[str]:
    """A sql quality rule's query calls only functions a rule may call (DQ010), within the
    engine's bounds (DQ032), wherever in the query: it is SQL a team would run, and `import`
    makes rules of it."""
    if not isinstance(rule, dict) or rule.get("type") != "sql" or not rule.get("query"):
        return []
    query = str(rule["query"]).replace("${", "{")
    query = query.replace("{object}", "object").replace("{property}", "property")
    try:
        tree = sqlglot.parse_one(query, dialect="spark")
    except (ParseError, TokenError, RecursionError):
        return []  # `import` says it does not parse, and translates nothing of it
    named = rule.get("name") or rule.get("id")
    name = f" {named!r}" if isinstance(named, str) else ""
    return [
        f"{code} {label}: {_path([*where, 'query'])}: sql rule{name}: {message}; fix: {fix}"
        for code, message, fix in function_errors(query, tree) + bound_errors(tree)
    ]


def _properties(doc: dict):
    """(path, property) of every property with a physicalType, nested ones and items too."""

    def walk(prop: Any, where: list):
        if not isinstance(prop, dict):
            return
        if isinstance(prop.get("physicalType"), str):
            yield where, prop
        for j, child in enumerate(prop.get("properties") or []):
            yield from walk(child, [*where, "properties", j])
        yield from walk(prop.get("items"), [*where, "items"])

    for i, obj in enumerate(doc.get("schema") or []):
        for j, prop in enumerate(
            (obj or {}).get("properties") or [] if isinstance(obj, dict) else []
        ):
            yield from walk(prop, ["schema", i, "properties", j])


def validate(doc: dict, label: str) -> None:
    """ContractError with the schema's messages, each with its path, when `doc` is not ODCS."""
    from jsonschema.exceptions import best_match

    errors = sorted(_validator().iter_errors(_jsonable(doc)), key=lambda e: list(map(str, e.path)))
    lines = []
    for error in errors:
        error = best_match([error])  # the branch of an allOf / oneOf that says what is wrong
        line = f"{label}: {_path(error.absolute_path)}: {error.message}"
        if line not in lines:
            lines.append(line)
    if lines:
        raise ContractError(lines)
