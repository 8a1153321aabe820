"""Markdown and HTML built from data: nothing from the data becomes markup, rules read exactly.

`diff --markdown` becomes a pull-request comment: it is rendered here as GitHub renders it
(CommonMark with tables) and read back with html.parser, the elements and the text of each.
"""

from __future__ import annotations

from html.parser import HTMLParser

from markdown_it import MarkdownIt

from medallion_dq import gate, rules
from medallion_dq.tools import diff, report

BASE = """\
dataset: silver_orders
layer: silver
rules:
  - {name: valid_channel, constraint: "channel || '|' || currency <> 'a|b'", action: drop}
"""
HEAD_CONSTRAINT = "channel || '|' || currency <> '<b>&amp;|`x`\\*y*'"
HEAD = BASE.replace("'a|b'", "'<b>&amp;|`x`\\\\*y*'")
HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[a](http://x) *b* | c"]
# What the report's own layout uses; anything else came from the data.
LAYOUT = {"h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "strong", "ul"}
LAYOUT |= {"li", "pre"}


class _Page(HTMLParser):
    """The start tags of a page, and the text of each <code> and <td> element."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.texts: dict[str, list[str]] = {"code": [], "td": []}
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in self.texts:
            self._open.append(tag)
            self.texts[tag].append("")

    def handle_endtag(self, tag):
        if tag in self.texts and self._open:
            self._open.pop()

    def handle_data(self, data):
        for tag in self._open:
            self.texts[tag][-1] += data


def _read(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    return parsed


def _diffed() -> diff.DatasetDiff:
    base, head = rules.parse(BASE, "base.yml"), rules.parse(HEAD, "head.yml")
    found = diff.DatasetDiff(
        "silver_orders", base, head, diff.compare(base, head), rows=3, note="", error=""
    )
    found.dropped_before, found.dropped_after, found.newly_dropped, found.newly_kept = 0, 1, 1, 0
    found.examples["newly_dropped"] = [
        {"order_id": HOSTILE[0], "channel": HOSTILE[1], "note": HOSTILE[2], "_dropped_by": ["r"]}
    ]
    return found


def test_diff_markdown_shows_landing_values_as_text_and_rules_exactly():
    assert rules.parse(HEAD, "head.yml").rules[0].constraint == HEAD_CONSTRAINT
    text = diff.markdown_report({"base": "main", "data": "fixtures | <b>x</b>"}, [_diffed()])
    page = _read(MarkdownIt("commonmark").enable("table").render(text))

    assert set(page.tags) <= LAYOUT, set(page.tags) - LAYOUT
    assert "channel || '|' || currency <> 'a|b'" in page.texts["code"]
    assert HEAD_CONSTRAINT in page.texts["code"]
    # One example row, its cells as landed (a `|` does not split the cell).
    assert page.texts["td"][-4:] == [*HOSTILE, "r"]


def test_diff_error_block_is_text():
    found = _diffed()
    found.error = "```\n</pre><script>alert(1)</script>\n<b>x</b>"
    text = diff.markdown_report({"base": "main", "data": "fixtures"}, [found])
    page = MarkdownIt("commonmark").enable("table").render(text)
    assert set(_read(page).tags) <= LAYOUT
    assert "&lt;/pre&gt;&lt;script&gt;" in page


def test_one_helper_for_markdown_code_and_html():
    """The markdown helpers keep the text; report.html and its checks table use html_text."""
    from medallion_dq.project import markup

    rendered = (
        MarkdownIt("commonmark")
        .enable("table")
        .render("| a |\n|---|\n| " + markup.md_code("x | y\n`z` <w> &amp;") + " |\n")
    )
    assert _read(rendered).texts["code"] == ["x | y\n`z` <w> &amp;"]
    page = report.html([], HOSTILE[0], checks=[_check(HOSTILE[1])])
    assert not {"script", "img"} & set(_read(page).tags)


def _check(value: str) -> dict:
    return {
        "update_id": "u1",
        "timestamp": None,
        "pipeline": "validation",
        "dataset": "silver_orders",
        "check": "volume",
        "kind": "volume",
        "value": value,
        "bound": value,
        "status": "FAIL",
    }


def test_control_characters_show_as_escapes_in_markdown_and_html():
    """A landing value with a terminal escape, a carriage return or U+FFFE shows as its escapes
    in a pull-request comment and the HTML report, as on the console."""
    from medallion_dq.project import markup

    value = "\x1b[31mred\x1b[0m\rover\x07\ufffe"
    said = "\\x1b[31mred\\x1b[0m\\x0dover\\x07\\ufffe"
    found = _diffed()
    found.examples["newly_dropped"] = [{"order_id": value, "_dropped_by": ["r"]}]
    text = diff.markdown_report({"base": "main", "data": "fixtures"}, [found])
    page = _read(MarkdownIt("commonmark").enable("table").render(text))
    assert said.replace("\\x0d", " ") in page.texts["td"]  # a table cell is one line
    assert not any(c in text for c in "\x1b\r\x07\ufffe")
    assert _read(markup.md_code(value)).texts["code"] == [said]
    assert markup.html_text(value) == said
    html = report.html([], value, checks=[_check(value)])
    assert said in html and not any(c in html for c in "\x1b\r\x07\ufffe")


def test_a_rule_file_written_from_hostile_values_parses_and_keeps_them():
    """`profile` and `add source` write what the data showed in comments above each rule: a
    value with a line break once ended its comment, and the rest of it (here a bell, a
    quote, markup) was read as YAML, which refused the file. Each comment stays one line, and
    the rule holds the values exactly."""
    import yaml

    from medallion_dq.tools import profile

    values = ['line one\nline "two"\x07 <b>&amp;', "para\u2028sep", "plain"]
    column = profile.Column(
        "note.text", "text", nonnull=30, distinct=3, values=[(v, 10) for v in values]
    )
    found = profile.Profile("/tmp/a\nfolder (csv, 1 file)", 30, 0, 0, [column])
    text = profile.render(found, "silver_notes")
    loaded = yaml.safe_load(text)  # refused before: a special character, a broken mapping
    for line in text.splitlines():  # one comment line each, every character shown
        assert line.isprintable(), repr(line)
    (known,) = [r for r in loaded["rules"] if r["name"].endswith("known_values")]
    ruleset = rules.parse(text, "silver_notes.yml")  # the rules module accepts it too
    literals = [profile.sql_string(v) for v in sorted(values)]
    assert known["constraint"] == f"`note.text` IS NULL OR `note.text` IN ({', '.join(literals)})"
    assert ruleset.drop[known["name"]] == known["constraint"]
    assert '#   line one\\nline "two"\\x07 <b>&amp;' not in text  # not on a line of its own
    assert 'line one\\nline "two"\\x07' in text  # on the comment's line, escaped


def test_run_markdown_shows_the_gate_from_hostile_data_as_text():
    """`run --markdown` (a CI's job summary): rule names, contract clauses, check values and
    notes holding `|`, HTML, backticks and links stay text, each in its own cell."""
    from medallion_dq.checks import CheckResult
    from medallion_dq.local.project import JobResult, TaskResult
    from medallion_dq.tools import summary

    name = "r|`x`<script>alert(1)</script>[a](http://x)"
    verdict = gate.evaluate(
        [
            {"dataset": "silver_orders", "name": name, "passed": 90, "failed": 10},
            {"dataset": "silver_orders", "name": "valid_amount", "passed": 100, "failed": 0},
        ],
        {"silver_orders.valid_amount": 0.05},
    )
    verdict.clauses = {f"silver_orders.{name}": HOSTILE[2] + " <b>bold</b>"}
    verdict.checks = [
        CheckResult(
            "silver_orders",
            "known_customer",
            "references",
            HOSTILE[1],
            "0 | 1",
            False,
            note=HOSTILE[0],
        )
    ]
    verdict.update_id = "u1"
    result = JobResult(
        "medallion",
        [
            TaskResult(
                "quality_gate", "python_wheel_task", "FAILED", gate=verdict, message=HOSTILE[0]
            )
        ],
    )
    text = summary.markdown(result, "job medallion")
    page = _read(MarkdownIt("commonmark").enable("table").render(text))

    assert set(page.tags) <= LAYOUT | {"br"}, set(page.tags) - LAYOUT
    assert text.startswith("## Data quality: job medallion **FAILED**\n")
    rows = page.texts["td"]
    assert rows[:3] == ["quality_gate", "FAILED", HOSTILE[0]]  # the tasks table
    # The rule's cell: the name as code, the clause beneath it; then its figures, 6 cells a row.
    rule = rows.index(f"silver_orders.{name}{HOSTILE[2]} <b>bold</b>")
    assert rows[rule + 1 : rule + 6] == ["90", "10", "10.00%", "0.00%", "FAIL"]
    assert f"silver_orders.{name}" in page.texts["code"]
    check = rows.index("silver_orders.known_customer (references)")
    assert rows[check + 1 : check + 4] == [HOSTILE[1], "0 | 1", "FAIL"]
    assert HOSTILE[0] in text.replace("&#60;", "<").replace("&#62;", ">")  # the note, escaped
    assert "<script>" not in text and "](http" not in text.replace("&#93;(http", "")


def test_run_markdown_of_a_run_that_did_not_start_says_why():
    from medallion_dq.tools import summary

    text = summary.markdown(None, "job medallion", "no <b>Java</b> | found")
    assert text == (
        "## Data quality: job medallion **FAILED**\n\nno &#60;b&#62;Java&#60;/b&#62; &#124; found\n"
    )
