"""Reading a YAML document a user gives (a rule file, a contract, a bundle file, a pack's library):
safe (no Python tags), its aliases bounded, its nesting bounded, a key given twice refused, on
libyaml's parser where PyYAML has it."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from medallion_dq.problems import MedallionDQError

# What aliases (`*a`) may add to a file, in values: a YAML alias bomb (nine levels of
# `&a [*a, *a, ...]`, a few hundred bytes) expands to 387 million values in whatever walks it
# (a schema check, a copy), taking gigabytes and minutes. Files of ours use a few aliases at most.
MAX_ALIAS_VALUES = 10_000


class YAMLTooLarge(MedallionDQError, yaml.YAMLError):
    """A document whose aliases expand past MAX_ALIAS_VALUES values."""

    fix = "write the values out, or use fewer aliases (an alias expanding to aliases multiplies)"

    def __init__(self, problem: str, mark: yaml.Mark):
        self.problem, self.problem_mark = problem, mark
        super().__init__(problem)


class BoundedLoader(yaml.SafeLoader):
    """`yaml.safe_load`'s loader (no Python tags), refusing a document whose aliases expand to
    more than MAX_ALIAS_VALUES values (YAMLTooLarge), before anything walks it. Every YAML file
    a user gives is read with it (or StrictLoader)."""

    def compose_document(self) -> yaml.Node | None:
        node: yaml.Node | None = super().compose_document()
        if node is not None:
            _expanded(node)
        return node


def _expanded(root: yaml.Node) -> None:
    """Count the values `root` expands to, each node once (aliases share their node): an
    iterative walk, since a bomb nests deeply and an alias may point into its own anchor."""
    size: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        children = [] if isinstance(node, yaml.ScalarNode) else node.value
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in children for part in pair]
        if done:
            open_nodes.discard(id(node))
            size[id(node)] = 1 + sum(size[id(child)] for child in children)
            if size[id(node)] - distinct > MAX_ALIAS_VALUES:
                raise YAMLTooLarge(
                    f"its aliases expand to more than {MAX_ALIAS_VALUES} values (an alias bomb)",
                    node.start_mark,
                )
            continue
        if id(node) in size:
            continue
        if id(node) in open_nodes:  # an alias inside its own anchor: an endless value
            raise YAMLTooLarge("an alias refers to the value it is part of", node.start_mark)
        open_nodes.add(id(node))
        distinct += 1
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)


class _UniqueKeys:
    """A constructor refusing a key given twice in one mapping: plain YAML keeps the last one,
    so a rule missing its '- ' would silently replace another."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                if isinstance(key, Hashable) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f"duplicate key {key!r}",
                        key_node.start_mark,
                    )
                if isinstance(key, Hashable):
                    seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)  # type: ignore[misc]
        return mapping


class StrictLoader(_UniqueKeys, BoundedLoader):
    """BoundedLoader, refusing a key given twice in one mapping (_UniqueKeys)."""


# libyaml's parser (where PyYAML was built with it) reads a file about 20 times faster than the
# pure-Python one, in which `check` spent a third of its time. Its composer recurses in C, where
# a hostile nesting would end the process instead of raising RecursionError: a document is
# composed there only once its events (libyaml's parser, no recursion) show it nests at most
# MAX_NESTING collections deep; deeper is refused as the pure-Python loader refuses it.
MAX_NESTING = 200

try:
    from yaml import cyaml
except ImportError:  # PyYAML built without libyaml: the pure-Python loaders only
    cyaml = None  # type: ignore[assignment]
CParser: Any = getattr(cyaml, "CParser", None)


if CParser is not None:

    class _CBounded(CParser, SafeConstructor, Resolver):  # type: ignore[misc]  # libyaml's, untyped
        """BoundedLoader on libyaml's parser."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        def get_single_node(self) -> yaml.Node | None:
            node: yaml.Node | None = CParser.get_single_node(self)
            if node is not None:
                _expanded(node)
            return node

    class _CStrict(_UniqueKeys, _CBounded):
        """StrictLoader on libyaml's parser."""


def load_yaml(text: str, *, strict: bool = True) -> Any:
    """A YAML document a user gave: safe (no Python tags), its aliases bounded (YAMLTooLarge),
    with `strict` a key given twice refused; RecursionError when it nests too deeply."""
    if CParser is None:
        return yaml.load(text, Loader=StrictLoader if strict else BoundedLoader)
    depth = 0
    for event in yaml.parse(text, Loader=cyaml.CSafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise RecursionError(f"nested more than {MAX_NESTING} collections deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.load(text, Loader=_CStrict if strict else _CBounded)
