"""Read a YAML file into plain data plus a map from each key path to its line number.

Sequences become tuples, mappings dicts and scalars what YAML makes of them (a quoted "3" stays
a string, so a model validating strictly reports it instead of converting it).

Line numbers let every catalog error point at the place to edit. Duplicate keys, which plain
YAML loaders silently resolve to the last value, are reported as problems.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from medallion_assets.catalog.errors import CatalogIssue, format_field

Loc = tuple[object, ...]

# YAML 1.2 floats with an exponent that YAML 1.1 (PyYAML) reads as text: 1e6, 2.5E-3.
_FLOAT_1_2 = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")

# libyaml's loader when PyYAML was built with it: same nodes and marks, several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class YamlDocument:
    path: Path
    label: str  # path relative to the project root, used in messages
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of ``loc`` (1-based)."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None

    def issue(self, loc: Loc, message: str, fix: str = "") -> CatalogIssue:
        return CatalogIssue(self.label, format_field(loc), message, fix, self.line_of(loc))


def read_yaml(path: Path, label: str) -> tuple[YamlDocument | None, list[CatalogIssue]]:
    """Parse one YAML file; on malformed YAML return ``None`` and an issue with the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return None, [CatalogIssue(label, "", f"not UTF-8 text: {error}", "save the file as UTF-8")]
    too_big = _too_deep_or_big(text, label)
    if too_big is not None:
        return None, [too_big]
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        opened = getattr(error, "context_mark", None)
        where = f" (in the block that starts at line {opened.line + 1})" if opened else ""
        return None, [
            CatalogIssue(label, "", f"malformed YAML: {problem}{where}", yaml_fix(problem), line)
        ]
    if node is None:
        return YamlDocument(path, label, None), []
    issues: list[CatalogIssue] = []
    lines: dict[Loc, int] = {}
    data = _Builder(label, lines, issues).build(node, ())
    return YamlDocument(path, label, data, lines), issues


# What PyYAML's problem most often means in a hand-written metadata file, and what to do.
_YAML_FIXES = (
    (
        "cannot start any token",
        "indent with spaces (YAML takes no tabs), and quote a value that starts with @ or `",
    ),
    (
        "mapping values are not allowed",
        "a value holding ': ' needs quotes (description: \"a: b\"), or a key is indented "
        "under a value on the line above",
    ),
    (
        "expected '-' indicator",
        "a list's items each start with '- ' at one indentation; a key among them needs the "
        "indentation of its mapping",
    ),
    (
        "expected key",
        "line the keys of one mapping up in one column (spaces), and give list items '- ' at "
        "their parent's indentation",
    ),
    ("undefined alias", "a value starting with '*' or '&' needs quotes: \"*\""),
    ("end of stream", "close the quote or bracket opened above"),
    ("expected ',' or ']'", "close the [ list ] or put a ',' between its items"),
    ("expected ',' or '}'", "close the { mapping } or put a ',' between its entries"),
)


def yaml_fix(problem: str) -> str:
    """What to do about a YAML syntax problem, in words.

    >>> yaml_fix("found character that cannot start any token")
    'indent with spaces (YAML takes no tabs), and quote a value that starts with @ or `'
    """
    for found, fix in _YAML_FIXES:
        if found in problem:
            return fix
    return (
        "check this line and the ones above it: indentation in spaces, 'key: value', list "
        "items as '- ', quotes and brackets closed"
    )


# No metadata file needs more than a handful of levels. libyaml's composer recurses in C (a
# file nested some 100,000 levels crashes the interpreter) and the builder below in Python, so
# depth is measured first on the parser's events, which libyaml produces without recursion.
MAX_YAML_DEPTH = 64

# Aliases (``*name``) repeat what an anchor (``&name``) holds; the builder below writes each
# repetition out. Sharing a block of settings between tables multiplies a file a few times;
# an "alias bomb" (each level repeating the one before ten times) multiplies it by a billion
# and would fill memory. What the aliases expand to is counted on the parser's events first:
# at most this many values beyond ten per value written in the file.
MAX_ALIAS_EXPANSION = 100_000


def _too_deep_or_big(text: str, label: str) -> CatalogIssue | None:
    depth = 0
    # Values per open collection, with its anchor; anchors -> the values they hold.
    open_: list[tuple[str | None, int]] = [(None, 0)]
    held: dict[str, int] = {}
    written = expanded = 0  # values in the file; values once its aliases are written out
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return _depth_issue(label, event.start_mark.line if event.start_mark else None)
                open_.append((event.anchor, 1))
                written += 1
                expanded += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                anchor, values = open_.pop()
                if anchor is not None:
                    held[anchor] = values
                parent, before = open_[-1]
                open_[-1] = (parent, before + values)
            elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                if isinstance(event, yaml.AliasEvent):
                    values = held.get(str(event.anchor), 1)
                else:
                    values, written = 1, written + 1
                    if event.anchor is not None:
                        held[event.anchor] = 1
                parent, before = open_[-1]
                open_[-1] = (parent, before + values)
                expanded += values
                if expanded > MAX_ALIAS_EXPANSION + 10 * written:
                    return _alias_issue(label, event.start_mark.line if event.start_mark else None)
    except yaml.YAMLError as error:
        # libyaml 0.2.5+ (PyYAML 6.0.4's wheels) stops at 1,000 flow levels in its scanner,
        # which reads ahead of the events: the same problem, reported in our words.
        if "nesting depth" in str(getattr(error, "problem", "") or ""):
            mark = getattr(error, "problem_mark", None)
            return _depth_issue(label, mark.line if mark is not None else None)
        return None  # composing reports malformed YAML with its line
    return None


def _alias_issue(label: str, line: int | None) -> CatalogIssue:
    return _issue_at(
        label,
        line,
        f"its aliases (*name) expand to more than {MAX_ALIAS_EXPANSION:,} values",
        "write the repeated settings out, or alias a block a few times, not aliases of aliases",
    )


def _depth_issue(label: str, line: int | None) -> CatalogIssue:
    return _issue_at(
        label,
        line,
        f"nested more than {MAX_YAML_DEPTH} levels deep",
        "metadata needs only a few levels: check for runaway brackets or indents",
    )


def _issue_at(label: str, line: int | None, message: str, fix: str) -> CatalogIssue:
    """A problem of the whole file at a parser mark's line (0-based, as libyaml gives it)."""
    return CatalogIssue(label, "", message, fix, line + 1 if line is not None else None)


class _Builder:
    """Turns a composed YAML node tree into plain data, recording lines and duplicate keys."""

    def __init__(self, label: str, lines: dict[Loc, int], issues: list[CatalogIssue]):
        self.label = label
        self.lines = lines
        self.issues = issues
        self.constructor = yaml.SafeLoader("")  # one instance builds every scalar

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self.lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loc)
        if isinstance(node, yaml.SequenceNode):
            # Tuples, as the frozen models hold them: models validate in strict mode.
            return tuple(self.build(item, (*loc, i)) for i, item in enumerate(node.value))
        value = self.constructor.construct_object(node, deep=True)
        plain = isinstance(node, yaml.ScalarNode) and not node.style
        if isinstance(value, str) and plain and _FLOAT_1_2.fullmatch(value):
            return float(value)  # 1e6 is a number in YAML 1.2; PyYAML (YAML 1.1) keeps text
        return value

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.constructor.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in out:
                self.issues.append(
                    CatalogIssue(
                        self.label,
                        format_field((*loc, key)),
                        f"key {key!r} appears twice in the same mapping",
                        "keep one of them",
                        line,
                    )
                )
            self.lines[(*loc, key)] = line
            out[key] = self.build(value_node, (*loc, key))
        return out
