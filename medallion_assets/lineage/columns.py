"""Column lineage: for every output column of a query, the base-table columns its value comes from.

This is value lineage: columns used only to filter, join or group are not sources. Resolution
walks sqlglot's scopes (CTEs, derived tables, set operations, lateral views, subqueries) once
per query, memoising each scope's outputs, so a query costs one pass however many columns it has.
What cannot be resolved (a ``*`` over a table of unknown schema, an ambiguous unqualified
column) is returned with the reason instead of being dropped.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

from medallion_assets.lineage import relations
from medallion_assets.lineage.nested import NestedOutputs
from medallion_assets.lineage.origins import (
    Origin,
    OutputColumn,
    cast_type,
    is_query,
    merged,
    own_transform,
    stronger,
)
from medallion_assets.lineage.scopes import (
    apply_alias_columns,
    check_widths,
    column_source,
    enclosing,
    joined_star,
    projection_parts,
    source_label,
    source_named,
    star_as,
    star_of,
    unknown_fields,
    using_columns,
    using_relations,
)
from medallion_assets.lineage.statement import table_name
from medallion_assets.lineage.types import infer_type

Schema = Mapping[str, Mapping[str, str]]  # table -> column -> type


def query_columns(query: exp.Expr, schema: Schema) -> list[OutputColumn]:
    """Output columns of ``query`` with their origins.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT sum(o.amt) AS total FROM sales.orders o")
    >>> [(c.name, sorted(c.origin.sources)) for c in query_columns(q, {})]
    [('total', ['sales.orders.amt'])]
    """
    root = build_scope(query)
    if root is None:
        return []
    for scope in root.traverse():
        relations.check_distinct_names(scope)
    return _Resolver(schema, root).outputs(root)


class _Resolver(NestedOutputs):
    def __init__(self, schema: Schema, root: Scope):
        self.schema = schema
        # A query's scopes by expression: sqlglot gives a recursive CTE's self-reference a
        # bare scope of its anchor query, which stands for the anchor's own (traversed) scope.
        self._scopes = {id(scope.expression): scope for scope in root.traverse()}
        self._outputs: dict[int, list[OutputColumn]] = {}
        self._subquery_scopes: dict[int, Scope] = {}

    # --- outputs of a scope ---------------------------------------------------------------------

    def outputs(self, scope: Scope) -> list[OutputColumn]:
        scope = self._scopes.get(id(scope.expression), scope)
        key = id(scope)
        if key not in self._outputs:
            self._outputs[key] = []  # guards against self-reference
            self._outputs[key] = apply_alias_columns(scope, self._compute_outputs(scope))
        return self._outputs[key]

    def _compute_outputs(self, scope: Scope) -> list[OutputColumn]:
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            return self._set_operation_outputs(scope)
        if isinstance(expression, exp.Lateral):
            return self._lateral_outputs(scope, expression)
        if isinstance(expression, exp.Unnest):
            return self._unnest_outputs(scope, expression)
        if isinstance(expression, exp.Values):
            alias = expression.args.get("alias")
            names = [c.name for c in alias.columns] if alias is not None else []
            return [OutputColumn(name, Origin()) for name in names]
        if not isinstance(expression, exp.Select):
            return []
        value_table = self._value_struct(scope, expression)
        if value_table is not None:
            return value_table
        for child in scope.subquery_scopes:
            self._subquery_scopes[id(child.expression)] = child
        outputs: list[OutputColumn] = []
        for projection in expression.expressions:
            if isinstance(projection, exp.Star):
                outputs.extend(self._modified(scope, projection, self._star(scope, None)))
            elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
                star = self._star(scope, projection.table)
                outputs.extend(self._modified(scope, projection.this, star))
            else:
                value, names = projection_parts(projection)
                origin = self.expression_origin(scope, value, outputs)
                outputs.extend(OutputColumn(name, origin) for name in names)
        return outputs

    def _set_operation_outputs(self, scope: Scope) -> list[OutputColumn]:
        branches = [self.outputs(child) for child in scope.set_operation_scopes]
        named = next((b for b in branches if b and all(o.name != "*" for o in b)), None)
        unknown = ""
        if named is not None:
            listed = []
            for branch in branches:
                if not branch or (
                    len(branch) == 1 and branch[0].name == "*" and not star_of(branch)
                ):
                    unknown = "a branch's columns could not be listed"  # e.g. a table function's
                    continue
                listed.append(star_as(branch, named))
            branches = listed
        if not branches:
            return []
        check_widths(scope, branches)
        first = branches[0]
        result = []
        for position, column in enumerate(first):
            origin = column.origin
            for branch in branches[1:]:
                if position < len(branch):
                    origin = origin.merge(branch[position].origin)
            if unknown and origin.unresolved is None:
                origin = Origin(origin.sources, origin.transform, origin.type, unknown)
            result.append(OutputColumn(column.name, origin))
        return result

    def _modified(
        self, scope: Scope, star: exp.Star, columns: list[OutputColumn]
    ) -> list[OutputColumn]:
        """A star's ``EXCEPT``/``EXCLUDE`` (columns left out), ``REPLACE`` (a column's value
        from an expression) and ``RENAME``, over the columns it expands to."""
        dropped = {c.name for c in star.args.get("except_") or []}
        replaced = {
            e.alias_or_name: self.expression_origin(scope, e.unalias(), [])
            for e in star.args.get("replace") or []
        }
        renamed = {
            e.this.name: e.alias
            for e in star.args.get("rename") or []
            if isinstance(e, exp.Alias) and isinstance(e.this, exp.Column)
        }
        if not (dropped or replaced or renamed):
            return columns
        result = []
        for column in columns:
            if column.name == "*":  # unknown schema: nothing to drop from, said already
                result.append(column)
            elif column.name not in dropped:
                origin = replaced.get(column.name, column.origin)
                result.append(OutputColumn(renamed.get(column.name, column.name), origin))
        return result

    def _star(self, scope: Scope, only: str | None) -> list[OutputColumn]:
        """``*`` (every source's columns) or ``only.*``: the source aliased ``only``, else the
        table named ``only`` under another alias (``tab2.*`` of ``tab2 a``); never nothing."""
        sources = scope.selected_sources
        chosen = [s for alias, (_, s) in sources.items() if only is None or alias == only]
        if not chosen and only is not None:
            chosen = [
                s
                for _, s in sources.values()
                if isinstance(s, exp.Table) and only in (s.name, table_name(s))
            ]
            if not chosen:  # ``s.*`` of a struct column ``s``: its fields, from ``s``
                root = self.column_origin(scope, exp.column(only), [])
                known = bool(root.sources) and root.unresolved is None
                what = "the fields of the column" if known else "no table or alias named"
                reason = f"'{only}.*': {what} {only!r}" + (" are unknown" if known else "")
                read = root.sources if known else frozenset()
                return [OutputColumn("*", Origin(read, "star", unresolved=reason))]
        element = self._element_star(chosen[0], only) if only and len(chosen) == 1 else None
        if element is not None:
            return element
        per_source = [self._source_columns(source) for source in chosen]
        using = using_columns(scope) if only is None and len(chosen) > 1 else set()
        return joined_star(per_source, using)

    def _source_columns(self, source: exp.Table | Scope) -> list[OutputColumn]:
        if isinstance(source, Scope):
            outputs, unnest = list(self.outputs(source)), source.expression
            if unknown_fields(source, outputs):  # ``*`` over an UNNEST without an alias
                shown = exp.Unnest(expressions=unnest.expressions).sql()[:80]
                reason = f"'*' over {shown}: the fields of its elements are unknown"
                return [OutputColumn("*", Origin(outputs[0].origin.sources, "star", None, reason))]
            return outputs
        if relations.is_table_function(source):  # range(10), generate_series(...)
            reason = f"'*' over the table function {source.this.sql()}: its columns are unknown"
            return [OutputColumn("*", Origin(transform="star", unresolved=reason))]
        table = table_name(source)
        known = self.schema.get(table)
        if known is None:
            reason = f"'*' over {table} cannot be expanded: its schema is unknown"
            origin = Origin(frozenset({f"{table}.*"}), "star", unresolved=reason)
            return [OutputColumn("*", origin, star_table=table)]
        return [
            OutputColumn(name, Origin(frozenset({f"{table}.{name}"}), "direct", col_type))
            for name, col_type in known.items()
        ]

    # --- origin of an expression ----------------------------------------------------------------

    def expression_origin(
        self, scope: Scope, expression: exp.Expr, earlier: list[OutputColumn]
    ) -> Origin:
        found: Origin | None = None
        types: dict[int, str | None] = {}  # the type of each column it reads, by node
        for node in expression.walk(prune=lambda n: n is not expression and is_query(n)):
            part = None
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                part = self.column_origin(scope, node, earlier)
                types[id(node)] = part.type
            elif is_query(node) and node is not expression:
                part = self._subquery_origin(node)
            elif isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
                # struct(*), hash(t.*): every column of the sources (count(*) reads none)
                table = node.parent.table if isinstance(node.parent, exp.Column) else None
                part = merged(c.origin for c in self._star(scope, table)).computed()
            if part is not None:
                found = part if found is None else found.merge(part)
        kind = cast_type(expression)
        if found is None:
            return Origin(transform="constant", type=kind or infer_type(expression, types))
        own = own_transform(expression)
        if own == "direct":
            return found  # a bare column keeps its source's type
        kind = kind or infer_type(expression, types)
        return Origin(found.sources, stronger(found.transform, own), kind, found.unresolved)

    def _subquery_origin(self, node: exp.Expr) -> Origin:
        query = node.this if isinstance(node, exp.Subquery) else node
        scope = self._subquery_scopes.get(id(query)) or self._subquery_scopes.get(id(node))
        if scope is None:
            return Origin(unresolved="a subquery in this expression could not be analysed")
        return merged(column.origin for column in self.outputs(scope)).computed()

    def column_origin(
        self, scope: Scope, column: exp.Column, earlier: list[OutputColumn]
    ) -> Origin:
        name = column.name
        qualifier = column.table
        if qualifier:
            source = column_source(scope, column)
            if source is not None:
                return self._qualified(source, qualifier, name)
            parts = [part.name for part in column.parts]
            # Not a source: a struct's field, ``after.id`` (the column ``after``) or
            # ``t.after.id`` (``after`` of the source ``t``); a field maps to its root column.
            for position, part in enumerate(parts[:-2]):
                source = source_named(scope, part)
                if source is not None:
                    root = self._qualified(source, part, parts[position + 1])
                    return Origin(root.sources, root.transform, None, root.unresolved)
            root = self.column_origin(scope, exp.column(parts[0]), earlier)
            if root.sources or root.unresolved is None or "ambiguous" in root.unresolved:
                # the field's type is not the root's
                return Origin(root.sources, root.transform, None, root.unresolved)
            return Origin(unresolved=f"{qualifier}.{name}: no table or alias named {qualifier!r}")
        current: Scope | None = scope
        while current is not None:  # correlated references resolve in an enclosing scope
            found = self._unqualified(current, name, earlier if current is scope else [])
            if found is not None:
                return found
            current = enclosing(current)
        return Origin(unresolved=f"{name}: not a column of any source in scope")

    def _qualified(self, source: exp.Table | Scope, qualifier: str, name: str) -> Origin:
        """``qualifier.name`` of ``source``; a field of an UNNEST's or a LATERAL VIEW's element
        (``item.product_id`` of ``UNNEST(items) AS item``) is its array's."""
        if isinstance(source, Scope) and isinstance(source.expression, (exp.Unnest, exp.Lateral)):
            outputs = {o.name: o for o in self.outputs(source)}
            if name not in outputs and qualifier in outputs:
                field = self._element_field(source, qualifier, name)
                return field if field is not None else outputs[qualifier].origin
        return self._named_column(source, name)

    def _named_column(self, source: exp.Table | Scope, name: str) -> Origin:
        if isinstance(source, Scope):
            outputs = self.outputs(source)
            for output in outputs:
                if output.name == name:
                    return output.origin
            stars = [o for o in outputs if o.name == "*"]
            if len(stars) == 1 and stars[0].star_table:
                # "SELECT * FROM t" of unknown schema: any column it yields is t's column
                table = stars[0].star_table
                return Origin(frozenset({f"{table}.{name}"}), "direct")
            if stars:
                return Origin(unresolved=stars[0].origin.unresolved)
            return Origin(unresolved=f"{name}: the subquery or CTE has no column {name!r}")
        if relations.is_table_function(source):
            inner = relations.function_tables(source)
            if len(inner) != 1:  # generate_series(1, 3): values of its own
                call = source.this.sql()[:60]
                return Origin(unresolved=f"{name}: a column of the table function {call}")
            source = inner[0]  # SEMANTIC_VIEW(v ...): the columns of the view it reads
        table = table_name(source)
        known = self.schema.get(table)
        col_type = known.get(name) if known else None
        if known is not None and name not in known:
            return Origin(
                frozenset({f"{table}.{name}"}),
                "direct",
                unresolved=f"{name}: not a column of {table} (known columns: {', '.join(known)})",
            )
        return Origin(frozenset({f"{table}.{name}"}), "direct", col_type)

    def _unqualified(self, scope: Scope, name: str, earlier: list[OutputColumn]) -> Origin | None:
        sources = [source for _, source in scope.selected_sources.values()]
        sources += list(scope.lateral_sources.values())
        definite, possible, elements = [], [], []
        for source in sources:
            columns = self._known_columns(source)
            if columns is None:
                possible.append(source)
            elif name in columns:
                definite.append(source)
            elif isinstance(source, Scope) and unknown_fields(source, self.outputs(source)):
                elements.append(source)  # a field of an UNNEST's elements, from its array
        if len(definite) == 1:
            return self._named_column(definite[0], name)
        if len(definite) > 1 and name in using_columns(scope):
            # JOIN ... USING (name): one column, from either side
            return merged(self._named_column(source, name) for source in definite)
        if len(definite) > 1:
            return Origin(unresolved=f"{name}: ambiguous, more than one source has it")
        joined = [] if definite else using_relations(scope, name)
        if joined:  # JOIN ... USING (name) of tables of unknown schema: each has it
            return merged(self._named_column(source, name) for source in joined)
        if len(possible) == 1:
            return self._named_column(possible[0], name)
        if not possible and len(elements) == 1:  # BigQuery: FROM UNNEST(event_params) only
            return self.outputs(elements[0])[0].origin
        for output in earlier:  # Spark's lateral column alias: SELECT a + 1 AS b, b * 2 AS c
            if output.name == name:
                return output.origin
        if len(possible) > 1:
            names = ", ".join(sorted(source_label(s) for s in possible))
            return Origin(
                unresolved=f"{name}: ambiguous, could come from {names} (schemas unknown)"
            )
        return None

    def _known_columns(self, source: exp.Table | Scope) -> set[str] | None:
        if isinstance(source, Scope):
            names = {c.name for c in self.outputs(source)}
            return None if "*" in names else names
        known = self.schema.get(table_name(source))
        return set(known) if known is not None else None
