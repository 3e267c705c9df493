"""The names a dbt model's Jinja sees (``ref``, ``source``, ``config``, ``var``, ``target``,
``return``...) and the values they give, for ``dbt_jinja``: a ``Relation`` is a table's name,
an ``Unknown`` is whatever Jinja has no value for (a package's macro, ``run_query``'s rows),
written as a token its place in the SQL later turns into what it stands for. ``STATE`` holds
what the model being rendered recorded: every table ``ref``/``source`` named, every unknown
call."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Undefined

TOKEN = "__medallion_jinja_{}__"
MAX_MACRO_DEPTH = 60  # a macro calling itself without end is an error, not a hang
# Attributes Jinja and its sandbox ask a callable for: never a dbt name.
JINJA_HOOKS = frozenset({"unsafe_callable", "alters_data", "jinja_pass_arg", "jinja_async_variant"})


@dataclass
class Call:
    """A call Jinja could not expand: its name, the tables and strings of its arguments."""

    name: str
    called: bool
    tables: list[str]
    words: list[str]


@dataclass
class RenderState:
    """What rendering one model recorded."""

    depends: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    depth: int = 0

    def token(self, call: Call) -> str:
        self.calls.append(call)
        return TOKEN.format(len(self.calls) - 1)


STATE: contextvars.ContextVar[RenderState] = contextvars.ContextVar("dbt_render")


class Relation(str):
    """What ``ref``/``source``/``this`` give: the table's name, with a dbt Relation's parts.
    Written with a space before it, as dbt's quoted name needs none (``join{{ ref('c') }}``)."""

    def __str__(self) -> str:
        return f" {str.__str__(self)}"

    @property
    def identifier(self) -> str:
        return self.rsplit(".", 1)[-1]

    name = table = identifier

    @property
    def schema(self) -> str:
        return self.rsplit(".", 1)[0] if "." in self else ""

    @property
    def database(self) -> str:
        return ""

    def include(self, *args: object, **kwargs: object) -> Relation:
        return self

    def render(self) -> str:
        return str(self)

    quote = incorporate = include


class Unknown(Undefined):
    """A name Jinja has no value for (a package's macro, ``run_query``'s result): callable, its
    attributes and items unknown too, empty when looped over; written as a token the SQL's
    place later turns into what it stands for."""

    __slots__ = ("_call",)

    def __init__(self, *args: Any, call: Call | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._call = call

    def _name(self) -> str:
        return str(self._undefined_name or "value")

    def __str__(self) -> str:
        state = STATE.get()
        return state.token(self._call or Call(self._name(), False, [], []))

    def __getattr__(self, name: str) -> Any:
        if name[:2] == "__" or name in JINJA_HOOKS:
            raise AttributeError(name)
        return Unknown(name=f"{self._name()}.{name}")

    def __getitem__(self, key: object) -> Unknown:  # type: ignore[override]
        return Unknown(name=self._name())

    def __call__(self, *args: Any, **kwargs: Any) -> Unknown:  # type: ignore[override]
        caller = kwargs.pop("caller", None)
        if callable(caller):  # {% call statement(...) %}SQL{% endcall %}: its refs count
            caller()
        words = [a for a in args if isinstance(a, str) and not isinstance(a, Relation)]
        tables = list(relations((args, kwargs)))
        return Unknown(name=self._name(), call=Call(self._name(), True, tables, words))

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return True  # the first branch of {% if package.enabled_vars(...) %}, as dbt's default

    def __int__(self) -> int:  # type: ignore[override]
        return 0  # var('days') | int

    def __float__(self) -> float:  # type: ignore[override]
        return 0.0

    def __len__(self) -> int:
        return 0

    def _same(self, *args: Any, **kwargs: Any) -> Unknown:
        return self

    def _false(self, *args: Any, **kwargs: Any) -> bool:
        return False

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same  # type: ignore[assignment]
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _same  # type: ignore[assignment]
    __mod__ = __rmod__ = __pos__ = __neg__ = __pow__ = __rpow__ = _same  # type: ignore[assignment]
    __lt__ = __le__ = __gt__ = __ge__ = __contains__ = _false  # type: ignore[assignment]


def relations(value: object) -> Iterator[str]:
    """The tables named anywhere in a call's arguments (lists and mappings included)."""
    if isinstance(value, Relation):
        yield str.__str__(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from relations(item)
    elif isinstance(value, (list, tuple, set)):
        for item in value:
            yield from relations(item)


class Return(Exception):
    def __init__(self, value: object):
        self.value = value


def return_value(value: object = "") -> None:
    raise Return(value)


class MacroCall:
    """A project macro as dbt calls it: ``{{ return(x) }}`` gives ``x``; a depth bound."""

    def __init__(self, macro: Callable[..., Any]):
        self.macro = macro

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        state = STATE.get()
        if state.depth >= MAX_MACRO_DEPTH:
            raise RecursionError(f"macros nested more than {MAX_MACRO_DEPTH} deep")
        state.depth += 1
        try:
            return self.macro(*args, **kwargs)
        except Return as returned:
            return returned.value
        finally:
            state.depth -= 1


class Namespace:
    """A package's macros (``dbt_utils.star``); a name it lacks is unknown."""

    def __init__(self, name: str, macros: Mapping[str, Any]):
        self._name, self._macros = name, macros

    def __getattr__(self, name: str) -> Any:
        if name[:1] == "_" or name in JINJA_HOOKS:
            raise AttributeError(name)
        return self._macros.get(name) or Unknown(name=f"{self._name}.{name}")


def ref(*args: Any, **kwargs: Any) -> Any:
    names = [a for a in args if isinstance(a, str)]
    model = kwargs.get("model_name") or kwargs.get("name") or (names[-1] if names else "")
    if not isinstance(model, str) or not model:
        return Unknown(name="ref")
    STATE.get().depends.append(model)
    return Relation(model)


def source(*args: Any, **kwargs: Any) -> Any:
    source = kwargs.get("source_name", args[0] if args else "")
    table = kwargs.get("table_name", args[1] if len(args) > 1 else "")
    if not isinstance(source, str) or not isinstance(table, str) or not source or not table:
        return Unknown(name="source")
    STATE.get().depends.append(f"{source}.{table}")
    return Relation(f"{source}.{table}")


class Config:
    """``{{ config(...) }}`` writes nothing; ``config.get('k', d)`` is ``d``."""

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        return ""

    def get(self, key: str, default: Any = None) -> Any:
        return default

    require = get


def var(name: str = "", default: Any = None) -> Any:
    return default if default is not None else Unknown(name="var")


def env_var(name: str = "", default: Any = "") -> Any:
    return default


class Target:
    """dbt's ``target``: production's (the tables a lineage is asked about)."""

    name = "prod"
    target_name = "prod"
    schema = "analytics"
    database = "analytics"
    threads = 1

    def __init__(self, dialect: str):
        self.type = dialect
