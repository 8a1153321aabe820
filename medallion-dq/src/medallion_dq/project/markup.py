"""Text from data and user files in HTML and markdown output, escaped so that it shows exactly.

Landing values, rule names and constraints end up in a pull-request comment (`diff --markdown`)
and an HTML page (`report`). Nothing from them may become an element (`<script>`, `<img
src=...>`), a link, emphasis or a table cell's end, and a constraint must read exactly as in its
rule file. Characters markdown or HTML could act on become numeric character references:
CommonMark and GitHub show a reference as its character and never parse it as markup, in
table cells too (a `|` written `&#124;` does not end the cell). A code span cannot do that: in a
GitHub table a `|` in it must be written `\\|`, which other renderers show with the backslash.
Control characters are shown as their escapes (`\\x1b`), as on the console (`text.shown`).
"""

from __future__ import annotations

from html import escape

from medallion_dq.text import shown

__all__ = ["comment", "html_text", "md_block", "md_code", "md_text"]

# What markdown or HTML may act on: HTML, table cells, escapes, code, emphasis, links,
# strike-through, math.
_ACTIVE = "&<>|\\`*_[]~$"
_REFERENCES = {ord(c): f"&#{ord(c)};" for c in _ACTIVE} | {ord("\n"): "&#10;", ord("\r"): "&#13;"}


# Line breaks a YAML or Python parser reads as the end of a comment (shown() keeps \n).
_LINE_BREAKS = {ord("\n"): "\\n", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def comment(value: object) -> str:
    """`value` in a comment line of a file written from data (a rule file, a pipeline file):
    control characters and line breaks as their escapes, so that the comment cannot end early
    and turn the rest of a value into YAML or Python."""
    return shown(str(value)).translate(_LINE_BREAKS)


def html_text(value: object) -> str:
    """`value` as HTML text or an attribute's value."""
    return escape(shown(str(value)), quote=True)


def md_text(value: object) -> str:
    """`value` as markdown text on one line (white space collapsed), e.g. a table cell."""
    return shown(" ".join(str(value).split())).translate(_REFERENCES)


def md_code(value: object) -> str:
    """`value` as inline code, its text exact (line breaks too), fit for a table cell."""
    return f"<code>{shown(str(value)).translate(_REFERENCES)}</code>"


def md_block(value: object) -> str:
    """`value` as a preformatted block of its own (an HTML block: no markdown inside)."""
    return f"<pre>{html_text(value)}</pre>"
