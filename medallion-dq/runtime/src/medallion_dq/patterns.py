"""Regular expressions a rule may give Spark: what Java's backtracking engine can run for ever.

`rlike`, `regexp_*`, `split` and `str_to_map` hand their pattern to java.util.regex, which tries
every way a pattern can match before it gives up on a row. A repeated part that can match the
same text in more than one way (`(a+)+`, `(a|a)*`, `(\\w+\\s?)*`) makes that exponential in the
value's length: one 30-character value can hold a core for minutes. `problem` reads the pattern
(Java's syntax, as far as the shape goes) and names such a part; it refuses nothing it cannot
read, which Spark then reports itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from medallion_dq.problems import MedallionDQError

#: The longest pattern a rule may give (characters).
MAX_PATTERN = 1000
#: The largest count a pattern's `{n,m}` may give.
MAX_COUNT = 10_000
#: The most ways a bounded loop may try: `(x?){0,16}` tries 2**16.
MAX_WAYS = 2**16

# Characters a class is tried against: Latin-1 and a few beyond. Two parts overlap when one of
# these matches both; a class read wrong is taken as any character, which refuses more, not less.
_SAMPLES = "".join(map(chr, range(256))) + "\u0100\u0394\u0416\u4e2d\u2028\u3000\u00a0\U0001f600"
_ANY = frozenset(_SAMPLES)
# Java's \p{...} classes a rule uses, as Python classes; any other is taken as any character.
_PROPERTIES = {
    "l": r"[^\W\d_]",
    "isalphabetic": r"[^\W\d_]",
    "alpha": "[A-Za-z]",
    "isletter": r"[^\W\d_]",
    "lu": "[A-Z]",
    "upper": "[A-Z]",
    "isuppercase": "[A-Z]",
    "ll": "[a-z]",
    "lower": "[a-z]",
    "islowercase": "[a-z]",
    "n": r"\d",
    "nd": r"\d",
    "digit": r"\d",
    "isdigit": r"\d",
    "alnum": "[A-Za-z0-9]",
    "space": r"\s",
    "iswhite_space": r"\s",
    "punct": r"[!-/:-@\[-`{-~]",
    "p": r"[!-/:-@\[-`{-~]",
    "xdigit": "[0-9A-Fa-f]",
    "ascii": r"[\x00-\x7f]",
}
_ESCAPES = {"d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W", "s": r"\s", "S": r"\S"}
_ESCAPES |= {"h": r"[ \t\xa0\u3000]", "H": r"[^ \t\xa0\u3000]", "v": r"[\n\x0b\f\r\u2028]"}
_ESCAPES |= {"V": r"[^\n\x0b\f\r\u2028]", "t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_EMPTY_ESCAPES = set("bBAzZG")
_CODED = {
    "x": re.compile(r"[0-9a-fA-F]{2}|\{[0-9a-fA-F]+\}|"),
    "u": re.compile(r"[0-9a-fA-F]{4}|"),
    "0": re.compile(r"[0-7]{1,3}|"),
    "c": re.compile(r".?"),
}


@cache
def _matching(python_class: str) -> frozenset[str]:
    try:
        compiled = re.compile(python_class)
    except re.error:
        return _ANY
    return frozenset(c for c in _SAMPLES if compiled.fullmatch(c))


# The pattern's shape: a character of a set, a sequence, alternatives, a repeat, nothing
# (an anchor, a lookaround), a part that never backtracks (atomic group, possessive).
@dataclass(frozen=True)
class Chars:
    chars: frozenset[str]


@dataclass(frozen=True)
class Seq:
    items: tuple[object, ...]


@dataclass(frozen=True)
class Alt:
    branches: tuple[object, ...]


@dataclass(frozen=True)
class Rep:
    item: object
    low: int
    high: int | None  # None: no upper bound
    possessive: bool


@dataclass(frozen=True)
class Empty:
    inside: object = None  # a lookaround's pattern, checked too


class _Unread(MedallionDQError):
    """A pattern this reader does not follow: left to Spark."""


class _Reader:
    def __init__(self, text: str):
        self.text, self.at = text, 0

    def peek(self, n: int = 1) -> str:
        return self.text[self.at : self.at + n]

    def take(self, n: int = 1) -> str:
        part = self.text[self.at : self.at + n]
        self.at += n
        return part

    def alternation(self) -> object:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Alt(tuple(branches))

    def sequence(self) -> Seq:
        items: list[object] = []
        while self.at < len(self.text) and self.peek() not in "|)":
            items.append(self.quantified(self.atom()))
        return Seq(tuple(items))

    def quantified(self, item: object) -> object:
        bounds = re.compile(r"\{(\d+)(?:(,)(\d*))?\}").match(self.text, self.at)
        if self.peek() in ("*", "+", "?"):
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[self.take()]
        elif bounds:
            self.at = bounds.end()
            low = int(bounds[1])
            high = low if not bounds[2] else (int(bounds[3]) if bounds[3] else None)
        else:
            return item
        possessive = self.peek() == "+"
        if self.peek() in ("+", "?"):
            self.take()
        return self.quantified(Rep(item, low, high, possessive))

    def atom(self) -> object:
        char = self.take()
        if char == "(":
            return self.group()
        if char == "[":
            return self.char_class()
        if char == "\\":
            return self.escape()
        if char in "^$":
            return Empty()
        return Chars(_ANY - {"\n", "\r", "\u2028"} if char == "." else frozenset(char))

    def group(self) -> object:
        kind = ""
        if self.peek() == "?":
            flags = re.compile(r"\?(<[=!]|<[A-Za-z][A-Za-z0-9]*>|[:=!>]|[-a-zA-Z]*[:)])")
            found = flags.match(self.text, self.at)
            if not found:
                raise _Unread
            self.at, kind = found.end(), found[1]
            if kind.endswith(")"):  # (?i): flags for what follows
                return Empty()
        inside = self.alternation()
        if self.take() != ")":
            raise _Unread
        if kind in ("=", "!", "<=", "<!"):
            return Empty(inside)
        if kind == ">":  # atomic: what it matched is never tried another way
            return Rep(inside, 1, 1, True)
        return inside

    def char_class(self) -> Chars:
        end, depth, at = None, 0, self.at + (self.peek() == "^")
        at += self.text[at : at + 1] == "]"  # a leading ] is a character
        while at < len(self.text):
            c = self.text[at]
            if c == "\\":
                at += 2
                continue
            if c == "[":
                depth += 1
            elif c == "]":
                if depth == 0:
                    end = at
                    break
                depth -= 1
            at += 1
        if end is None:
            raise _Unread
        inside, self.at = self.text[self.at : end], end + 1
        if depth or "[" in inside.replace("\\[", "") or "&&" in inside or "\\p" in inside.lower():
            return Chars(_ANY)  # Java's unions, intersections and properties: any character
        return Chars(_matching("[" + inside.replace("\\h", " \\t\xa0") + "]"))

    def escape(self) -> object:
        char = self.take()
        if char in _EMPTY_ESCAPES:
            return Empty()
        if char == "Q":  # \Q...\E: quoted text
            end = self.text.find("\\E", self.at)
            end = len(self.text) if end < 0 else end
            quoted, self.at = self.text[self.at : end], min(len(self.text), end + 2)
            return Seq(tuple(Chars(frozenset(c)) for c in quoted))
        if char in ("p", "P"):
            name = re.compile(r"\{(?:Is)?([A-Za-z_]+)\}|([A-Za-z])").match(self.text, self.at)
            if not name:
                raise _Unread
            self.at = name.end()
            prop = _PROPERTIES.get((name[1] or name[2]).lower())
            chars = _matching(prop) if prop else _ANY
            return Chars(chars if char == "p" else (_ANY - chars if prop else _ANY))
        if char in _CODED:  # a character by its code: which one does not matter here
            self.at = _CODED[char].match(self.text, self.at).end()  # type: ignore[union-attr]
            return Chars(_ANY)
        if char.isdigit() or char == "k":  # a back reference: any text
            self.at = re.compile(r"\d*|<\w+>").match(self.text, self.at).end()  # type: ignore[union-attr]
            return Rep(Chars(_ANY), 0, None, False)
        if char in _ESCAPES:
            return Chars(_matching(_ESCAPES[char]))
        if char in "eR":
            return Chars(_ANY)
        return Chars(frozenset(char))


@cache
def _nullable(node: object) -> bool:
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(map(_nullable, node.items))
    if isinstance(node, Alt):
        return any(map(_nullable, node.branches))
    if isinstance(node, Rep):
        return node.low == 0 or _nullable(node.item)
    return True


@cache
def _chars(node: object) -> frozenset[str]:
    """Every character `node` can match."""
    if isinstance(node, Chars):
        return node.chars
    return frozenset().union(*map(_chars, _parts(node)))


def _within(node: object, alphabet: frozenset[str]) -> bool:
    """Whether `node` can match some text of `alphabet`'s characters only (the empty text too)."""
    if isinstance(node, Chars):
        return bool(node.chars & alphabet)
    if isinstance(node, Seq):
        return all(_within(item, alphabet) for item in node.items)
    if isinstance(node, Alt):
        return any(_within(branch, alphabet) for branch in node.branches)
    if isinstance(node, Rep):
        return node.low == 0 or _within(node.item, alphabet)
    return True


@cache
def _first(node: object) -> frozenset[str]:
    """The characters a match of `node` can start with."""
    if isinstance(node, Chars):
        return node.chars
    if isinstance(node, Seq):
        found: frozenset[str] = frozenset()
        for item in node.items:
            found |= _first(item)
            if not _nullable(item):
                break
        return found
    if isinstance(node, Alt):
        return frozenset().union(*map(_first, node.branches))
    if isinstance(node, Rep):
        return _first(node.item)
    return frozenset()


@cache
def _fixed(node: object) -> tuple[frozenset[str], ...] | None:
    """The sets of a part that matches one character per set, in order; None otherwise."""
    if isinstance(node, Chars):
        return (node.chars,)
    if isinstance(node, Seq):
        parts = [_fixed(item) for item in node.items if not isinstance(item, Empty)]
        return None if None in parts else tuple(s for part in parts for s in part or ())
    return None


def _variable(
    node: object, before: tuple[object, ...], after: tuple[object, ...]
) -> Iterator[tuple[Rep, tuple[object, ...], tuple[object, ...]]]:
    """(repeat, what precedes it, what follows it) for each repeat of varying count that a
    match of `node` can backtrack into, inside one pass of an enclosing loop."""
    if isinstance(node, Seq):
        for i, item in enumerate(node.items):
            yield from _variable(item, before + node.items[:i], node.items[i + 1 :] + after)
    elif isinstance(node, Alt):
        for branch in node.branches:
            yield from _variable(branch, before, after)
    elif isinstance(node, Rep) and not node.possessive:
        if node.high is None or node.high > node.low:
            yield node, before, after
        elif node.high == 1:  # a group kept once: what is inside it counts
            yield from _variable(node.item, before, after)


def _alternations(node: object) -> Iterator[Alt]:
    if isinstance(node, Seq):
        for item in node.items:
            yield from _alternations(item)
    elif isinstance(node, Alt):
        yield node
        for branch in node.branches:
            yield from _alternations(branch)
    elif isinstance(node, Rep) and not node.possessive and node.high == 1:
        yield from _alternations(node.item)


def _overlap(one: object, other: object) -> bool:
    """Whether two alternatives can start the same text in two ways (both one character per set
    and as long: they must also agree at every place)."""
    if not _first(one) & _first(other) and not (_nullable(one) or _nullable(other)):
        return False
    a, b = _fixed(one), _fixed(other)
    if a is not None and b is not None and len(a) == len(b):
        return all(x & y for x, y in zip(a, b, strict=True))
    return True


def _ambiguous(loop: Rep) -> str | None:
    """Why a loop's pass can match the same text in more than one way, if it can, and that
    many times: a loop of a few passes, each of a few ways (`([A-Z0-9]?){0,16}`, an IBAN's
    tail), tries at most MAX_WAYS ways, which is no hang."""
    for inner, before, after in _variable(loop.item, (), ()):
        between = Seq(after + before)  # what separates two of `inner`'s runs across passes
        if _within(between, _chars(inner)) and not _few(loop, inner.high, inner.low):
            return "repeats a part that itself repeats, with nothing to tell their matches apart"
    for alt in _alternations(loop.item):
        branches = alt.branches
        if _any_overlap(branches) and not _few(loop, len(branches) - 1, 0):
            return "repeats alternatives that can match the same text"
    return None


def _any_overlap(branches: tuple[object, ...]) -> bool:
    """Whether two of the alternatives overlap (`_overlap`); words of plain characters (a list
    of codes, `(EUR|USD|GBP)`) are compared at once, not pair by pair."""
    fixed = [_fixed(branch) for branch in branches]
    if all(f is not None and f and all(len(c) == 1 for c in f) for f in fixed):
        words = ["".join(next(iter(c)) for c in f or ()) for f in fixed]
        lengths: dict[str, set[int]] = {}
        for word in words:
            lengths.setdefault(word[0], set()).add(len(word))
        return len(set(words)) < len(words) or any(len(n) > 1 for n in lengths.values())
    pairs = ((a, b) for i, a in enumerate(branches) for b in branches[i + 1 :])
    return any(_overlap(a, b) for a, b in pairs)


def _few(loop: Rep, high: int | None, low: int) -> bool:
    """Whether a bounded loop of parts matching `high - low + 1` ways each tries few ways."""
    if loop.high is None or high is None:
        return False
    return bool((high - low + 1) ** loop.high <= MAX_WAYS)


def _walk(node: object) -> Iterator[object]:
    yield node
    for part in _parts(node, lookarounds=True):
        yield from _walk(part)


def _parts(node: object, lookarounds: bool = False) -> tuple[object, ...]:
    """The nodes `node` is made of; a lookaround's pattern only with `lookarounds` (it is
    checked, but matches no character)."""
    if isinstance(node, Seq):
        return tuple(node.items)
    if isinstance(node, Alt):
        return tuple(node.branches)
    if isinstance(node, Rep):
        return (node.item,)
    if lookarounds and isinstance(node, Empty) and node.inside is not None:
        return (node.inside,)
    return ()


def problem(pattern: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) when Java's engine could run `pattern` too long; else None."""
    if len(pattern) > MAX_PATTERN:
        return (
            f"its pattern is {len(pattern):,} characters long (the bound is {MAX_PATTERN:,})",
            "write a shorter pattern, or several rules",
        )
    reader = _Reader(pattern)
    try:
        tree = reader.alternation()
        if reader.at < len(pattern):
            raise _Unread
    except (_Unread, RecursionError):
        return None
    for node in _walk(tree):
        if not isinstance(node, Rep):
            continue
        count = max(node.low, node.high or 0)
        if count > MAX_COUNT:
            return (
                f"its pattern repeats a part {count:,} times (the bound is {MAX_COUNT:,})",
                "compare the value's length instead, e.g. length(code) <= 20000",
            )
        if node.possessive or (node.high is not None and node.high <= 1):
            continue
        if why := _ambiguous(node):
            return (
                f"its pattern {_cut(pattern)!r} {why}: Java's regex engine tries every way, "
                "exponentially many on a long value",
                "make the repeated part match one way (`([a-z]+,)*`, not `([a-z]+,?)*`), or "
                "make its quantifier possessive (`*+`, `++`)",
            )
    return None


def _cut(pattern: str) -> str:
    return pattern if len(pattern) <= 80 else pattern[:77] + "..."
