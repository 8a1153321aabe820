"""The clauses of a contract that become dataset checks, not row rules: `rowCount` -> a volume
check, a relationship -> a references check, uniqueness -> the gold keys pattern, an SLA's
latency -> a freshness check."""

from __future__ import annotations

from medallion_dq import rule_fields
from medallion_dq.tools.contract.model import Context, RuleFile, custom, singular, snake

FRESHNESS = ("latency", "ly", "freshness")
WARN_SEVERITIES = ("warning", "warn", "info", "low", "minor")  # a rule's warn, a check's too
_UNITS = {"s": "s", "sec": "s", "second": "s", "seconds": "s", "m": "m", "min": "m"}
_UNITS |= {"minute": "m", "minutes": "m", "h": "h", "hr": "h", "hour": "h", "hours": "h"}
_UNITS |= {"d": "d", "day": "d", "days": "d"}


class DatasetChecks(Context):
    """The dataset checks of a translation (translate.Translator)."""

    def volume(self, target: RuleFile, rule: dict, clause: str) -> None:
        bounds = {}
        for key, value in rule.items():
            if not key.startswith("must"):
                continue
            numbers = value if isinstance(value, list) else [value]
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
                self.out.skipped.append(f"{clause}: rowCount {key} {value!r}: not whole numbers")
                return
            if key == "mustBe":
                bounds = {"min_rows": value, "max_rows": value}
            elif key == "mustBeGreaterThan":
                bounds = {"min_rows": value + 1}
            elif key == "mustBeGreaterOrEqualTo":
                bounds = {"min_rows": value}
            elif key == "mustBeLessThan":
                bounds = {"max_rows": value - 1}
            elif key == "mustBeLessOrEqualTo":
                bounds = {"max_rows": value}
            elif key == "mustBeBetween":
                bounds = {"min_rows": value[0], "max_rows": value[1]}
            else:
                self.out.skipped.append(f"{clause}: rowCount {key}: not translated")
                return
        if not bounds or any(v < 0 for v in bounds.values()):
            self.out.skipped.append(f"{clause}: rowCount without a bound a volume check takes")
            return
        if target.layer != "silver":
            self.out.skipped.append(f"{clause}: rowCount: volume checks are silver's (DQC011)")
            return
        warn = str(rule.get("severity", "")).lower() in WARN_SEVERITIES
        target.checks.append(
            {
                "name": self.name(target, rule.get("name") or rule.get("id"), "row_count"),
                "volume": bounds,
                "action": "warn" if warn else None,
                "description": rule.get("description"),
                "contract": clause,
            }
        )
        self.out.notes.append(
            f"{clause}: rowCount is judged on the rows each update writes (the volume check)"
        )

    def reference(self, target: RuleFile, column: str, rel: dict, where: str) -> None:
        to = rel.get("to")
        if (
            rel.get("type", "foreignKey") != "foreignKey"
            or not isinstance(to, str)
            or "." not in to
        ):
            self.out.skipped.append(f"{where}: relationship to {to!r}: not translated")
            return
        other, key = to.rsplit(".", 1)
        found = self.find_object(other.split(".")[-1])
        dataset = self.dataset_of(found) if found else other.split(".")[-1]
        clause = f"{where}: relationship to {dataset}.{key}"  # as export writes it back
        if target.layer != "silver":
            self.out.skipped.append(f"{clause}: references checks are silver's (DQC011)")
            return
        name = f"known_{column.lower().removesuffix('_id')}"
        target.checks.append(
            {
                "name": self.name(target, custom(rel, "name"), name),
                "references": {"column": column, "dataset": dataset, "key": key},
                "description": custom(rel, "description"),
                "contract": clause,
            }
        )

    def keys(self, obj: dict, columns: list[str], clause: str, rule, description, where) -> None:
        """Uniqueness: a one-row gold dataset counting duplicates, failing when any (the
        pattern of CONVENTIONS.md): its rule file here, the dataset's code in the notes."""
        if rule is not None:
            ok = rule.get("mustBe") == 0 or rule.get("mustBeLessThan") == 1
            if not ok or str(rule.get("unit", "rows")) != "rows":
                bound = {k: v for k, v in rule.items() if k.startswith("must") or k == "unit"}
                self.out.skipped.append(
                    f"{clause}: duplicateValues {bound}: only 0 duplicates is translated"
                )
                return
        stem = f"{singular(snake(obj['name']))}_keys"
        key = f"gold/{stem}.yml"
        keys = self.out.files.setdefault(
            key,
            RuleFile(stem, f"gold_{stem}", "gold", self.contract, dict(self.file(obj).settings)),
        )
        keys.settings.pop("quarantine", None)
        keys.settings.pop("threshold", None)
        if not all(rule_fields.IDENTIFIER.match(c) for c in columns):
            self.out.skipped.append(f"{clause}: {columns} are not column names: not translated")
            return
        joined = "_".join(c.lower() for c in columns)
        metric = f"duplicate_{joined}s"
        self.add_rule(
            keys,
            {
                "name": self.name(
                    keys, (rule or {}).get("name") or (rule or {}).get("id"), f"unique_{joined}"
                ),
                "constraint": f"{metric} = 0",
                "action": "fail",
                "description": description or f"The contract says {', '.join(columns)} is unique.",
                "contract": clause,
                "examples": {"pass": [{metric: 0}], "fail": [{metric: 1}]},
            },
            where,
        )
        keys.keys_of = self.dataset_of(obj)
        keys.uniqueness.append((clause, ", ".join(f'"{c}"' for c in columns), metric))

    def sla(self, datasets: list[str]) -> None:
        for sla in self.doc.get("slaProperties") or []:
            element = str(sla.get("element") or "")
            clause = str(sla.get("id") or f"slaProperties: {sla.get('property')} {element}".strip())
            if str(sla.get("property", "")).lower() not in FRESHNESS:
                self.out.skipped.append(
                    f"{clause}: SLA {sla.get('property')} {sla.get('value')}"
                    f"{sla.get('unit') or ''}: not a data check: not translated"
                )
                continue
            unit = _UNITS.get(str(sla.get("unit") or "d").lower())
            value = sla.get("value")
            obj, column = self.element(element, clause)
            if unit is None or not isinstance(value, int | float) or isinstance(value, bool):
                self.out.skipped.append(f"{clause}: {value!r} {sla.get('unit')!r}: not a duration")
                continue
            if obj is None:
                self.out.skipped.append(
                    f"{clause}: element {element!r} names no column of the contract's objects"
                )
                continue
            if self.dataset_of(obj) not in datasets:
                continue
            target = self.file(obj)
            if target.layer != "silver":
                self.out.skipped.append(f"{clause}: freshness checks are silver's (DQC011)")
                continue
            amount = int(value) if float(value).is_integer() else value
            target.checks.append(
                {
                    "name": self.name(target, sla.get("id"), f"fresh_{snake(obj['name'])}"),
                    "freshness": {"column": column, "max_age": f"{amount}{unit}"},
                    "description": sla.get("description"),
                    "contract": clause,
                }
            )

    def element(self, element: str, clause: str) -> tuple[dict | None, str | None]:
        """`object.column` -> (object, column). The object may be left out when the contract
        has one; an object the contract does not have is taken to be the only one with
        such a column (said in the notes)."""
        owner, _, column = element.rpartition(".")
        named = self.find_object(owner) if owner else None
        found = [
            (obj, str(prop.get("physicalName") or prop["name"]))
            for obj in ([named] if named else self.objects)
            for prop in obj.get("properties") or []
            if column in (prop["name"], prop.get("physicalName"))
        ]
        if len(found) != 1:
            return None, None
        if owner and named is None:
            self.out.notes.append(
                f"{clause}: no object {owner!r}: took {found[0][0]['name']}.{found[0][1]}, the "
                f"only column {column!r}"
            )
        return found[0]
