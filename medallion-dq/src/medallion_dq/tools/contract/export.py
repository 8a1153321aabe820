"""Rule files back into a contract (`contract export`): each item `import` makes goes back to the
clause it came from, any other rule as a sql rule counting the rows that break it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlglot import exp, parse_one
from sqlglot.errors import ParseError, TokenError

from medallion_dq import rule_fields, rules
from medallion_dq.project import Project
from medallion_dq.sources import CORRUPT_RECORD
from medallion_dq.tools.contract.files import existing_files, raw
from medallion_dq.tools.contract.model import singular
from medallion_dq.tools.contract.odcs import ODCS_VERSION, ContractError
from medallion_dq.tools.contract.patterns import FORMATS
from medallion_dq.tools.contract.values import kind_of, plain

_STABLE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def _unquote(node: exp.Expression) -> Any:
    """A literal of a generated constraint as the contract writes it."""
    if isinstance(node, exp.Neg):
        value = _unquote(node.this)
        return -value if isinstance(value, int | float) else None
    if isinstance(node, exp.Cast):
        return _unquote(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:  # sqlglot has read Spark's escapes already
            return node.this
        number = Decimal(node.this)
        return (
            int(number)
            if number == number.to_integral_value() and "." not in node.this
            else float(node.this)
        )
    return None


def _parts(constraint: str, column: str) -> dict | None:
    """A valid_<column> rule's constraint -> {required, logicalTypeOptions}, or None when it is
    not one `import` makes."""
    try:
        tree = parse_one(constraint, dialect="spark")
    except (ParseError, TokenError):
        return None
    out: dict = {}
    options: dict = {}
    ops = {
        exp.GTE: "minimum",
        exp.GT: "exclusiveMinimum",
        exp.LTE: "maximum",
        exp.LT: "exclusiveMaximum",
    }
    for part in tree.flatten() if isinstance(tree, exp.And) else [tree]:
        if (
            isinstance(part, exp.Not)
            and isinstance(part.this, exp.Is)
            and part.this.this.name == column
        ):
            out["required"] = True
        elif (
            isinstance(part, tuple(ops))
            and isinstance(part.this, exp.Column)
            and part.this.name == column
        ):
            value = _literal_of(constraint, part.expression)
            if value is None:
                return None
            options[ops[type(part)]] = value  # type: ignore[index]
        elif type(part) in (exp.GTE, exp.LTE) and isinstance(part.this, exp.Length):
            if part.this.this.name != column or not isinstance(part.expression, exp.Literal):
                return None
            options["minLength" if isinstance(part, exp.GTE) else "maxLength"] = int(
                part.expression.this
            )
        elif (
            isinstance(part, exp.EQ)
            and isinstance(part.this, exp.Mod)
            and part.this.this.name == column
        ):
            options["multipleOf"] = _unquote(part.this.expression)
        elif isinstance(part, exp.RegexpLike) and part.this.name == column:
            pattern = _unquote(part.expression)
            found = [name for name, p in FORMATS.items() if p == pattern]
            options.update({"format": found[0]} if found else {"pattern": pattern})
        else:
            return None
    if options:
        out["logicalTypeOptions"] = options
    return out


def _literal_of(constraint: str, node: exp.Expression) -> Any:
    """A bound: a number, or the text of a DATE '...' / TIMESTAMP '...' literal."""
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        return node.this.this
    if isinstance(node, exp.Literal | exp.Neg):
        return _unquote(node)
    found = re.search(r"(?:DATE|TIMESTAMP)\s*'([^']*)'", node.sql(dialect="spark"), re.I)
    return found.group(1) if found else None


def export(project: Project | Path, dataset: str, left: list[str] | None = None) -> dict:
    """An ODCS v3.1.0 document of a dataset's rule file (and its gold `_keys` file); what a
    contract cannot say is added to `left`."""
    left = [] if left is None else left
    project = Project.of(project)
    root = project.root
    existing = existing_files(project)
    path = existing.get(dataset) or next(
        (p for d, p in existing.items() if p.stem == dataset and p.parent.name != "gold"), None
    )
    if path is None:
        names = ", ".join(sorted(existing)) or "none"
        raise ContractError([f"--dataset {dataset}: no rule file of that dataset (found: {names})"])
    ruleset = project.rule_set(path)
    clauses = [r.contract for r in ruleset.rules if r.contract]
    clauses += [c.contract for c in ruleset.checks if c.contract]
    owners = [c.split(": ")[0] for c in clauses if ": " in c]
    name = next((o.split(".")[0] for o in owners), path.stem)
    keys = [
        r
        for d, p in existing.items()
        if p.parent.name == "gold" and p.stem == f"{singular(path.stem)}_keys"
        for r in project.rule_set(p).rules
    ]
    props: dict[str, dict] = {}

    def prop(column: str) -> dict:
        if column not in props:
            named = next(
                (
                    o.split(".", 1)[1]
                    for o in owners
                    if o.startswith(f"{name}.")
                    and o.split(".", 1)[1].lower() == column.lower()
                    or o == f"{name}.{column}"
                ),
                column,
            )
            props[column] = {"name": named} | ({"physicalName": column} if named != column else {})
        return props[column]

    for column in ruleset.schema:
        entry = prop(column.name)
        entry["logicalType"] = kind_of(column.type)
        entry["physicalType"] = column.type
        if column.not_null:
            entry["required"] = True
    quality: list[dict] = []
    for rule in ruleset.rules:
        if CORRUPT_RECORD in rule.constraint:  # whole_record: of bronze's records, the team's
            left.append(f"{rule.name}: {rule.constraint}: bronze's mark, no published column")
            continue
        _export_rule(rule, ruleset, name, prop, quality)
    for rule in keys:
        _export_key(rule, list(props), prop, quality, left)
    sla = [
        said
        for check in ruleset.checks
        if (said := _export_check(check, name, prop, quality, left)) is not None
    ]
    obj: dict[str, Any] = {"name": name, "physicalName": ruleset.dataset, "physicalType": "table"}
    description = raw(project, path).get("description")
    if isinstance(description, str) and description.strip():
        obj["description"] = description.strip()
    obj["properties"] = list(props.values())
    for rule in [*ruleset.rules, *keys]:
        if rule.owner and rule.owner != ruleset.owner:
            left.append(f"{rule.name}: owner {rule.owner}: a clause has no owner of its own")
    if ruleset.layer not in (None, "silver"):
        left.append(f"layer: {ruleset.layer}: a contract has none (import it with --layer)")
    doc = _document(ruleset, name, obj, quality, sla)
    source = _source(root, doc["id"], left)
    return doc if source is None else _carried(source[1], doc, source[0], left)


# What the rule files say of a contract (from its clauses): the contract it was made from gives
# the rest (descriptions, tags, servers, a property's businessName...), or export drops it.
_RULES_SAY = {
    "document": {"apiVersion", "kind", "id", "version", "schema", "slaProperties"},
    "object": {"name", "physicalName", "physicalType", "properties", "quality", "relationships"},
    "property": {
        "name",
        "physicalName",
        "logicalType",
        "physicalType",
        "required",
        "unique",
        "logicalTypeOptions",
        "examples",
        "quality",
        "relationships",
        "items",
        "properties",
    },
}
_SLA_MADE = {"latency", "freshness"}  # the SLA properties import makes checks of


def _source(root: Path, contract_id: str, left: list[str]) -> tuple[str, dict] | None:
    """The contract in contracts/ the rule file was made from (same id), if any."""
    from medallion_dq.text import relative_path
    from medallion_dq.tools.contract.odcs import read

    for path in sorted((root / "contracts").glob("*.odcs.yaml")):
        where = relative_path(path, root)
        try:
            doc = read(path, where)
        except ContractError as error:
            if f"id: {contract_id}\n" in path.read_text(encoding="utf-8", errors="replace"):
                left.append(f"{where}: not read, its other fields not kept: {error.lines[0]}")
            continue
        if str(doc.get("id")) == contract_id:
            return where, doc
    return None


def _carried(source: dict, doc: dict, where: str, left: list[str]) -> dict:
    """`doc` with what only the contract `source` says (the rule files cannot): its other
    fields, its object's and its properties' other fields, its other SLA properties. What
    cannot be carried is added to `left`, one line a field."""
    out = {**{k: v for k, v in source.items() if k not in _RULES_SAY["document"]}, **doc}
    if isinstance(source.get("team"), dict) and "team" in doc:
        out["team"] = {**source["team"], **doc["team"]}
    made = {(s.get("property"), s.get("element")) for s in doc.get("slaProperties") or []}
    kept = [
        s
        for s in source.get("slaProperties") or []
        if isinstance(s, dict)
        and s.get("property") not in _SLA_MADE
        and (s.get("property"), s.get("element")) not in made
    ]
    if kept:
        out["slaProperties"] = [*(doc.get("slaProperties") or []), *kept]
    obj = out["schema"][0]
    theirs = next(
        (
            o
            for o in source.get("schema") or []
            if isinstance(o, dict) and obj["physicalName"] in (o.get("physicalName"), o["name"])
        ),
        None,
    )
    if theirs is None:
        return out
    _fields(theirs, obj, "object")
    named = {p["name"]: p for p in obj["properties"]}
    # A clause with an id goes back under the property the contract has it under.
    home = {
        q.get("id"): named[p["name"]]
        for p in theirs.get("properties") or []
        if p["name"] in named
        for q in p.get("quality") or []
        if isinstance(q, dict) and q.get("id")
    }
    for clause in list(obj.get("quality") or []):
        if clause.get("id") in home:
            obj["quality"].remove(clause)
            home[clause["id"]].setdefault("quality", []).append(clause)
    if "quality" in obj and not obj["quality"]:
        del obj["quality"]
    for prop in theirs.get("properties") or []:
        ours = named.get(prop["name"])
        if ours is None:
            left.append(f"{where}: {theirs['name']}.{prop['name']}: no column of the rule file")
            continue
        _fields(prop, ours, "property")
        if prop.get("properties") or isinstance(prop.get("items"), dict):
            left.append(
                f"{where}: {theirs['name']}.{prop['name']}: its nested properties (the rule "
                "file has the column's type)"
            )
    return out


def _fields(theirs: dict, ours: dict, kind: str) -> None:
    """`ours` given the fields of `theirs` the rule files do not say (customProperties merged)."""
    for key, value in theirs.items():
        if key == "customProperties" and ours.get(key):
            have = {c.get("property") for c in ours[key]}
            ours[key] = [*ours[key], *(c for c in value if c.get("property") not in have)]
        elif key not in _RULES_SAY[kind] and key not in ours:
            ours[key] = value


def _document(ruleset: rules.RuleSet, name: str, obj: dict, quality: list, sla: list) -> dict:
    """The contract of one schema object, with the rule file's settings and contract."""
    if quality:
        obj["quality"] = quality
    custom = []
    if ruleset.threshold is not None:
        custom.append({"property": "threshold", "value": ruleset.threshold})
    if ruleset.quarantine_declared:
        custom.append({"property": "quarantine", "value": ruleset.quarantine_declared})
    if custom:
        obj["customProperties"] = custom
    doc: dict[str, Any] = {
        "apiVersion": ODCS_VERSION,
        "kind": "DataContract",
        "id": ruleset.contract.id if ruleset.contract else ruleset.dataset,
        "version": ruleset.contract.version if ruleset.contract else "0.1.0",
        "status": "active",
        "name": name,
    }
    if ruleset.owner:
        doc["team"] = {"name": ruleset.owner}
    doc["schema"] = [obj]
    if sla:
        doc["slaProperties"] = sla
    return doc


def _export_key(rule: rules.Rule, columns: list[str], prop, quality: list, left: list) -> None:
    """A rule of the gold keys file back to `unique` or a duplicateValues rule."""
    metric = re.fullmatch(r"duplicate_(\w+)s = 0", rule.constraint)
    keys = _key_columns(metric.group(1), columns) if metric else None
    if not keys:
        left.append(f"{rule.name}: {rule.constraint}: not a count of duplicate keys")
    elif len(keys) == 1 and rule.contract.endswith(": unique"):
        prop(keys[0])["unique"] = True
    elif len(keys) == 1:
        prop(keys[0]).setdefault("quality", []).append(
            _quality(rule, {"metric": "duplicateValues", "mustBe": 0})
        )
    else:
        what = {"metric": "duplicateValues", "arguments": {"properties": keys}, "mustBe": 0}
        quality.append(_quality(rule, what))


def _export_check(
    check: rule_fields.Check, name: str, prop, quality: list, left: list
) -> dict | None:
    """A dataset check back to its clause: a rowCount rule (added to `quality`), a property's
    relationship, or the SLA property returned. A kind ODCS has no clause for is left out,
    and said."""
    export = _CHECK_EXPORTS.get(check.kind)
    if export is None:
        left.append(f"{check.name}: {check.kind} check: ODCS has no clause for its kind")
        return None
    if check.action == "warn" and check.kind in ("freshness", "references"):
        said = "a relationship" if check.kind == "references" else "an SLA property"
        left.append(f"{check.name}: action warn: {said} of ODCS has no severity")
    return export(check, name, prop, quality, left)


def _export_volume(check: rule_fields.Check, name: str, prop, quality: list, left: list) -> None:
    low, high = check.get("min_rows"), check.get("max_rows")
    bound = (
        {"mustBe": low}
        if low is not None and low == high
        else {"mustBeBetween": [low, high]}
        if low is not None and high is not None
        else {"mustBeGreaterOrEqualTo": low}
        if low is not None
        else {"mustBeLessOrEqualTo": high}
        if high is not None
        else None
    )
    ratios = [k for k in ("min_ratio", "max_ratio") if check.get(k) is not None]
    if ratios:
        left.append(f"{check.name}: {', '.join(ratios)}: ODCS counts rows, not ratios")
    if bound is not None:
        quality.append(
            _clean(
                {
                    **_ids(check),
                    "type": "library",
                    "metric": "rowCount",
                    **bound,
                    "severity": "warning" if check.action == "warn" else None,
                    "description": check.description,
                }
            )
        )


def _export_freshness(check: rule_fields.Check, name: str, prop, quality: list, left: list) -> dict:
    age = rule_fields.DURATION.match(str(check.get("max_age")))
    assert age is not None  # the rule loader checked it
    value = float(age.group(1))
    # A clause without an id is "slaProperties: <property> <element>", as written.
    written = re.fullmatch(r"slaProperties: (\S+) (\S+)", check.contract or "")
    return _clean(
        {
            **({"id": check.contract} if _STABLE_ID.match(check.contract or "") else {}),
            "property": written.group(1) if written else "latency",
            "value": int(value) if value.is_integer() else value,
            "unit": age.group(2),
            "element": written.group(2) if written else f"{name}.{check.get('column')}",
            "description": check.description,
        }
    )


def _export_references(
    check: rule_fields.Check, name: str, prop, quality: list, left: list
) -> None:
    column = str(check.get("column"))
    rel = {
        "to": f"{check.get('dataset')}.{check.get('key') or column}",
        "type": "foreignKey",
    }
    custom = [{"property": "name", "value": check.name}]
    if check.description:
        custom.append({"property": "description", "value": check.description})
    prop(column).setdefault("relationships", []).append({**rel, "customProperties": custom})


#: The kinds of dataset check ODCS has a clause for; another kind is left out, and said.
_CHECK_EXPORTS: dict[str, Callable[..., dict | None]] = {
    "volume": _export_volume,
    "freshness": _export_freshness,
    "references": _export_references,
}


def _key_columns(joined: str, columns: list[str]) -> list[str] | None:
    """'email_code' -> ['email', 'code'] of the columns (a key's names joined by _)."""
    if not joined:
        return []
    for column in sorted(columns, key=len, reverse=True):
        name = column.lower()
        if joined == name or joined.startswith(f"{name}_"):
            rest = _key_columns(joined[len(name) + 1 :], columns)
            if rest is not None:
                return [column, *rest]
    return None


def _clean(item: dict) -> dict:
    return {k: v for k, v in item.items() if v not in (None, "", [], {})}


def _ids(item) -> dict:
    """A clause that is a stable id goes back as the id; the name always."""
    return {
        **({"id": item.contract} if _STABLE_ID.match(item.contract or "") else {}),
        "name": item.name,
    }


def _quality(rule: rules.Rule, what: dict) -> dict:
    severity = "warning" if rule.action == "warn" else "error"
    bound = (
        {"mustBe": 0}
        if rule.threshold is None
        else {"mustBeLessOrEqualTo": plain(Decimal(str(rule.threshold)) * 100), "unit": "percent"}
    )
    if "mustBe" in what or what.get("metric") == "duplicateValues":
        bound = {}
    examples = {e: [x.row for x in rule.examples if x.expect == e] for e in rule_fields.EXPECTED}
    custom = (
        [{"property": "examples", "value": {k: v for k, v in examples.items() if v}}]
        if rule.examples
        else []
    )
    kind = {"type": "library"} if "metric" in what else {}
    return _clean(
        {
            **_ids(rule),
            **kind,
            **what,
            **bound,
            "severity": severity,
            "description": rule.description,
            "customProperties": custom,
        }
    )


def _export_rule(rule: rules.Rule, ruleset: rules.RuleSet, name: str, prop, quality: list) -> None:
    """One rule back to the clause `import` makes it from; any other as a sql rule counting
    the rows that break it."""
    from medallion_dq.constraints import top_level_columns

    columns = sorted(top_level_columns(rule.constraint) or [])
    schema = {c.name.lower(): c.name for c in ruleset.schema}
    column = schema.get(columns[0], columns[0]) if len(columns) == 1 else None
    action = "fail" if ruleset.layer == "gold" else "drop"
    # required and logicalTypeOptions carry neither a threshold nor an id of their own
    own = rule.threshold is None and (not rule.contract or ": " in rule.contract)
    if own and column and rule.name == f"valid_{column.lower()}" and rule.action == action:
        parts = _parts(rule.constraint, column)
        # logicalTypeOptions need the property's logicalType (the schema: contract's column)
        if parts is not None and (column.lower() in schema or "logicalTypeOptions" not in parts):
            entry = prop(column)
            if parts.get("required"):
                entry["required"] = True
            if parts.get("logicalTypeOptions"):
                entry["logicalTypeOptions"] = parts["logicalTypeOptions"]
            if rule.description:
                entry["description"] = rule.description
            passing = [x.row[column] for x in rule.examples if x.expect == "pass"]
            if passing:
                entry["examples"] = [
                    v.isoformat(sep=" ")
                    if isinstance(v, datetime)
                    else v.isoformat()
                    if isinstance(v, date)
                    else v
                    for v in passing
                ]
            return
    what = _library(rule.constraint, column) if column else None
    if what is not None:
        prop(column).setdefault("quality", []).append(_quality(rule, what))
        return
    query = f"SELECT COUNT(*) FROM {{object}} WHERE NOT coalesce({rule.constraint}, false)"
    owner = rule.contract.split(": ")[0] if ": " in rule.contract else name
    target = prop(owner.split(".", 1)[1]) if "." in owner else None
    entry = _quality(rule, {"type": "sql", "query": query})
    (target.setdefault("quality", []) if target is not None else quality).append(entry)


def _library(constraint: str, column: str) -> dict | None:
    """A rule `import` makes from a library metric -> that metric, or None."""
    try:
        tree = parse_one(constraint, dialect="spark")
    except (ParseError, TokenError):
        return None

    def values(node) -> list | None:
        items = [
            _unquote(e) if not isinstance(e, exp.Cast) else e.this.this for e in node.expressions
        ]
        return None if any(v is None for v in items) else items

    if isinstance(tree, exp.Not) and isinstance(tree.this, exp.Is):
        return {"metric": "nullValues"}
    if isinstance(tree, exp.In) and (allowed := values(tree)) is not None:
        return {"metric": "invalidValues", "arguments": {"validValues": allowed}}
    if isinstance(tree, exp.Paren) and isinstance(tree.this, exp.Or):
        left, right = tree.this.this, tree.this.expression
        if (
            isinstance(left, exp.Is)
            and isinstance(right, exp.In)
            and (allowed := values(right)) is not None
        ):
            return {"metric": "invalidValues", "arguments": {"validValues": [*allowed, None]}}
    if isinstance(tree, exp.RegexpLike):
        return {"metric": "invalidValues", "arguments": {"pattern": _unquote(tree.expression)}}
    if (
        isinstance(tree, exp.And)
        and isinstance(tree.this, exp.Not)
        and isinstance(tree.expression, exp.Not)
    ):
        inner = tree.expression.this
        if isinstance(inner, exp.In) and (missing := values(inner)) is not None:
            return {"metric": "missingValues", "arguments": {"missingValues": [None, *missing]}}
    return None
