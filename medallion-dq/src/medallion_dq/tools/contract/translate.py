"""A valid contract into rule files: a property's type and options, its quality rules (library
metrics, sql counts) and the object's quality rules; the dataset checks are `checks.py`'s."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp, parse_one
from sqlglot.errors import ParseError, TokenError

from medallion_dq import rule_fields
from medallion_dq.tools.contract.checks import WARN_SEVERITIES, DatasetChecks
from medallion_dq.tools.contract.model import RuleFile, Translation, custom
from medallion_dq.tools.contract.odcs import ContractError
from medallion_dq.tools.contract.patterns import FORMATS, matching, searches
from medallion_dq.tools.contract.values import (
    Part,
    column_type,
    comparison,
    good,
    judged_examples,
    kind_of,
    length,
    outside,
    shift,
    sql_literal,
    step,
    string_literal,
    value_of,
)


def _clause(rule: dict, owner: str) -> str:
    """A quality rule's clause: its id, else where it is and what it is (no position: the
    clause of an exported rule is the same when imported again)."""
    kind = rule.get("metric") or rule.get("rule") or rule.get("type") or "library"
    return str(rule.get("id") or f"{owner}: {kind}")


def _action(layer: str, severity: Any, clause: str, out: Translation) -> str:
    if layer == "gold":
        return "fail"
    if severity is None or str(severity).lower() in ("error", "critical", "high", "blocker"):
        return "drop"
    if str(severity).lower() in WARN_SEVERITIES:
        return "warn"
    out.skipped.append(f"{clause}: severity {severity!r} is neither an error nor a warning: drop")
    return "drop"


def _bound(rule: dict, clause: str, out: Translation) -> tuple[bool, float | None]:
    """A row metric's bound -> (translated, gate threshold): 0 rows, or a percent."""
    ops = {k: rule[k] for k in ("mustBe", "mustBeLessThan", "mustBeLessOrEqualTo") if k in rule}
    percent = str(rule.get("unit", "rows")).lower() == "percent"
    if not ops:
        others = [k for k in rule if k.startswith("must")]
        out.skipped.append(f"{clause}: {', '.join(others)} on a count of bad rows: not translated")
        return False, None
    op, value = next(iter(ops.items()))
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        out.skipped.append(f"{clause}: {op} {value!r}: not a count: not translated")
        return False, None
    if value == 0 or (op == "mustBeLessThan" and value == 1 and not percent):
        return True, None
    if percent:
        return True, min(float(value) / 100, 1.0)
    out.skipped.append(
        f"{clause}: {op} {value} rows: the gate tolerates a fraction of the rows, not a count "
        "(write unit: percent); the rule tolerates none"
    )
    return True, None


def _examples(rule: dict, column: str | None) -> dict | None:
    """A quality rule's own examples (customProperties `examples`: {pass: [rows], fail: [rows]})."""
    given = custom(rule, "examples")
    if not isinstance(given, dict):
        return None
    out = {}
    for expect in rule_fields.EXPECTED:
        rows = [r if isinstance(r, dict) else {column: r} for r in given.get(expect) or []]
        if rows:
            out[expect] = rows
    return out or None


class Translator(DatasetChecks):
    """One contract's translation (`translate`)."""

    def run(self) -> Translation:
        chosen = self.objects
        if self.only:
            chosen = [o for o in self.objects if self.only in (o["name"], self.dataset_of(o))]
            if not chosen:
                names = ", ".join(o["name"] for o in self.objects) or "none"
                raise ContractError(
                    [
                        f"{self.label}: --dataset {self.only}: no schema object of that name ({names})"
                    ]
                )
        for obj in chosen:
            self.object(obj)
        self.sla([self.dataset_of(o) for o in chosen])
        if not self.objects:
            self.out.skipped.append(f"{self.label}: schema: no objects: no rule file written")
        if self.out.refused:
            raise ContractError(self.out.refused)
        return self.out

    # ----------------------------------------------------------------------- an object

    def object(self, obj: dict) -> None:
        target = self.file(obj)
        where = obj["name"]
        for prop in obj.get("properties") or []:
            self.property(target, obj, prop, f"{where}.{prop['name']}")
        for rule in obj.get("quality") or []:
            self.quality(target, obj, None, rule, where)
        for rel in obj.get("relationships") or []:
            start = rel.get("from")
            if isinstance(start, str) and isinstance(rel.get("to"), str):
                column = start.rpartition(".")[2]
                self.reference(target, column, rel, f"{where}.{column}")
            else:
                self.out.skipped.append(
                    f"{where}: relationship from {start} to {rel.get('to')}: several columns: not "
                    "translated (a references check takes one column)"
                )

    def property(self, target: RuleFile, obj: dict, prop: dict, where: str) -> None:
        column = str(prop.get("physicalName") or prop["name"])
        if not rule_fields.IDENTIFIER.match(column):
            self.out.skipped.append(f"{where}: {column!r} is not a column name: not translated")
            return
        spark_type = column_type(prop, where, self.out.skipped)
        if spark_type is not None:
            required = prop.get("required") and self.layer == "gold"
            target.schema[column] = spark_type + (" not null" if required else "")
        kind = kind_of(spark_type) if spark_type else prop.get("logicalType") or "string"
        self.valid(target, prop, column, kind, spark_type or "", where)
        for rule in prop.get("quality") or []:
            self.quality(target, obj, (column, kind, spark_type or ""), rule, where)
        if prop.get("unique"):
            self.keys(obj, [column], f"{where}: unique", None, None, where)
        elif prop.get("primaryKey"):
            self.out.skipped.append(
                f"{where}: primaryKey is informational: not checked (write unique: true, or a "
                "duplicateValues rule, to have it checked)"
            )
        for rel in prop.get("relationships") or []:
            self.reference(target, column, rel, where)

    def valid(
        self, target: RuleFile, prop: dict, column: str, kind: str, spark_type: str, where: str
    ) -> None:
        """required + logicalTypeOptions -> one rule valid_<column>, with its examples."""
        options = prop.get("logicalTypeOptions") or {}
        parts: list[Part] = []
        used: list[str] = []
        if prop.get("required"):
            parts.append(Part(f"{column} IS NOT NULL", lambda v: v is not None))
            used.append("required")
        self.number_parts(options, column, kind, spark_type, where, parts, used)
        pattern = self.text_parts(options, column, kind, parts, used)
        for key in sorted(set(options) - set(used)):
            self.out.skipped.append(
                f"{where}: logicalTypeOptions.{key} {options[key]!r}: no rule made (rules are made "
                "of minimum, maximum, exclusive bounds, multipleOf, minLength, maxLength, pattern, "
                f"format {'/'.join(FORMATS)})"
            )
        if not parts:
            return
        self.add_rule(
            target,
            {
                "name": self.name(target, "", f"valid_{column.lower()}"),
                "constraint": " AND ".join(p.sql for p in parts),
                "action": _action(self.layer, None, where, self.out),
                "description": prop.get("description"),
                "contract": f"{where}: {', '.join(used)}",
                "examples": self.valid_examples(prop, parts, kind, pattern, options, column, where),
            },
            where,
        )

    def number_parts(
        self, options: dict, column: str, kind: str, spark_type: str, where: str, parts, used
    ) -> None:
        """The bounds and multipleOf of a number, date or timestamp."""
        comparable = kind in ("integer", "number", "date", "timestamp")
        by = step(kind, spark_type)
        for key, op in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
        ):
            if key not in options:
                continue
            if not comparable:
                self.out.skipped.append(f"{where}: {key} on a {kind}: not translated")
                continue
            try:
                bound = value_of(kind, options[key])
            except ValueError as error:
                self.out.skipped.append(f"{where}: {key}: {error}: not translated")
                continue
            low = op.startswith(">")
            breaks = bound if "=" not in op else shift(bound, by, -1 if low else 1)
            parts.append(
                Part(
                    f"{column} {op} {sql_literal(kind, bound, options[key])}",
                    comparison(op, bound),
                    breaks,
                )
            )
            used.append(key)
        if "multipleOf" in options and kind in ("integer", "number"):
            m = options["multipleOf"]
            parts.append(Part(f"{column} % {m} = 0", lambda v, m=m: v is not None and v % m == 0))
            used.append("multipleOf")

    def text_parts(self, options: dict, column: str, kind: str, parts, used) -> str | None:
        """minLength, maxLength and a pattern (or format) of a string; the pattern."""
        breaks: str | None
        for key, op in (("minLength", ">="), ("maxLength", "<=")):
            if key in options:
                n = int(options[key])
                breaks = "x" * (n - 1) if op == ">=" and n > 0 else "x" * (n + 1)
                parts.append(
                    Part(
                        f"length({column}) {op} {n}",
                        length(op, n),
                        None if op == ">=" and n == 0 else breaks,
                    )
                )
                used.append(key)
        pattern: str | None = options.get("pattern") if kind == "string" else None
        if pattern:
            used.append("pattern")
        elif kind == "string" and options.get("format") in FORMATS:
            pattern = FORMATS[options["format"]]
            used.append("format")
        if pattern:
            breaks = next((s for s in ("", "-", "x", "0", "!") if not searches(pattern, s)), None)
            parts.append(
                Part(
                    f"{column} RLIKE {string_literal(pattern)}",
                    lambda v, p=pattern: searches(p, v),
                    breaks,
                )
            )
        return pattern

    def valid_examples(
        self, prop: dict, parts, kind: str, pattern, options: dict, column: str, where: str
    ) -> dict:
        """The property's examples that hold (else one made), and a value breaking each part."""
        given = self._given(prop.get("examples"), kind, where)
        passing = [v for v in given if all(p.holds(v) for p in parts)]
        self.out.skipped += [
            f"{where}: example {v!r} breaks the contract's own options: not a passing row"
            for v in given
            if v not in passing
        ]
        if not passing:
            made = good(kind, parts, pattern, options)
            passing = [made] if made is not None else []
        bad = [
            p.breaks
            for p in parts
            if p.breaks is not None and not all(q.holds(p.breaks) for q in parts)
        ]
        examples = {}
        if passing:
            examples["pass"] = [{column: v} for v in passing]
        examples["fail"] = [{column: v} for v in dict.fromkeys([*bad, None])]
        return examples

    def _given(self, values: Any, kind: str, where: str) -> list:
        out = []
        for value in values or []:
            try:
                out.append(value_of(kind, value))
            except (ValueError, TypeError):
                self.out.skipped.append(f"{where}: example {value!r} is no {kind}: not used")
        return out

    # ----------------------------------------------------------------------- quality rules

    def quality(self, target: RuleFile, obj: dict, prop, rule: dict, where: str) -> None:
        kind = rule.get("type") or "library"
        clause = _clause(rule, where)
        if kind == "text":
            text = " ".join(str(rule.get("description") or "").split())
            self.out.skipped.append(f"{clause}: a text rule, for people: {text or '(no text)'}")
            return
        if kind == "custom":
            self.out.skipped.append(
                f"{clause}: a custom rule for {rule.get('engine') or 'another engine'}: not translated"
            )
            return
        if kind == "sql":
            self.sql(target, obj, prop, rule, clause, where)
            return
        metric = rule.get("metric") or rule.get("rule")
        args = rule.get("arguments") or {}
        if metric == "rowCount":
            self.volume(target, rule, clause)
            return
        if metric == "duplicateValues":
            columns = [prop[0]] if prop else [str(c) for c in args.get("properties") or []]
            if not columns:
                self.out.skipped.append(f"{clause}: duplicateValues of no column: not translated")
                return
            self.keys(obj, columns, clause, rule, rule.get("description"), where)
            return
        if prop is None:
            self.out.skipped.append(f"{clause}: {metric} on a whole object: not translated")
            return
        translated, threshold = _bound(rule, clause, self.out)
        try:
            made = translated and self.row_metric(prop, metric, args)
        except (ValueError, TypeError) as error:
            self.out.skipped.append(f"{clause}: {error}: not translated")
            return
        if not made:
            return
        column, constraint, name, examples = made
        self.add_rule(
            target,
            {
                "name": self.name(target, rule.get("name") or rule.get("id"), name),
                "constraint": constraint,
                "action": _action(self.layer, rule.get("severity"), clause, self.out),
                "description": rule.get("description"),
                "threshold": threshold,
                "contract": clause,
                "examples": _examples(rule, column) or examples,
            },
            where,
        )

    def row_metric(self, prop: tuple, metric: str | None, args: dict) -> tuple | None:
        """nullValues, missingValues, invalidValues of a column -> (column, constraint, name,
        examples); ValueError for a value that is not of the column's kind."""
        column, ckind, _ = prop
        passing: list[Any]
        bad: list[Any]
        if metric == "nullValues":
            constraint, name = f"{column} IS NOT NULL", f"not_null_{column.lower()}"
            passing, bad = [good(ckind, [], None, {})], [None]
        elif metric == "missingValues":
            missing = args.get("missingValues", [None, ""])
            values = [value_of(ckind, v) for v in missing if v is not None]
            constraint = f"{column} IS NOT NULL" + (
                f" AND {column} NOT IN ({', '.join(sql_literal(ckind, v) for v in values)})"
                if values
                else ""
            )
            name = f"present_{column.lower()}"
            passing = [g for g in [good(ckind, [], None, {}), "x"] if g not in values][:1]
            passing = [g for g in passing if ckind == "string" or g != "x"]
            bad = [*values, None]
        elif metric == "invalidValues":
            valid = args.get("validValues")
            pattern = args.get("pattern")
            parts: list[str] = []
            passing, bad = [], []
            if valid is not None:
                values = [value_of(ckind, v) for v in valid if v is not None]
                allowed = f"{column} IN ({', '.join(sql_literal(ckind, v) for v in values)})"
                parts.append(f"({column} IS NULL OR {allowed})" if None in valid else allowed)
                passing += [*values[:2], *([None] if None in valid else [])]
                bad.append(outside(ckind, values))
            if pattern:
                parts.append(f"{column} RLIKE {string_literal(pattern)}")
                made = matching(pattern)
                passing = [g for g in passing if searches(pattern, g)] or ([made] if made else [])
                bad.append(next((s for s in ("", "-", "x", "!") if not searches(pattern, s)), None))
            if not parts:
                raise ValueError("neither validValues nor pattern")
            constraint, name = " AND ".join(parts), f"known_{column.lower()}"
            if valid is None or None not in valid:
                bad.append(None)
        else:  # pragma: no cover - read() refuses other metrics
            return None
        nulls = metric == "invalidValues" and None in (args.get("validValues") or [0])
        examples = {
            "pass": [{column: v} for v in dict.fromkeys(passing) if v is not None or nulls],
            "fail": [{column: v} for v in dict.fromkeys(bad) if v is not None or not nulls],
        }
        return column, constraint, name, examples

    def sql(self, target: RuleFile, obj: dict, prop, rule: dict, clause: str, where: str) -> None:
        """A count of the object's rows: with WHERE, the rows breaking a row rule; without,
        the row count (a volume check). Anything else has no translation."""
        query = str(rule.get("query") or "")
        names = {obj["name"], self.dataset_of(obj)}
        text = query.replace("${object}", obj["name"]).replace("{object}", obj["name"])
        if prop:
            text = text.replace("${property}", prop[0]).replace("{property}", prop[0])
        try:
            tree = parse_one(text, dialect="spark")
        except (ParseError, TokenError) as error:
            self.out.skipped.append(
                f"{clause}: the query does not parse ({str(error).splitlines()[0]})"
            )
            return
        source = tree.args.get("from_") or tree.args.get("from")  # the key's name by version
        counted = (
            isinstance(tree, exp.Select)
            and len(tree.expressions) == 1
            and isinstance(tree.expressions[0].unalias(), exp.Count)
            and isinstance(tree.expressions[0].unalias().this, exp.Star)
            and not any(tree.args.get(k) for k in ("joins", "group", "having", "limit", "with"))
            and source is not None
            and isinstance(source.this, exp.Table)
            and source.this.name in names
        )
        if not counted:
            self.out.skipped.append(
                f"{clause}: sql {' '.join(query.split())!r}: not a count(*) of {obj['name']}: "
                "not translated (a row rule is one condition on a row; a dataset check, a count)"
            )
            return
        if tree.args.get("where") is None:
            self.volume(target, rule, clause)
            return
        # The condition as written: the rows it counts break the rule (NULL: not counted).
        found = re.search(r"\bwhere\b(.*?);?\s*$", text, re.I | re.S)
        assert found is not None  # sqlglot read a WHERE
        written = found.group(1).strip()
        inverse = re.fullmatch(r"not\s+coalesce\s*\((.*),\s*false\s*\)", written, re.I | re.S)
        constraint = inverse.group(1) if inverse else f"NOT coalesce({written}, false)"
        translated, threshold = _bound(rule, clause, self.out)
        if not translated:
            return
        examples = _examples(rule, prop[0] if prop else None)
        kind = prop[1] if prop else None
        if examples is None:
            examples = judged_examples(constraint, kind, target.schema)
        if examples is None:
            self.out.notes.append(
                f"{clause}: no examples made for a sql rule: write its pass and fail rows "
                "(customProperties examples in the contract)"
            )
        self.add_rule(
            target,
            {
                "name": self.name(
                    target, rule.get("name") or rule.get("id"), f"sql_{len(target.rules) + 1}"
                ),
                "constraint": constraint,
                "action": _action(self.layer, rule.get("severity"), clause, self.out),
                "description": rule.get("description"),
                "threshold": threshold,
                "contract": clause,
                "examples": examples,
            },
            where,
        )


def translate(
    doc: dict, label: str, *, layer: str = "silver", dataset: str | None = None
) -> Translation:
    """The rule files a valid contract (`read`) describes, with what was not translated."""
    return Translator(doc, label, layer, dataset).run()
