"""The reference of every metadata file, generated from the models that validate them, so it
cannot drift from what the loader accepts: each field's path, type, default and meaning (the
field's description, else the comment beside it in the model's source), then an example.

    python -m medallion_assets.catalog.reference docs/reference/metadata.md

writes it, and the JSON Schema of each file into the package (``catalog/schemas/``, for
editors); a test fails when a file in the repository is not what this generates.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from medallion_assets.catalog.metadata_files import METADATA_FILES

HEADER = (
    "# Metadata reference\n\n"
    "Every file under a project's `metadata/`, field by field. Generated from the models that "
    "validate the files (`python -m medallion_assets.catalog.reference "
    "docs/reference/metadata.md`): do not edit by hand. A path reads `sources.<name>.columns[]."
    "type`: `<name>` is a key you choose, `[]` an item of a list. Every file is optional but "
    "`project.yaml`; unknown keys are refused.\n"
)


def metadata_reference(example_root: Path | None = None) -> str:
    """The reference as Markdown; with an example from ``example_root``'s metadata files."""
    parts = [HEADER]
    for stem, model in METADATA_FILES.items():
        parts.append(f"\n## `metadata/{stem}.yaml`\n")
        about = inspect.getdoc(model)
        if about and model.__doc__:
            parts.append(f"{about}\n")
        parts.append("| field | type | default | meaning |\n|---|---|---|---|")
        for path, kind, default, meaning in fields(model):
            parts.append(f"| `{path}` | {kind} | {default} | {meaning} |")
        example = example_root / "metadata" / f"{stem}.yaml" if example_root else None
        if example is not None and example.is_file():
            text = _excerpt(example.read_text())
            parts.append(f"\nExample (the demo's, abridged):\n\n```yaml\n{text}\n```")
    return "\n".join(parts) + "\n"


def fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(path, type, default, meaning) of each field of ``model`` and of the models under it."""
    notes = _comments(model)
    for name, info in model.model_fields.items():
        key = info.alias or name
        path = f"{prefix}{key}"
        annotation = info.annotation
        meaning = " ".join((info.description or notes.get(name, "")).split()).replace("|", "\\|")
        yield path, _kind(annotation), _default(info), meaning
        for sub_prefix, sub in _nested(annotation, path):
            if sub is not model:
                yield from fields(sub, sub_prefix)


def _nested(annotation: Any, path: str) -> Iterator[tuple[str, type[BaseModel]]]:
    """The models a field holds, with the path prefix of their fields."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if _is_model(annotation):
        yield f"{path}.", annotation
    elif origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        several = len([m for m in members if _is_model(m)]) > 1
        for member in members:
            for sub_prefix, sub in _nested(member, path):
                kind = _literal_kind(sub) if several else None
                yield (f"{sub_prefix[:-1]} (kind: {kind})." if kind else sub_prefix), sub
    elif origin in (tuple, list, frozenset, set):
        for member in args:
            if member is not Ellipsis:
                yield from _nested(member, f"{path}[]")
    elif origin is dict and len(args) == 2:
        yield from _nested(args[1], f"{path}.<name>")
    elif origin is typing.Annotated:
        yield from _nested(args[0], path)


def _literal_kind(model: type[BaseModel]) -> str | None:
    """The value of a ``kind`` field a model of a union is told apart by."""
    info = model.model_fields.get("kind")
    if info is None:
        return None
    literal = typing.get_origin(info.annotation) is Literal
    values = typing.get_args(info.annotation) if literal else ()
    return "/".join(str(v) for v in values) or None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _kind(annotation: Any) -> str:
    """A field's type in a YAML author's words."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        text = " or ".join(_kind(m) for m in members)
        return f"{text} (or null)" if len(members) < len(args) else text
    if origin in (tuple, list, frozenset, set):
        members = [a for a in args if a is not Ellipsis]
        return f"list of {_kind(members[0])}" if members else "list"
    if origin is dict and len(args) == 2:
        return f"mapping of name to {_kind(args[1])}"
    if origin is typing.Annotated:
        return _kind(args[0])
    if _is_model(annotation):
        return "mapping"
    return {
        str: "text",
        int: "integer",
        float: "number",
        bool: "`true`/`false`",
        date: "date (`YYYY-MM-DD`)",
    }.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(info: Any) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()
    elif info.default is PydanticUndefined:
        return ""
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return "(the defaults below)"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (tuple, list, frozenset, set)) and not value:
        return "`[]`"
    if isinstance(value, dict) and not value:
        return "`{}`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """field name -> the comment beside it (end of line) or right above it in the source."""
    try:
        source = textwrap.dedent(inspect.getsource(model))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        line = lines[node.lineno - 1]
        above: list[str] = []
        number = node.lineno - 2
        while number >= 0 and lines[number].strip().startswith("#"):
            above.insert(0, lines[number].strip().lstrip("#").strip())
            number -= 1
        inline = line.split("  # ", 1)[1].strip() if "  # " in line else ""
        text = " ".join([*above, inline]).strip()
        if text:
            found[node.target.id] = text
    return found


def _excerpt(text: str, most: int = 40) -> str:
    """The start of a metadata file, at most ``most`` lines, cut at an entry's end."""
    lines = text.rstrip().splitlines()
    if len(lines) <= most:
        return "\n".join(lines)
    cut = most
    while cut > 1 and lines[cut].startswith("    "):  # inside an entry: back to its start
        cut -= 1
    return "\n".join([*lines[:cut], "# ..."])


SCHEMAS = Path(__file__).resolve().parent / "schemas"  # shipped in the package


def json_schemas() -> dict[str, str]:
    """File name -> the JSON Schema of each metadata file, for editors (a YAML file's first
    line ``# yaml-language-server: $schema=<path>`` makes VS Code complete and check it)."""

    found = {}
    for stem, model in METADATA_FILES.items():
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"medallion_assets/catalog/schemas/{stem}.schema.json",
            **model.model_json_schema(),
            "title": f"metadata/{stem}.yaml",
        }
        found[f"{stem}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m medallion_assets.catalog.reference OUT.md", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parents[2]
    Path(argv[0]).write_text(metadata_reference(root))
    SCHEMAS.mkdir(exist_ok=True)
    for name, text in json_schemas().items():
        (SCHEMAS / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
