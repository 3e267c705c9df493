"""Column lineage of nested data: the rows of ``UNNEST`` and ``LATERAL``, the fields of an
array's struct elements, and ``alias.*`` over an element.

A field read through an element (``item.product_id`` of ``UNNEST(items) AS item``) comes from
its array; BigQuery's UNNEST of structs makes a column per field, named by the array literal's
first struct (``UNNEST([STRUCT(a AS h), STRUCT(b)])``: ``h`` from ``a`` and ``b``) or by the
query of ``ARRAY(SELECT AS STRUCT ...)``.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.origins import Origin, OutputColumn, merged
from medallion_assets.lineage.scopes import renamed
from medallion_assets.lineage.statement import UNNEST_ALIAS


class NestedOutputs:
    """The nested-data part of column lineage; the resolver gives the two methods below."""

    _subquery_scopes: dict[int, Scope]

    def outputs(self, scope: Scope) -> list[OutputColumn]:
        raise NotImplementedError

    def expression_origin(
        self, scope: Scope, node: exp.Expr, earlier: list[OutputColumn]
    ) -> Origin:
        raise NotImplementedError

    def _lateral_outputs(self, scope: Scope, lateral: exp.Lateral) -> list[OutputColumn]:
        alias = lateral.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None else []
        query = lateral.this.this if isinstance(lateral.this, exp.Subquery) else None
        inner = next((c for c in scope.subquery_scopes if c.expression is query), None)
        if inner is not None:  # ``LATERAL (SELECT ...) AS x(a, b)``: the subquery's columns
            return renamed(names, self.outputs(inner))
        origin = self.expression_origin(scope, lateral.this, []).computed()
        return [OutputColumn(name, origin) for name in names or [lateral.alias_or_name]]

    def _unnest_outputs(self, scope: Scope, unnest: exp.Unnest) -> list[OutputColumn]:
        """``UNNEST(items) AS item`` (BigQuery: the alias names the element),
        ``unnest(a, b) AS u(x, y)``, ``WITH OFFSET AS pos``: each element from its array."""
        origins = [self.expression_origin(scope, e, []).computed() for e in unnest.expressions]
        alias = unnest.args.get("alias")
        names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        internal = alias is not None and alias.name.startswith(UNNEST_ALIAS)
        if not names and alias is not None and alias.name and not internal:
            names = [alias.name]  # BigQuery's value alias
        fields = self._struct_fields(scope, unnest) if internal else None
        if fields is not None:  # UNNEST([STRUCT(... AS a, ...), ...]): a column per field
            return fields
        if not names:
            names = ["unnest" if len(origins) == 1 else f"col{i}" for i in range(len(origins))]
        outputs = [
            OutputColumn(name, origins[min(i, len(origins) - 1)] if origins else Origin())
            for i, name in enumerate(names)
        ]
        offset = unnest.args.get("offset")
        if isinstance(offset, exp.Expr):
            outputs.append(OutputColumn(offset.name or "offset", merged(origins)))
        return outputs

    def _struct_fields(self, scope: Scope, unnest: exp.Unnest) -> list[OutputColumn] | None:
        """UNNEST of an array of structs whose fields have names: a column per field, from
        its values in every struct (by position after the first); None for any other."""
        array = unnest.expressions[0] if len(unnest.expressions) == 1 else None
        typed = array.to if isinstance(array, exp.Cast) else None  # ARRAY<STRUCT<x INT64>>[...]
        array = array.this if isinstance(array, exp.Cast) else array
        items = array.expressions if isinstance(array, exp.Array) else []
        if not items:
            return None
        struct_query = isinstance(items[0], exp.Select) and items[0].args.get("kind") == "STRUCT"
        if len(items) == 1 and struct_query:
            inner = self._subquery_scopes.get(id(items[0]))  # ARRAY(SELECT AS STRUCT ...)
            return list(self.outputs(inner)) if inner is not None else None
        element = typed.expressions[0] if typed is not None and typed.expressions else None
        if isinstance(element, exp.DataType) and element.this == exp.DType.STRUCT:
            names = [field.name for field in element.expressions]
        elif all(isinstance(e, exp.Struct) for e in items):
            names = [_field_name(field) for field in items[0].expressions]
        else:
            return None
        if not all(names):
            return None  # an unnamed field of the first struct: no column of its own
        return self._fields(scope, names, items)

    def _fields(self, scope: Scope, names: list[str], rows: list[exp.Expr]) -> list[OutputColumn]:
        """The columns ``names`` of struct or tuple ``rows``, each from its position's values."""
        fields = [Origin() for _ in names]
        for row in rows:
            for position, field in enumerate(row.expressions[: len(names)]):
                value = field.expression if isinstance(field, exp.PropertyEQ) else field.unalias()
                fields[position] = fields[position].merge(self.expression_origin(scope, value, []))
        return [OutputColumn(name, origin) for name, origin in zip(names, fields, strict=True)]

    def _value_struct(self, scope: Scope, select: exp.Select) -> list[OutputColumn] | None:
        """``SELECT AS VALUE STRUCT(a AS n, ...)``: a value table whose columns are the
        struct's fields (BigQuery); None for any other SELECT."""
        values = select.expressions
        if select.args.get("kind") != "VALUE" or len(values) != 1:
            return None
        struct = values[0].unalias()
        if not isinstance(struct, exp.Struct):
            return None
        names = [_field_name(field) for field in struct.expressions]
        return self._fields(scope, names, [struct]) if names and all(names) else None

    def _element_field(self, source: Scope, qualifier: str, name: str) -> Origin | None:
        """``c.p`` of ``UNNEST([STRUCT(a AS p, ...)]) AS c``: the field's own origin."""
        if not isinstance(source.expression, exp.Unnest):
            return None
        for field in self._struct_fields(source, source.expression) or []:
            if field.name == name:
                return field.origin
        return None

    def _element_star(self, source: exp.Table | Scope, only: str) -> list[OutputColumn] | None:
        """``c.*`` over ``UNNEST(...) AS c``: the fields of its struct elements (known for an
        array literal of structs, else one ``*`` from the array); None for any other source."""
        if not isinstance(source, Scope) or not isinstance(source.expression, exp.Unnest):
            return None
        unnest, outputs = source.expression, self.outputs(source)
        if [o.name for o in outputs[:1]] != [only]:
            return None
        fields = self._struct_fields(source, unnest)
        if fields is not None:
            return fields
        reason = f"'{only}.*': the fields of its elements are unknown"
        return [OutputColumn("*", Origin(outputs[0].origin.sources, "star", None, reason))]


def _field_name(field: exp.Expr) -> str:
    """The name a struct literal gives a field: ``a AS n`` or ``n := a``; "" for none."""
    return field.name if isinstance(field, exp.PropertyEQ) else field.alias
