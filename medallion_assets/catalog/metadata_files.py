"""Read and validate the files under ``metadata/``, one model per file.

Every problem becomes a ``CatalogIssue`` with the file, line, field and a fix; a file with
problems yields ``None`` so later checks skip what they cannot trust instead of stopping.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from medallion_assets.catalog import models, operations
from medallion_assets.catalog import sources as source_models
from medallion_assets.catalog.errors import CatalogError, CatalogIssue
from medallion_assets.catalog.rules import RULE_KINDS
from medallion_assets.catalog.shapes import annotation_at, example, shape, unwrap
from medallion_assets.catalog.yaml_source import Loc, YamlDocument, read_yaml

# file stem -> (model, top-level key holding the content, empty value when the file is absent)
METADATA_FILES: dict[str, type[BaseModel]] = {
    "project": models.ProjectFile,
    "systems": models.SystemsFile,
    "sources": source_models.SourcesFile,
    "targets": models.TargetsFile,
    "validation": models.ValidationFile,
    "policies": operations.PoliciesFile,
    "control": operations.ControlFile,
    "profiles": operations.ProfilesFile,
    "pipelines": operations.PipelinesFile,
    "datasets": models.DatasetsFile,
    "exposures": models.ExposuresFile,
}


@dataclass(frozen=True)
class LoadedFile:
    model: BaseModel
    document: YamlDocument | None  # None when the file is absent and defaults were used


M = TypeVar("M", bound=BaseModel)


def model_of(files: Mapping[str, LoadedFile], stem: str, kind: type[M]) -> M | None:
    """The validated model of ``metadata/<stem>.yaml``, or None if it did not validate."""
    loaded = files.get(stem)
    return loaded.model if loaded is not None and isinstance(loaded.model, kind) else None


def load_metadata(root: Path) -> tuple[dict[str, LoadedFile], list[CatalogIssue]]:
    """Every metadata file that validated, by stem; issues for those that did not."""
    folder = root / "metadata"
    issues: list[CatalogIssue] = []
    loaded: dict[str, LoadedFile] = {}
    if not folder.is_dir():
        return loaded, [
            CatalogIssue(
                "metadata/",
                "",
                "the metadata folder is missing",
                "create metadata/ with at least project.yaml",
            )
        ]
    present = {p.stem: p for p in sorted(folder.iterdir()) if p.is_file()}
    for stem, path in present.items():
        if path.suffix not in (".yaml", ".yml") or stem not in METADATA_FILES:
            issues.append(_unknown_file(path))
    for stem, model in METADATA_FILES.items():
        found = present.get(stem)
        if found is None or found.suffix not in (".yaml", ".yml"):
            default = _default(stem, root)
            if default is not None:
                loaded[stem] = LoadedFile(default, None)
            continue
        result, file_issues = _load_one(found, f"metadata/{found.name}", model)
        issues.extend(file_issues)
        if result is not None:
            loaded[stem] = result
    return loaded, issues


def _unknown_file(path: Path) -> CatalogIssue:
    known = [f"{stem}.yaml" for stem in METADATA_FILES]
    close = difflib.get_close_matches(path.name, known, n=1)
    fix = f"rename it to {close[0]}" if close else f"metadata files are: {', '.join(known)}"
    return CatalogIssue(f"metadata/{path.name}", "", "unknown metadata file", fix)


def _default(stem: str, root: Path) -> BaseModel | None:
    """Files a project may omit, with their empty content."""
    empty: dict[str, dict[str, Any]] = {
        "project": {"name": root.resolve().name.lower()},
        "systems": {"systems": {}},
        "sources": {"sources": {}},
        "targets": {"targets": ()},
        "validation": {"rule_sets": {}},
        "policies": {"retry_policies": {}},
        "control": {"flags": ()},
        "pipelines": {"pipelines": ()},
        "datasets": {"datasets": {}},
        "exposures": {"exposures": ()},
    }
    if stem not in empty:
        return None  # profiles.yaml has no sensible empty form; its absence is allowed
    return METADATA_FILES[stem].model_validate(empty[stem])


def _load_one(
    path: Path, label: str, model: type[BaseModel]
) -> tuple[LoadedFile | None, list[CatalogIssue]]:
    document, issues = read_yaml(path, label)
    if document is None:
        return None, issues
    data = document.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        issues.append(
            document.issue(
                (),
                f"the file holds a {type(data).__name__}, not a mapping",
                f"start the file with the keys of {model.__name__}",
            )
        )
        return None, issues
    try:
        # Strict: a quoted "3" where a number belongs, or "true" for a flag, is reported, not
        # silently converted; YAML's own numbers, booleans and dates are the types expected.
        return LoadedFile(model.model_validate(data, strict=True), document), issues
    except ValidationError as error:
        issues.extend(_issues_from(error, document, model))
        return None, issues


def _issues_from(
    error: ValidationError, document: YamlDocument, model: type[BaseModel]
) -> list[CatalogIssue]:
    issues = []
    for item in error.errors():
        loc = _strip_union_tags(tuple(item["loc"]))
        message, fix = _explain(item, loc, model)
        issues.append(document.issue(loc, message, fix))
    return issues


def _strip_union_tags(loc: Loc) -> Loc:
    """Drop the rule kind Pydantic adds to a location: the YAML has no such key."""
    out: list[object] = []
    for part in loc:
        if isinstance(part, str) and (part in RULE_KINDS or part.startswith("function-")):
            continue
        out.append(part)
    return tuple(out)


def _explain(item: ErrorDetails, loc: Loc, model: type[BaseModel]) -> tuple[str, str]:
    kind = item["type"]
    if kind == "extra_forbidden":
        key = loc[-1] if loc else "?"
        allowed = _allowed_keys(model, loc[:-1])
        close = difflib.get_close_matches(str(key), allowed, n=1)
        if close:
            fix = f"did you mean '{close[0]}'?"
        else:
            fix = f"remove it; allowed keys here: {', '.join(allowed)}" if allowed else "remove it"
        return f"unknown key {key!r}", fix
    if kind == "missing":
        return "required key is missing", f"add '{loc[-1]}:'" if loc else "add it"
    if kind == "union_tag_invalid":
        tag = item.get("ctx", {}).get("tag", "?")
        return f"unknown rule kind {tag!r}", f"use one of: {', '.join(RULE_KINDS)}"
    if kind == "union_tag_not_found":
        return "the rule has no 'kind'", f"add 'kind:' with one of: {', '.join(RULE_KINDS)}"
    if kind == "literal_error":
        expected = item.get("ctx", {}).get("expected", "")
        return f"{item['input']!r} is not allowed", f"use one of: {expected}"
    if kind == "value_error":  # our validators' messages already say what to write
        return str(item["msg"]).removeprefix("Value error, "), ""
    if kind in _STRICT_TYPES:
        return _strict_type(kind, item.get("input"), loc)
    if kind in _BOUNDS:
        return _out_of_bounds(kind, item, loc)
    if kind.endswith("_type"):  # a mapping for a list, a word for a column, ...
        return _wrong_shape(item, loc, model)
    return _as_pydantic_says(item)


def _as_pydantic_says(item: ErrorDetails) -> tuple[str, str]:
    """A problem this module has no words of its own for: Pydantic's, and where to look."""
    return f"{item['msg']} (got {_what(item.get('input'))})", "see docs/reference/metadata.md"


# Pydantic's error types for a number out of its field's bounds: (words, the ctx key).
_BOUNDS = {
    "greater_than": ("more than", "gt"),
    "greater_than_equal": ("at least", "ge"),
    "less_than": ("less than", "lt"),
    "less_than_equal": ("at most", "le"),
}


def _out_of_bounds(kind: str, item: ErrorDetails, loc: Loc) -> tuple[str, str]:
    """``0`` where the field takes at least 1: say the bound and a value within it."""
    words, key = _BOUNDS[kind]
    limit = item.get("ctx", {}).get(key)
    field = loc[-1] if loc and isinstance(loc[-1], str) else "the value"
    if isinstance(limit, int | float):
        within = {"gt": limit + 1, "ge": limit, "lt": limit - 1, "le": limit}[key]
        fix = f"e.g. {field}: {within}"
    else:
        fix = f"give {words} {limit}"
    return f"{item.get('input')!r} is not allowed: {field} must be {words} {limit}", fix


def _wrong_shape(item: ErrorDetails, loc: Loc, model: type[BaseModel]) -> tuple[str, str]:
    """What the field expects, in the project's words, and a line of that shape."""
    annotation = annotation_at(model, loc)
    if annotation is None:
        return _as_pydantic_says(item)
    key = next((str(p) for p in reversed(loc) if isinstance(p, str)), "")
    line = example(annotation, "" if loc and isinstance(loc[-1], int) else key)
    return f"expected {shape(annotation)}, got {_what(item.get('input'))}", f"e.g. {line}"


def _what(value: object) -> str:
    if isinstance(value, dict):
        return f"a mapping of {', '.join(map(str, list(value)[:3]))}" if value else "{}"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}" if value else "[]"
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the text {value[:60]!r}"
    return f"{type(value).__name__} {value!r}"


# Pydantic's error types for a scalar of the wrong YAML type, and what the field wants.
_STRICT_TYPES = {
    "int_type": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "date_type": "a date",
    "string_type": "text",
}


def _strict_type(kind: str, value: object, loc: Loc) -> tuple[str, str]:
    """A scalar of the wrong type: say what YAML read and how to write what the field wants."""
    key = loc[-1] if loc and isinstance(loc[-1], str) else "the value"
    wanted = _STRICT_TYPES[kind]
    if kind == "string_type":
        return f"{type(value).__name__} {value!r} is not {wanted}", f'quote it: {key}: "{value}"'
    if isinstance(value, str) and _reads_as(kind, value.strip()):
        return (
            f"{value!r} is quoted, so YAML reads it as text, not {wanted}",
            f"remove the quotes: {key}: {value.strip()}",
        )
    got = f"the text {value!r}" if isinstance(value, str) else f"{type(value).__name__} {value!r}"
    example = {"date_type": "2026-01-01", "bool_type": "true", "int_type": "3"}.get(kind, "1.5")
    return f"{got} is not {wanted}", f"write {wanted} for {key}, e.g. {key}: {example}"


def _reads_as(kind: str, text: str) -> bool:
    """Whether unquoted ``text`` is what the field wants."""
    if kind == "bool_type":
        return text.lower() in ("true", "false")
    if kind == "date_type":
        return re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) is not None
    try:
        number = float(text)
    except ValueError:
        return False
    return kind == "float_type" or (number.is_integer() and "." not in text)


def _allowed_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """Field names of the model found at ``loc`` inside ``model``; [] when it can't be told."""
    current = unwrap(annotation_at(model, loc))
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def read_control_file(root: Path) -> operations.ControlFile:
    """``metadata/control.yaml`` as it is on disk now: the kill switch reads it at every
    decision, so an edit takes effect without reloading the code location. Raises
    ``CatalogError`` naming the file, field and fix when it does not validate."""
    found = _read_file(root, "control", operations.ControlFile)
    return found if found is not None else operations.ControlFile()


def read_profiles_file(root: Path) -> operations.ProfilesFile | None:
    """``metadata/profiles.yaml`` alone (None without one), for what needs only the profiles
    (the Spark driver's pool weights) and not the whole project loaded again."""
    return _read_file(root, "profiles", operations.ProfilesFile)


def _read_file(root: Path, stem: str, model: type[M]) -> M | None:
    """One metadata file ``<stem>.yaml`` (or ``.yml``) validated as ``model``; None when absent."""
    path = next(
        (
            p
            for p in (root / "metadata" / f"{stem}.yaml", root / "metadata" / f"{stem}.yml")
            if p.is_file()
        ),
        None,
    )
    if path is None:
        return None
    loaded, issues = _load_one(path, f"metadata/{path.name}", model)
    if loaded is None or not isinstance(loaded.model, model):
        raise CatalogError(root, issues)
    return loaded.model
