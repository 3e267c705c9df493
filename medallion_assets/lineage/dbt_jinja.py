"""A dbt model rendered by Jinja as dbt compiles it, for ``lineage scan``.

dbt renders a model with Jinja: ``ref`` and ``source`` name tables and record the model's
dependencies (``depends_on``), the project's macros (``macros/``) and its installed packages'
(``dbt_packages/``) expand, ``{% set %}`` holds values, loops run. This does the same in Jinja's
sandbox, as dbt parses (``execute`` and ``is_incremental()`` are false: nothing is queried, a
full refresh), for production (``target.name`` is ``prod``), and records every table a ``ref``
or ``source`` call names, in a comment, a set block or a macro's body included, as dbt's graph
does. A name Jinja has no value for is true in an ``{% if %}`` (a package's ``enabled_vars``
check, whose default is true).

What Jinja cannot expand (a macro of a package that is not installed, ``run_query``'s rows)
stands for what its place in the SQL holds (``templates.stand_in``: a query, a table, a value);
when it stands where rows come from and none of its arguments names a table, the model is
listed as not traced whole (``Rendered.unexpanded``). A model Jinja cannot render at all is
read by ``templates.render_template``'s approximation, and said.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.dbt_names import (
    JINJA_HOOKS,
    STATE,
    Call,
    Config,
    MacroCall,
    Namespace,
    Relation,
    RenderState,
    Target,
    Unknown,
    env_var,
    ref,
    return_value,
    source,
    var,
)
from medallion_assets.lineage.templates import Place, render_template, stand_in

_TOKENS = re.compile(r"__medallion_jinja_(\d+)__", re.I)
# dbt's own block tags Jinja does not know: their bodies define tests, docs, materializations.
_DBT_BLOCKS = re.compile(
    r"\{%-?\s*(docs|test|materialization|data_test)\b.*?\{%-?\s*end\1\s*-?%\}", re.S | re.I
)
_SNAPSHOT_TAGS = re.compile(r"\{%-?\s*(?:snapshot\b[^%]*|endsnapshot\s*)-?%\}", re.I)


@dataclass(frozen=True)
class Rendered:
    file: SqlFile  # the model's SQL
    depends_on: tuple[str, ...]  # every table a ref() or source() call named, in order
    unexpanded: tuple[str, ...]  # why the model's tables may not all be traced


def _without_dbt_blocks(text: str) -> str:
    """``text`` without dbt's own block tags (their bodies are no model's SQL)."""
    return _SNAPSHOT_TAGS.sub("", _DBT_BLOCKS.sub("", text))


class _Sandbox(SandboxedEnvironment):
    """Jinja's sandbox, where a Python method given an unknown value (``', '.join(cols)``)
    gets the value's token, as it would get dbt's text."""

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().call(__context, __obj, *args, **kwargs)
        except TypeError:
            builtin = isinstance(__obj, (types.BuiltinMethodType, types.BuiltinFunctionType))
            if not builtin:
                raise
            return super().call(__context, __obj, *(_text(a) for a in args), **kwargs)


def _text(value: Any) -> Any:
    if isinstance(value, Unknown):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_text(v) for v in value]
    return value


class Macros:
    """A dbt project's macros (its ``macro-paths``) and its installed packages', compiled once
    per scan and shared by every model's render."""

    def __init__(self, dialect: str = "spark"):
        self.env = _Sandbox(
            undefined=Unknown, extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"]
        )
        self.dialect = dialect
        self.names: dict[str, Any] = {
            "ref": ref,
            "source": source,
            "config": Config(),
            "var": var,
            "env_var": env_var,
            "is_incremental": lambda: False,  # as dbt parses: the full refresh
            "execute": False,
            "flags": Unknown(name="flags"),
            "target": Target(dialect),
            "return": return_value,
            "log": lambda *a, **k: "",
            "print": lambda *a, **k: "",
            "adapter": _Adapter(self),
            "zip": zip,
            "tojson": lambda *a, **k: "",
            "fromjson": lambda *a, **k: Unknown(name="fromjson"),
        }
        self.packages: dict[str, dict[str, Any]] = {}
        self.own: dict[str, Any] = {}  # the project's own macros
        self.problems: list[tuple[str, str]] = []  # (macro file, why Jinja could not compile it)

    def add(self, label: str, text: str, package: str | None = None) -> None:
        """The macros one file defines: the project's are names every model and macro sees;
        a package's are ``package.name``."""
        text = _without_dbt_blocks(text)
        if "{%" not in text:
            return
        token = STATE.set(RenderState())  # the file's top level runs: its refs are no model's
        try:
            template = self.env.from_string(text)
            module = template.make_module(vars=self.names, shared=True)
        except Exception as error:  # Jinja's or the file's own: the other files still load
            self.problems.append((label, f"{type(error).__name__}: {str(error)[:200]}"))
            return
        finally:
            STATE.reset(token)
        found = {
            name: MacroCall(value)
            for name, value in vars(module).items()
            if not name.startswith("_") and callable(value)
        }
        if package is None:
            self.names.update(found)
            self.own.update(found)
        else:
            self.packages.setdefault(package, {}).update(found)
            self.names.setdefault(package, Namespace(package, self.packages[package]))

    def name_project(self, name: str) -> None:
        """The project's macros answer to its name too (``my_project.my_macro``)."""
        self.names.setdefault(name, Namespace(name, self.own))

    def render(self, sql_file: SqlFile) -> Rendered:
        """``sql_file`` rendered (module docstring); Jinja's failure falls back and is said."""
        state = RenderState()
        token = STATE.set(state)
        try:
            # the model itself; the macros it calls see it too
            self.names["this"] = Relation(sql_file.default_target or "")
            rendered = self.env.from_string(_without_dbt_blocks(sql_file.text)).render(self.names)
        # Jinja's, a macro's or dbt's own error: one model never stops the scan
        except Exception as error:
            reason = f"Jinja could not render it ({type(error).__name__}: {str(error)[:200]})"
            fallback = render_template(sql_file)
            return Rendered(fallback, tuple(dict.fromkeys(state.depends)), (reason,))
        finally:
            STATE.reset(token)
        text, unexpanded = _place_tokens(rendered, state.calls)
        text = re.sub(r"[ \t]+\n", "\n", text).strip()
        model = SqlFile(sql_file.label, text, sql_file.dialect, sql_file.default_target)
        return Rendered(model, tuple(dict.fromkeys(state.depends)), unexpanded)


class _Adapter:
    """``adapter.dispatch('name', 'package')``: the dialect's or the default implementation."""

    def __init__(self, macros: Macros):
        self._macros = macros

    def dispatch(self, name: str, macro_namespace: str | None = None, **kwargs: Any) -> Any:
        places = [self._macros.packages.get(macro_namespace or "", {}), self._macros.names]
        for prefix in (f"{self._macros.dialect}__", "default__", ""):
            for found in places:
                macro = found.get(prefix + name)
                if callable(macro) and not isinstance(macro, Unknown):
                    return macro
        return Unknown(name=f"{macro_namespace or 'adapter'}.{name}")

    def __getattr__(self, name: str) -> Any:
        if name[:1] == "_" or name in JINJA_HOOKS:
            raise AttributeError(name)
        return Unknown(name=f"adapter.{name}")


def _place_tokens(text: str, calls: list[Call]) -> tuple[str, tuple[str, ...]]:
    """The rendered SQL with each token replaced by what its place holds; why rows may be
    missing (a token where rows come from, none of whose arguments names a table)."""
    out: list[str] = []
    unexpanded: list[str] = []
    at, tail = 0, ""  # tail: the last 300 characters written, what a place looks back at
    for match in _TOKENS.finditer(text):
        out.append(text[at : match.start()])
        tail = (tail + out[-1])[-300:]
        at = match.end()
        call = calls[int(match.group(1))] if int(match.group(1)) < len(calls) else None
        if call is None:
            continue
        place = Place(tail, _TOKENS.sub("x", text[at : at + 200]))
        words = [w for w in call.words if not _TOKENS.search(w)]
        out.append(stand_in(call.name, call.called, call.tables, words, place))
        tail = (tail + out[-1])[-300:]
        rows = place.table or (place.query and not place.statement)
        if rows and not call.tables and not place.in_name:
            unexpanded.append(
                f"{call.name} stands where rows come from and is not expanded (not a macro of "
                "the folder's dbt project nor of an installed package): its tables are not traced"
            )
    out.append(text[at:])
    return "".join(out), tuple(dict.fromkeys(unexpanded))
