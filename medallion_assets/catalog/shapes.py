"""The shape a metadata field expects, in the project's words, from its model's annotation.

A value of the wrong shape (a mapping where a list belongs, a bare word where a column does)
is reported as what to write instead, e.g. ``expected a list of {name[, type, nullable, ...]}
— e.g. - {name: id, type: bigint}``, never as Pydantic's message. Examples come from the model
(``json_schema_extra={"examples": [...]}``, which editors show from the JSON Schema too), else
from the field's required keys.
"""

from __future__ import annotations

import datetime
import json
import re
import types
import typing
from collections.abc import Mapping
from typing import Literal, Union

from pydantic import BaseModel

from medallion_assets.catalog.yaml_source import Loc

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:@-]*")  # written unquoted in a flow mapping
_MAX_OPTIONAL = 4  # optional keys named in a shape; the reference lists them all

_SCALARS: dict[object, str] = {
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    datetime.date: "a date (2026-01-01)",
}
_SCALAR_EXAMPLES: dict[object, str] = {
    int: "3",
    float: "1.5",
    bool: "true",
    datetime.date: "2026-01-01",
}


# Sample values of text fields by (singular) key, for fields whose type says only "text".
_TEXT_EXAMPLES = {
    "owner": "team:sales",
    "pii_column": "email",
    "column": "id",
    "key": "id",
    "sort_key": "order_date",
    "table": "gold.sales",
    "depends_on": "gold.sales",
    "sink": "gold.sales",
    "tag": "finance",
    "layer": "silver",
    "check": "orders_rules",
    "name": "sales",
    "system": "s3_raw",
    "description": "What it holds, in words",
}


def annotation_at(model: type[BaseModel], loc: Loc) -> object | None:
    """The annotation of the field found at ``loc`` inside ``model``; None when it cannot be
    told (a union of several models, or a path the model does not have)."""
    current: object = model
    for part in loc:
        current = unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
            continue
        origin = typing.get_origin(current)
        args = typing.get_args(current)
        if origin in (tuple, list) and args and isinstance(part, int):
            current = args[0]
        elif origin is dict and len(args) == 2:
            current = args[1]
        else:
            return None
    return current


def unwrap(annotation: object) -> object:
    """Strip ``Annotated`` and ``X | None``; a union of several models stays a union."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if typing.get_origin(annotation) in (Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def shape(annotation: object) -> str:
    """``a list of {name[, type, nullable, ...]}``, ``a mapping of names to {kind[, ...]}``."""
    annotation = unwrap(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _keys(annotation)
    if origin in (tuple, list) and args:
        inner = shape(args[0])
        return "a list of " + ("rules" + inner[6:] if inner.startswith("a rule ") else inner)
    if origin is dict and len(args) == 2:
        return f"a mapping of names to {shape(args[1])}"
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (Union, types.UnionType):
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        kinds = [_literal_default(m, "kind") for m in models]
        if models and all(kinds):
            return "a rule {kind, ...} (kind: " + ", ".join(str(k) for k in kinds) + ")"
        return " or ".join(shape(a) for a in args if a is not type(None))
    return _SCALARS.get(annotation, "a value")


def example(annotation: object, key: str) -> str:
    """One YAML line of that shape: ``columns: [{name: id, type: bigint}]``; for an item of a
    list (``key`` empty), the item: ``- {name: id, type: bigint}``."""
    value = _example_value(unwrap(annotation), key)
    return f"{key}: {value}" if key else f"- {value}"


def _example_value(annotation: object, key: str) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (tuple, list) and args:
        return f"[{_example_value(unwrap(args[0]), _singular(key))}]"
    if origin is dict and len(args) == 2:
        return f"{{my_{_singular(key) or 'name'}: {_example_value(unwrap(args[1]), '')}}}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _flow(annotation)
    if origin in (Union, types.UnionType):  # a rule: the first kind's example
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            return _flow(next((m for m in models if _example_of(m)), models[0]))
    return _scalar_example(annotation, key)


def _keys(model: type[BaseModel]) -> str:
    required = [name for name, f in model.model_fields.items() if f.is_required()]
    optional = [name for name, f in model.model_fields.items() if not f.is_required()]
    shown = optional[:_MAX_OPTIONAL] + (["..."] if len(optional) > _MAX_OPTIONAL else [])
    if not required:
        return "{" + ", ".join(shown) + "}"
    extra = f"[, {', '.join(shown)}]" if shown else ""
    return "{" + ", ".join(required) + extra + "}"


def _flow(model: type[BaseModel]) -> str:
    """The model's own example as a YAML flow mapping, else its required keys with values."""
    own = _example_of(model)
    if own is not None:
        return _flow_value(own)
    parts = [
        f"{name}: {_example_value(unwrap(f.annotation), name)}"
        for name, f in model.model_fields.items()
        if f.is_required()
    ]
    return "{" + ", ".join(parts) + "}"


def _example_of(model: type[BaseModel]) -> Mapping[str, object] | None:
    extra = model.model_config.get("json_schema_extra")
    examples = extra.get("examples") if isinstance(extra, Mapping) else None
    if isinstance(examples, list) and examples and isinstance(examples[0], Mapping):
        return examples[0]
    return None


def _flow_value(value: object) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and not _PLAIN.fullmatch(value):
        return json.dumps(value)
    return str(value)


def _scalar_example(annotation: object, key: str) -> str:
    if typing.get_origin(annotation) is Literal:
        return str(typing.get_args(annotation)[0])
    if annotation in _SCALAR_EXAMPLES:
        return _SCALAR_EXAMPLES[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _flow(annotation)
    sample = _TEXT_EXAMPLES.get(_singular(key))
    return _flow_value(sample) if sample else f"<{_singular(key) or 'text'}>"


def _singular(key: str) -> str:
    return key[:-1] if key.endswith("s") and not key.endswith("ss") else key


def _literal_default(model: type[BaseModel], name: str) -> object:
    field = model.model_fields.get(name)
    if field is None:
        return None
    annotation = unwrap(field.annotation)
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)[0]
    return None
