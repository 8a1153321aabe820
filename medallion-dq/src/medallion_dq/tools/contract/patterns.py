"""Regular expressions of a contract: the formats a string option names, whether a value matches,
and a short string that does (a passing example), made with the `re` module's public API only."""

from __future__ import annotations

import re
from typing import Any

from medallion_dq.problems import MedallionDQError

FORMATS = {  # logicalTypeOptions.format of a string -> the pattern it stands for
    "email": r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "ipv4": r"^([0-9]{1,3}\.){3}[0-9]{1,3}$",
}
TRIED = "a0A_x-.@ "  # the characters a class is tried with, in order
_CATEGORIES = {"d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W", "s": r"\s", "S": r"\S"}
_CONTROLS = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_REPEAT = re.compile(r"\{(\d*)(?:,(\d*))?\}")


class _Unsupported(MedallionDQError):
    """A part of the syntax the sampler does not make a string for."""


def searches(pattern: str, value: Any) -> bool:
    try:
        return value is not None and re.search(pattern, str(value)) is not None
    except re.error:
        return True  # Java's syntax, not Python's: Spark judges it (the examples runner)


def matching(pattern: str) -> str | None:
    """A short string `pattern` finds (re.search), or None when this cannot make one."""
    try:
        re.compile(pattern)
        made = _Sampler(pattern).alternatives()
    except (re.error, _Unsupported, IndexError, ValueError):
        return None
    return made if made is not None and re.search(pattern, made) else None


def _first(member) -> str | None:
    """The first tried character in a class, or None."""
    return next((ch for ch in TRIED if member(ch)), None)


class _Sampler:
    """Reads a pattern Python has compiled, making the shortest string of each part: the first
    alternative, the fewest repeats. Look-arounds and back references make none."""

    def __init__(self, pattern: str):
        self.text, self.at = pattern, 0

    def peek(self) -> str:
        return self.text[self.at : self.at + 1]

    def take(self) -> str:
        ch = self.peek()
        self.at += 1
        return ch

    def alternatives(self) -> str | None:
        options = [self.sequence()]
        while self.peek() == "|":
            self.at += 1
            options.append(self.sequence())
        if len(options) > 1 and all(len(o) == 1 and o[0][1] for o in options):
            return _first({o[0][0] for o in options}.__contains__)  # a|b: a class, as re reads it
        return "".join(text for text, _ in options[0])

    def sequence(self) -> list[tuple[str, bool]]:
        """(text, whether a single literal character) of each atom, repeated (a class none
        of the tried characters is in only when repeated 0 times or more)."""
        atoms = []
        while self.peek() not in ("", "|", ")"):
            text, literal = self.atom()
            low = self.repeat()
            if low is not None:
                text, literal = ("" if low == 0 else text and text * low), False
            if text is None:
                raise _Unsupported("no tried character is in a class")
            atoms.append((text, literal))
        return atoms

    def repeat(self) -> int | None:
        ch = self.peek()
        found = _REPEAT.match(self.text, self.at) if ch == "{" else None
        if ch in ("*", "+", "?"):
            self.at += 1
            low = 1 if ch == "+" else 0
        elif found and (found.group(1) or found.group(2)):
            self.at = found.end()
            low = int(found.group(1) or 0)
        else:
            return None
        if self.peek() in ("?", "+"):  # lazy or possessive: the same string
            self.at += 1
        return low

    def atom(self) -> tuple[str | None, bool]:
        ch = self.take()
        if ch == "(":
            return self.group(), False
        if ch == "[":
            return self.klass(), False
        if ch == ".":
            return "a", False
        if ch in ("^", "$"):
            return "", False
        if ch == "\\":
            code = self.take()
            if code in _CATEGORIES:
                return _first(re.compile(_CATEGORIES[code]).fullmatch), False
            if code in ("b", "B", "A", "Z"):
                return "", False
            return self.escaped(code), True
        return ch, True

    def escaped(self, code: str) -> str:
        """The character of an escape `\\<code>` (not a class)."""
        if code in _CONTROLS:
            return _CONTROLS[code]
        if code in ("x", "u"):
            digits = self.text[self.at : self.at + (2 if code == "x" else 4)]
            self.at += len(digits)
            return chr(int(digits, 16))
        if code.isalnum():
            raise _Unsupported(f"\\{code}")
        return code

    def group(self) -> str | None:
        if self.peek() == "?":
            self.at += 1
            kind = self.take()
            if kind in ("P", "<") and self.peek() not in ("=", "!"):  # a named group
                self.at = self.text.index(">", self.at) + 1
            elif kind == "#":
                self.at = self.text.index(")", self.at) + 1
                return ""
            elif kind in "aiLmsux-" and kind:  # flags: for the whole pattern, or this group
                ends = (self.text.find(":", self.at), self.text.find(")", self.at))
                end = min(i for i in ends if i >= 0)
                self.at = end + 1
                if self.text[end] == ")":
                    return ""
            elif kind != ":":
                raise _Unsupported("a look-around or a condition")
        text = self.alternatives()
        self.at += 1  # )
        return text

    def klass(self) -> str | None:
        negate = self.peek() == "^"
        self.at += negate
        members: list = []
        literals: list[str] = []
        while not members or self.peek() != "]":
            ch = self.take()
            if ch == "\\":
                code = self.take()
                if code in _CATEGORIES:
                    members.append(re.compile(_CATEGORIES[code]).fullmatch)
                    continue
                ch = self.escaped(code)
            if self.peek() == "-" and self.text[self.at + 1 : self.at + 2] not in ("]", ""):
                self.at += 1
                high = self.take()
                high = self.escaped(self.take()) if high == "\\" else high
                members.append(lambda c, low=ch, high=high: low <= c <= high)
            else:
                members.append(ch.__eq__)
                literals.append(ch)
        self.at += 1  # ]
        if len(members) == 1 and literals:  # [a] is a, [^a] any other character
            return ("b" if literals[0] == "a" else "a") if negate else literals[0]
        return _first(lambda c: any(member(c) for member in members) != negate)
