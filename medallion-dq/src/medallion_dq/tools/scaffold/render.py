"""The text of every file `add source` writes."""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime, timezone

from medallion_dq.project import markup
from medallion_dq.text import sql_column as quote
from medallion_dq.text import sql_string
from medallion_dq.tools import console
from medallion_dq.tools.scaffold.findings import spark_findings
from medallion_dq.tools.scaffold.model import (
    Findings,
    Landed,
    Plan,
    Typing,
    as_of,
    column_typing,
    max_age_days,
    plain,
    text,
)

#: The rule that keeps a record bronze could not parse out of silver (CONVENTIONS.md).
WHOLE_RECORD = {"whole_record": "_corrupt_record IS NULL"}


def render(
    plan: Plan, landed: Landed, *, keys: list[str], sample: int, owner: str | None, backend
) -> dict[str, str | bytes]:
    """Every file `add source` writes, by relative path."""
    typings = [
        column_typing(
            c, [r.get(c) for r in landed.records], landed.arrow_types.get(c), c in landed.nanos
        )
        for c in landed.columns
    ]
    found = spark_findings(plan, landed, typings, sample, backend, keys)
    for label in found.dropped:
        console.result(f"  note: example {label!r} left out of the test: silver's type changes it")
    files = plan.files
    marked = landed.file_format != "parquet"  # bronze marks what does not parse: _corrupt_record
    out: dict[str, str | bytes] = {
        files["bronze"].as_posix(): _bronze(plan, landed, typings),
        files["silver"].as_posix(): _silver(plan, typings, found, marked),
        files["rules"].as_posix(): _rule_file(plan, landed, typings, found, keys, owner),
        files["test"].as_posix(): _TEST.format(n=plan.name),
        files["cases"].as_posix(): _cases(landed, found),
        plan.fixture(landed.file_format).as_posix(): _fixture(landed, found.sample),
    }
    if "quarantine" in files:
        out[files["quarantine"].as_posix()] = _quarantine_view(plan, landed, typings, found)
    return out


def _const(plan: Plan) -> str:
    return plan.name.upper()


def _string_constant(name: str, value: str) -> list[str]:
    """`NAME = "..."`, cut in parts of at most ~90 characters when it does not fit a line."""
    if len(name) + len(value) + 5 <= 100:
        return [f"{name} = {_literal(value)}"]
    parts, part = [], ""
    for piece in re.split(r"(?<=, )", value):  # after each ", ": a name's own commas stay
        if part and len(part) + len(piece) > 90:
            parts.append(part)
            part = ""
        part += piece
    parts.append(part)
    return [f"{name} = (", *(f"    {_literal(p)}" for p in parts), ")"]


def _literal(text: str) -> str:
    """A Python string literal of `text` (JSON's escapes are Python's)."""
    return json.dumps(text, ensure_ascii=False)


# Delta refuses these characters in a column's or a struct field's name, unless the table maps
# its columns by name (column mapping, Delta's own answer for such names).
_DELTA_REFUSES = set(" ,;{}()\n\t=")
_MAPPED = 'table_properties={"delta.columnMapping.mode": "name"}'


def _mapped(typings: list[Typing]) -> bool:
    """Whether a name of the columns, or of their structs' fields (quoted in the type), needs
    Delta's column mapping."""
    quoted = [
        m.replace("``", "`") for t in typings for m in re.findall(r"`((?:[^`]|``)*)`", t.type)
    ]
    return any(_DELTA_REFUSES & set(name) for name in [*(t.column for t in typings), *quoted])


def _decorator(kind: str, name: str, comment: str, typings: list[Typing]) -> list[str]:
    """`@dp.table(name=..., comment=...)`, with column mapping where a name needs it."""
    if not _mapped(typings):
        return [f'@dp.{kind}(name="{name}", comment="{comment}")']
    return [
        f"@dp.{kind}(",
        f'    name="{name}",',
        f'    comment="{comment}",',
        f"    {_MAPPED},",
        ")",
    ]


def _bronze(plan: Plan, landed: Landed, typings: list[Typing]) -> str:
    n, const, fmt = plan.name, _const(plan), landed.file_format
    parquet = fmt == "parquet"
    lines = [
        f'"""Bronze: land the {n} files as they come. No expectations here, by convention:',
        'bronze keeps everything, so that silver can judge it and nothing is lost."""',
        "",
        f"from medallion_dq.sources import {'field_names, ' if parquet else ''}read_landing",
        *(["from medallion_dq.text import sql_name"] if parquet else []),
        "from pyspark import pipelines as dp",
        *(["from pyspark.sql import functions as F"] if parquet else []),
        "",
    ]
    if parquet:
        schema = ", ".join(f"{quote(t.column)} {t.landed or t.type}" for t in typings)
        lines += [
            "# Parquet is typed: bronze reads it with its own types, then keeps every field as",
            "# text, as for every source (typing is silver's job, once, for every format).",
            *_string_constant(f"{const}_SCHEMA", schema),
            "",
            "",
            "# read_landing adds `_source_file` and `_ingested_at`; this source lands Parquet",
            "# files, whatever the project's default format.",
            *_decorator(
                "table", f"bronze_{n}", f"{n} files as landed, one row per record.", typings
            ),
            f"def bronze_{n}():",
            f'    landed = read_landing(spark, "{n}", {const}_SCHEMA, file_format="parquet")  # noqa: F821',
            f"    names = field_names({const}_SCHEMA)  # a dot or a backtick in a name is the name's",
            '    text = [F.col(sql_name(c)).cast("string").alias(c) for c in names]',
            '    return landed.select(*text, "_source_file", "_ingested_at")',
        ]
    else:
        schema = ", ".join(f"{quote(c)} STRING" for c in landed.columns)
        lines += [
            "# Every field as text: typing is silver's job, and a bad value must not fail ingestion.",
            *_string_constant(f"{const}_RAW_SCHEMA", schema),
            "",
            "",
            "# read_landing adds `_corrupt_record`, `_rescued_data`, `_source_file` and",
            f"# `_ingested_at`: every record kept as it arrived. This source lands {fmt} files,",
            "# whatever the project's default format.",
            *_decorator(
                "table", f"bronze_{n}", f"{n} files as landed, one row per record.", typings
            ),
            f"def bronze_{n}():",
            "    # `spark` is injected by the engine.",
            f'    return read_landing(spark, "{n}", {const}_RAW_SCHEMA, file_format="{fmt}")  # noqa: F821',
        ]
    return "\n".join(lines) + "\n"


def _raw_struct(typings: list[Typing]) -> str | None:
    typed = [t for t in typings if t.typed]
    if not typed:
        return None
    return (
        "named_struct("
        + ", ".join(f"{sql_string(t.column)}, {quote(t.column)}" for t in typed)
        + ")"
    )


def _silver(plan: Plan, typings: list[Typing], found: Findings, marked: bool) -> str:
    n, const, pkg = plan.name, _const(plan), plan.package
    drops = marked or any(r.action == "drop" for r in found.rules)
    # bronze's mark of a record that did not parse, for the whole_record rule
    kept = (
        '"_corrupt_record", "_source_file", "_ingested_at"'
        if marked
        else '"_source_file", "_ingested_at"'
    )
    warns = any(r.action == "warn" for r in found.rules)
    stream = plan.kind == "stream"
    raw = _raw_struct(typings)
    imports = "quarantine, rules" if stream and drops else "rules"
    lines = [
        f'"""Silver: typed, validated {n}; the rows it drops show in silver_{n}_quarantine.',
        "",
        f"Rules live in rules/silver/{n}.yml of the project package: `drop` rules keep bad rows",
        f"out of silver_{n}, `warn` rules only count. Written by `medallion-dq add source {n}`:",
        "the types are the ones the landed values had; change them here"
        + (" and in the quarantine view." if not stream else "."),
        '"""',
        "",
        f"from medallion_dq import {imports}",
        "from pyspark import pipelines as dp",
        "",
        f"from {pkg} import RULES",
        "",
        f'{const} = rules.load(RULES / "silver/{n}.yml")',
        "",
        "# Silver's types: a value that does not parse becomes NULL for the rules to judge.",
        f"{const}_TYPED = [",
        *(f"    {_literal(f'{t.sql} AS {quote(t.column)}')}," for t in typings),
        "]",
    ]
    expects = []
    if drops:
        expects.append(f"@dp.expect_all_or_drop({const}.drop)")
    if warns:
        expects.append(f"@dp.expect_all({const}.warn)")
    if stream:
        if raw:
            lines += [
                "# The typed fields' text as landed: the quarantine shows a NULL beside its text.",
                *_string_constant(f"{const}_RAW", f"{raw} AS _raw"),
            ]
        lines += [
            "",
            "",
            f"def typed_{n}(keep_raw=False):",
            '    """Bronze rows with silver\'s types; with keep_raw, `_raw` holds their text."""',
            f"    raw = [{const}_RAW] if keep_raw else []" if raw else "    raw = []",
            f'    return spark.readStream.table("bronze_{n}").selectExpr(  # noqa: F821',
            f"        *{const}_TYPED, {kept}, *raw",
            "    )",
            "",
            "",
            *_decorator("table", f"silver_{n}", f"{n} that passed every drop rule.", typings),
            *expects,
            f"def silver_{n}():",
            f"    return typed_{n}()",
        ]
        if drops:
            lines += [
                "",
                "",
                "@dp.table(",
                f'    name="silver_{n}_quarantine",',
                *([f"    {_MAPPED},"] if _mapped(typings) else []),
                f'    comment="{n} dropped from silver_{n}, with the rules they broke.",',
                ")",
                f"def silver_{n}_quarantine():",
                f"    return quarantine.quarantined(typed_{n}(keep_raw=True), {const}.drop)",
            ]
    else:
        lines += [
            "",
            "",
            f"# {n}_quarantine.sql types the rows with the same expressions, in SQL: change both.",
            *_decorator(
                "materialized_view", f"silver_{n}", f"{n} that passed every drop rule.", typings
            ),
            *expects,
            f"def silver_{n}():",
            f'    return spark.read.table("bronze_{n}").selectExpr(  # noqa: F821',
            f"        *{const}_TYPED, {kept}",
            "    )",
        ]
    return "\n".join(lines) + "\n"


def _quarantine_view(plan: Plan, landed: Landed, typings: list[Typing], found: Findings) -> str:
    from medallion_dq.quarantine import view_sql

    n = plan.name
    marked = landed.file_format != "parquet"
    drop = {r.name: r.constraint for r in found.rules if r.action == "drop"}
    drop = {**WHOLE_RECORD, **drop} if marked else drop
    raw = _raw_struct(typings)
    select = [f"    {t.sql} AS {quote(t.column)}," for t in typings]
    select += ["    _corrupt_record,"] if marked else []
    select += ["    _source_file,", "    _ingested_at" + ("," if raw else "")]
    if raw:
        select.append(f"    {raw} AS _raw")
    source = "(\n  SELECT\n" + "\n".join(select) + f"\n  FROM bronze_{n}\n)"
    header = [
        f"-- The {n} rows silver_{n} drops, with the rules they broke: a view, so nothing is",
        f"-- stored (rules/silver/{n}.yml says quarantine: view). The SELECT in FROM types the",
        f"-- rows as silver_{n} does ({n}.py): change both. Written by medallion-dq add source",
        "-- with medallion_dq.quarantine.view_sql(name, source, RULES.drop): write it again",
        "-- after a change to the drop rules (medallion-dq check reports a stale file: DQC008).",
    ]
    comment = f"{n} dropped from silver_{n}, with the rules they broke."
    return "\n".join(header) + "\n" + view_sql(f"silver_{n}_quarantine", source, drop, comment)


def _rule_file(
    plan: Plan,
    landed: Landed,
    typings: list[Typing],
    found: Findings,
    keys: list[str],
    owner: str | None,
) -> str:
    from medallion_dq.tools import profile

    n, flow = plan.name, profile.flow
    form = "table" if plan.kind == "stream" else "view"
    lines = [
        f"# Rules for silver_{n}, written by `medallion-dq add source {n}` from the",
        f"# {markup.comment(found.label)}: the profiler's suggestions, with",
        "# examples of real values. Keep, edit or delete each rule, and say why each one exists",
        "# (CONVENTIONS.md). drop: every record passed it; warn: some failed.",
        *found.header,
        f"dataset: silver_{n}",
        "layer: silver",
        f"owner: {flow(owner)}"
        if owner
        else "# owner: <team>   # who fixes the data when a rule fails",
        "threshold: 0.05          # quality gate: largest failed fraction per rule and update",
        f"quarantine: {form}"
        + (
            "  # a streaming table: what each update dropped is kept"
            if form == "table"
            else "  # over all of bronze: costs nothing"
        ),
        "rules:",
    ]
    if landed.file_format != "parquet":
        lines += [
            "  # Bronze marks a record it could not parse (_corrupt_record); its columns may hold a",
            "  # part of it, which could pass every rule below. CONVENTIONS.md: bronze to silver.",
            "  - name: whole_record",
            "    constraint: _corrupt_record IS NULL",
            "    action: drop",
            "    description: A record bronze could not parse is judged by no other rule; the",
            "      quarantine keeps its text for the source to fix.",
            "    examples:",
            "      pass: [{_corrupt_record: null}]",
            f"      fail: [{{_corrupt_record: {flow(_corrupt_text(landed, found))}}}]",
        ]
    for rule in found.rules:
        lines += profile.rule_head(rule)
        if rule.name in found.thresholds:
            lines.append(
                f"    threshold: {found.thresholds[rule.name]}   # the fixture's share failing it"
            )
        lines.append("    examples:")
        for key, values in (("pass", rule.passing), ("fail", rule.failing)):
            rows = [{rule.column: plain(v)} for v in profile.unique(values)]
            if rows:
                lines.append(f"      {key}: {flow(rows)}")
    for seen in found.comments:
        lines += [f"  # {markup.comment(text)}" for text in seen]
    if keys:
        listed = markup.comment(", ".join(keys))
        columns = markup.comment(", ".join(map(quote, keys)))
        lines += [
            f"# Key: {listed}. Uniqueness is not a row rule: check it with an aggregate view and",
            f"# a fail rule, count(*) - count(DISTINCT {columns}) = 0, as rules/gold/order_keys.yml",
            "# does.",
        ]
    lines += [
        "# Dataset-level checks, judged by the quality gate after the validation update.",
        "checks:",
        f"  - name: {n}_volume",
        "    volume: {min_ratio: 0.5, max_ratio: 3.0, history: 7}",
        "    description: An update with half the usual records is a partial delivery.",
    ]
    timestamps = [t.column for t in typings if t.type == "TIMESTAMP"]
    stamp = next((k for k in keys if k in timestamps), timestamps[0] if timestamps else None)
    latest = stamp and _latest(landed.records[i].get(stamp) for i in found.sample)
    if latest:  # the fixture's newest record passes
        at = as_of(plan.project)
        days = max_age_days(latest, at)
        lines += [
            f"  # max_age: the fixture's newest ({latest:%Y-%m-%d %H:%M}) is {days - 1} days before",
            f"  # {at:%Y-%m-%d} (as_of in pyproject.toml, else now): set it to the source's rhythm.",
            f"  - name: fresh_{n}",
            f"    freshness: {flow({'column': stamp, 'max_age': f'{days}d'})}",
            f"    description: {flow(f'No new {stamp} for {days} days means the feed stopped.')}",
        ]
    lines += [
        "# The contract: what silver publishes. A missing column or a changed type fails the gate.",
        "schema:",
        *(f"  {flow(t.column)}: {flow(_contract_type(t.type))}" for t in typings),
    ]
    return "\n".join(lines) + "\n"


def _contract_type(ddl: str) -> str:
    """A type as the contract writes it: lower case, a struct's field names as they are."""
    return ddl if ddl.startswith(("STRUCT", "ARRAY")) else ddl.lower()


def _latest(values) -> datetime | None:
    found = []
    for value in values:
        if isinstance(value, int):  # a Parquet timestamp[ns], as bronze holds it
            value = datetime.fromtimestamp(value / 1e9, timezone.utc).isoformat()
        value = text(value)
        if value is None:
            continue
        try:
            found.append(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
        except ValueError:
            continue
    aware = [v if v.tzinfo else v.replace(tzinfo=timezone.utc) for v in found]
    return max(aware) if aware else None


def _fixture(landed: Landed, chosen: list[int]) -> str | bytes:
    records = [landed.records[i] for i in chosen]
    if landed.file_format == "json":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if landed.file_format == "csv":
        import io

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(landed.columns)
        writer.writerows([[r.get(c, "") for c in landed.columns] for r in records])
        return out.getvalue()
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(f) for f in landed.files]
    table = pa.concat_tables(tables, promote_options="default").take(chosen)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _corrupt_text(landed: Landed, found: Findings) -> str:
    """A record as bronze keeps one it could not parse: the base record cut short (a CSV
    line with its last field missing, a JSON object with no end)."""
    values = [text(landed.records[found.base].get(c)) or "" for c in landed.columns]
    if landed.file_format == "json":
        return json.dumps(dict(zip(landed.columns, values, strict=True)), ensure_ascii=False)[:-1]
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values[:-1] if len(values) > 1 else [*values, ""])
    return out.getvalue()


def _cases(landed: Landed, found: Findings) -> str:
    """The silver test's rows, as data: a real record and a changed copy per example (bronze's
    _corrupt_record too, where bronze marks what it could not parse)."""
    schema = ", ".join(f"{quote(c)} STRING" for c in landed.columns)
    base = {c: text(landed.records[found.base].get(c)) for c in landed.columns}
    cases, broken = dict(found.cases), {k: sorted(v) for k, v in found.broken.items()}
    drop = sorted(r.name for r in found.rules if r.action == "drop")
    rules = [r.name for r in found.rules]
    if landed.file_format != "parquet":
        schema += ", _corrupt_record STRING"
        base["_corrupt_record"] = None
        cases["whole_record fail 1"] = {"_corrupt_record": _corrupt_text(landed, found)}
        broken["whole_record fail 1"] = sorted({*WHOLE_RECORD, *broken.get("base", [])})
        drop, rules = sorted([*WHOLE_RECORD, *drop]), [*WHOLE_RECORD, *rules]
    out = {
        "bronze": f"{schema}, _source_file STRING, _ingested_at TIMESTAMP",
        "base": base,
        "cases": cases,
        "broken": broken,
        "drop": drop,
        "rules": rules,
    }
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


_TEST = '''"""Silver {n}: each rule fails exactly its examples' rows; no row is lost.

Written by `medallion-dq add source {n}`. {n}_cases.json holds a real record of the sample
and a copy of it per example of rules/silver/{n}.yml with that value changed, as bronze holds
it (text); `broken`: the rules each row breaks, as silver's types judge it.
"""

import json
from pathlib import Path

import pytest
from medallion_dq.testing import (
    assert_expectations,
    assert_nothing_lost,
    assert_quarantined,
    assert_update_ok,
)

pytestmark = pytest.mark.spark

DATASET = "silver_{n}"
CASES = json.loads(Path(__file__).with_name("{n}_cases.json").read_text(encoding="utf-8"))
BROKEN = {{label: set(rules) for label, rules in CASES["broken"].items()}}
DROP = set(CASES["drop"])


@pytest.fixture(scope="module")
def update(module_lake):
    """One update of this silver dataset alone, over every case (its label: _source_file)."""
    rows = [
        (*{{**CASES["base"], **changes}}.values(), label, None)
        for label, changes in CASES["cases"].items()
    ]
    module_lake.seed("bronze_{n}", rows, CASES["bronze"])
    result = module_lake.run("validation", ["silver"], datasets=[DATASET])
    assert_update_ok(result)
    return module_lake, result


def kept(lake):
    return {{r["_source_file"] for r in lake.table(DATASET).collect()}}


@pytest.mark.parametrize("rule", CASES["rules"])
def test_each_rule_fails_exactly_its_rows(update, rule):
    lake, result = update
    failing = {{label for label, broken in BROKEN.items() if rule in broken}}
    assert_expectations(result, DATASET, {{rule: len(failing)}}, input_records=len(BROKEN))
    if rule in DROP:  # dropped: none of its rows is kept
        assert not failing & kept(lake)
    else:  # warned: counted, and kept unless a drop rule took the row
        assert {{label for label in failing if not BROKEN[label] & DROP}} <= kept(lake)


def test_every_row_is_kept_or_quarantined_none_lost(update):
    lake, _ = update
    dropped = {{label: broken & DROP for label, broken in BROKEN.items() if broken & DROP}}
    quarantine = lake.table("silver_{n}_quarantine")
    assert_quarantined(quarantine, "_source_file", dropped)
    assert kept(lake) == set(BROKEN) - set(dropped)
    bronze = lake.table("bronze_{n}")
    assert_nothing_lost(bronze, lake.table(DATASET), quarantine, "_source_file")
'''
