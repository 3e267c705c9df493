"""Catalog problems: each names the file, the line where known, the field, and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CatalogIssue:
    """One problem found while loading a project.

    >>> str(CatalogIssue("metadata/targets.yaml", "targets[0].table", "unknown table", "add it", 4))
    'metadata/targets.yaml:4: targets[0].table: unknown table (fix: add it)'
    """

    file: str
    field: str
    message: str
    fix: str = ""
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {self.field}:" if self.field else ""
        fix = f" (fix: {self.fix})" if self.fix else ""
        return visible(f"{where}:{field} {self.message}{fix}")

    def as_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "message": self.message,
            "fix": self.fix,
        }


class CatalogError(Exception):
    """Raised when a project does not load; carries every problem found, not only the first."""

    def __init__(self, root: Path, issues: list[CatalogIssue]):
        self.root = root
        self.issues = tuple(issues)
        lines = "\n".join(f"  {issue}" for issue in self.issues)
        super().__init__(f"{len(self.issues)} problem(s) in project {root}:\n{lines}")


def visible(text: str) -> str:
    r"""``text`` with every character a terminal would not show as itself escaped: control
    characters, and the format characters that reorder or hide text (a right-to-left override
    in a file name would print it reversed). Line breaks and tabs stay.

    >>> print(visible("sql/gold/\u202elqs.sj, NUL \x00"))
    sql/gold/\u202elqs.sj, NUL \x00
    >>> visible("two\nlines") == "two\nlines"
    True
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in "\n\t" else ascii(ch)[1:-1] for ch in text)


def format_field(loc: tuple[object, ...]) -> str:
    """Render a Pydantic/YAML location as ``targets[0].table``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
