"""Gold-SQL rewriting for perturbed schemas, with SQLite's own name resolution.

:func:`rewrite_query` takes a query written against an original schema and returns the
same query for the perturbed schema: every reference to a renamed column — in SELECT,
WHERE, JOIN … ON, GROUP BY, HAVING, ORDER BY, subqueries, derived tables, CTEs and set
operations, qualified (``T1.name``) or not — names the new column, quoted when it needs it
(``"home city"``). Only the perturbed table's columns change, even when another table has
a column of the same name.

How. Each column reference is bound to its table by :class:`~cta.sql.binding.Binder`
(SQLite's scoping rules); the rewrite then *splices* new identifiers into the original text
at the parsed positions, so everything else — case, spacing, quirks — stays as written.

Consistency beyond renaming:

- ``SELECT *`` and ``T.*`` over a table that gained columns (ADD) are expanded to the
  original column list, so the result set keeps its columns.
- An unqualified reference that a new or renamed column would capture (ambiguity or a
  closer scope) is qualified with its table alias; a double-quoted literal that would now
  name a column becomes a single-quoted literal.
- What cannot be rewritten safely raises :class:`SqlRewriteError` with a ``problem``
  (``parse_error``, ``unknown_table``, ``unknown_column``, ``ambiguous_column``,
  ``captured_alias``, ``unsupported``) — never a query passed through as if rewritten.

:func:`bind_query` and :class:`BoundQuery` (the binding itself) and :class:`SqlRewriteError`
are defined in :mod:`cta.sql.binding` and exported here too, beside the rewrite they serve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from cta.sql.binding import (
    Binder,
    Binding,
    BoundQuery,
    Source,
    SqlRewriteError,
    bind_query,
    outer_scope,
)
from cta.sql.database import ColumnRef, SqlSchema, sqlite_fold
from cta.sql.identifiers import quote_like

__all__ = ["BoundQuery", "SqlRewriteError", "bind_query", "rewrite_query"]


def rewrite_query(
    sql: str,
    schema: SqlSchema,
    new_schema: SqlSchema,
    column_map: Mapping[ColumnRef, str],
    *,
    table_map: Mapping[str, str] | None = None,
    expressions: Mapping[ColumnRef, str] | None = None,
    quote: str | None = None,
) -> str:
    """``sql`` rewritten from ``schema`` to ``new_schema`` (see the module docstring).

    ``column_map`` maps original columns to their identifiers in ``new_schema`` (columns
    absent keep their name); columns of ``new_schema`` that no original column maps to are
    added ones. ``table_map`` renames tables (old identifier → new). ``expressions`` replaces
    an original column by an SQL expression over its (new) table's columns, ``{t}`` standing
    where the table's qualifier goes (``{t}first_name || ' ' || {t}last_name``): every
    reference becomes the parenthesised expression, qualified as the reference was. Raises
    :class:`SqlRewriteError` naming what could not be rewritten.

    A name that needs quoting is written in the query's own style: with the quote the
    reference it replaces was written with, else with the backticks or brackets the query
    quotes other identifiers with (BIRD's `` `Free Meal Count (K-12)` ``), else with
    ``quote`` (``"`` or `````), by default the schema's (``SqlSchema.quote``).
    """
    binder = Binder(sql, schema, new_schema, column_map, table_map)
    style = _query_quote(binder, schema.quote if quote is None else quote)

    def ident(name: str) -> str:
        return quote_like(name, style)

    exprs = {
        (sqlite_fold(r.table), sqlite_fold(r.column)): t for r, t in (expressions or {}).items()
    }
    edits: dict[tuple[int, int], str] = {}
    _table_edits(binder, edits, ident)

    for column in binder.columns():
        b = binder.bindings[id(column)]
        start, end = binder.span(column.this)
        scope = binder.scope_at(column)
        template = (
            exprs.get((sqlite_fold(b.ref.table), sqlite_fold(b.ref.column)))
            if b.kind == "base" and b.ref is not None
            else None
        )
        if template is not None:
            assert b.source is not None
            if isinstance(scope.expression, exp.SetOperation):
                # an ORDER BY term of a compound SELECT names a result column, and the
                # SELECTs keep that name (``AS``, below): the term stays a bare name
                if column.table:
                    edits.pop(binder.span(column.args["table"]), None)
                    start = binder.span(column.args["table"])[0]
                edits[(start, end)] = ident(column.name)
                continue
            if column.table:
                qualifier_node = column.args["table"]
                qualifier = binder.table_map.get(sqlite_fold(column.table), column.table)
                if sqlite_fold(b.source.name) != sqlite_fold(
                    b.source.table.name if b.source.table else ""
                ):
                    qualifier = column.table
                edits.pop(binder.span(qualifier_node), None)
                start = binder.span(qualifier_node)[0]
            else:
                many = len(binder.selects[id(b.scope)].sources) > 1 if b.scope is not None else True
                qualifier = ""
                if many or b.scope is not scope:
                    if not b.source.name:
                        raise SqlRewriteError("unsupported", f"{column.name!r} has no qualifier")
                    qualifier = binder.table_map.get(sqlite_fold(b.source.name), b.source.name)
            text = _substituted(template, ident(qualifier) if qualifier else "")
            if _projected_in_derived(binder, scope, column):
                text = f"{text} AS {ident(column.name)}"
            edits[(start, end)] = text
            continue
        if b.kind in ("base", "derived"):
            renamed = sqlite_fold(b.new_name) != sqlite_fold(b.name)
            own = quote_like(b.new_name, binder.quote_char(column.this) or style)
            text = own if renamed else sql[start:end]
            compound = isinstance(scope.expression, exp.SetOperation)
            if not column.table and not compound and _captured(binder, scope, column, b):
                assert b.source is not None
                if not b.source.name:
                    raise SqlRewriteError(
                        "unsupported", f"{column.name!r} would be captured and has no qualifier"
                    )
                text = f"{ident(b.source.name)}.{own}"
                edits[(start, end)] = text
            elif renamed:
                edits[(start, end)] = text
        elif b.kind == "alias":
            if binder.clause(column, scope) != "order" and _visible_in_new(
                binder, scope, column.name, stop_at_first=True
            ):
                raise SqlRewriteError(
                    "captured_alias",
                    f"result alias {column.name!r} would now name a column",
                )
        elif b.kind == "literal" and _visible_in_new(binder, scope, column.name):
            edits[(start, end)] = "'" + column.name.replace("'", "''") + "'"

    _check_joins(binder, exprs)
    for star, covered, qualify, star_scope in _stars(binder):
        if any(_grows(binder, s, expressions or {}) for s in covered):
            items = []
            for source in covered:
                if qualify and not source.name:
                    raise SqlRewriteError("unsupported", "star over an unnamed subquery")
                qualifier = source.name
                if source.table is not None and sqlite_fold(source.name) == sqlite_fold(
                    source.table.name
                ):
                    qualifier = binder.table_map.get(sqlite_fold(source.name), source.name)
                for exposed in binder.source_columns(source):
                    ref = exposed.ref
                    template = (
                        exprs.get((sqlite_fold(ref.table), sqlite_fold(ref.column)))
                        if ref is not None and source.table is not None
                        else None
                    )
                    if template is not None:
                        text = _substituted(template, ident(qualifier) if qualify else "")
                        if _names_read(binder, star_scope):
                            text = f"{text} AS {ident(exposed.name)}"
                        items.append(text)
                        continue
                    name = ident(exposed.new_name)
                    items.append(f"{ident(qualifier)}.{name}" if qualify else name)
            edits[star] = ", ".join(items)

    out = []
    last = 0
    for (start, end), text in sorted(edits.items()):
        if start < last:
            raise SqlRewriteError("unsupported", "overlapping rewrites")
        out.append(sql[last:start])
        out.append(text)
        last = end
    out.append(sql[last:])
    return "".join(out)


def _projected_in_derived(binder: Binder, scope: Scope, column: exp.Column) -> bool:
    """Is ``column`` a bare result column of a SELECT whose names something reads (not the
    outermost query)? Such a projection keeps its name with ``AS`` when it becomes an
    expression."""
    if not isinstance(column.parent, exp.Select) or column not in column.parent.expressions:
        return False
    return _names_read(binder, scope)


def _names_read(binder: Binder, scope: Scope) -> bool:
    """Can something read the result column names of ``scope``'s SELECT (is it a subquery,
    a derived table, a CTE or a SELECT of a compound)?"""
    return outer_scope(scope) is not None or scope.expression is not binder.tree


def _visible_in_new(binder: Binder, scope: Scope, name: str, stop_at_first: bool = False) -> bool:
    """Would ``name`` resolve to a column of the new schema from ``scope`` outwards?"""
    current: Scope | None = scope
    while current is not None:
        info = binder.selects.get(id(current))
        if info is not None:
            if any(binder.find(s, name, new=True) is not None for s in info.sources):
                return True
            if stop_at_first:
                return False
        current = outer_scope(current)
    return False


def _captured(binder: Binder, scope: Scope, column: exp.Column, b: Binding) -> bool:
    """Would the unqualified reference bind elsewhere (or ambiguously) in the new schema?"""
    if binder.clause(column, scope) == "order" and sqlite_fold(b.new_name) in (
        binder.selects[id(scope)].aliases
    ):
        return True  # an ORDER BY term prefers a result alias of the same name
    current: Scope | None = scope
    while current is not None:
        info = binder.selects.get(id(current))
        if info is not None:
            hits = [s for s in info.sources if binder.find(s, b.new_name, new=True) is not None]
            if current is b.scope:
                if info.natural or sqlite_fold(b.new_name) in info.using:
                    return not hits or hits[0] is not b.source
                return hits != [b.source]
            if hits or sqlite_fold(b.new_name) in info.aliases:
                return True
        current = outer_scope(current)
    return True


def _grows(binder: Binder, source: Source, expressions: Mapping[ColumnRef, str]) -> bool:
    """Would a star over ``source`` now yield other columns, or in another order?"""
    if source.table is None:
        return False
    new = binder.new_table(source.table)
    if new is None:
        return True
    carried = [sqlite_fold(e.new_name) for e in binder.source_columns(source)]
    if carried != [sqlite_fold(c.name) for c in new.columns]:
        return True
    return any(ColumnRef(source.table.name, c.name) in expressions for c in source.table.columns)


def _substituted(template: str, qualifier: str) -> str:
    """An expression template (``{t}`` where a qualifier goes) with ``qualifier`` (quoted
    already, or empty) in place."""
    return "(" + template.replace("{t}", f"{qualifier}." if qualifier else "") + ")"


def _query_quote(binder: Binder, default: str) -> str:
    """The quote the query writes identifiers with: the first backtick or bracket it uses
    on an identifier, else ``default`` (a double-quoted token may be a string literal)."""
    for node in binder.tree.find_all(exp.Identifier):
        char = binder.quote_char(node)
        if char in ("`", "["):
            return char
    return default


def _table_edits(
    binder: Binder, edits: dict[tuple[int, int], str], ident: Callable[[str], str]
) -> None:
    """Renamed tables: their FROM items, and qualifiers that name them (not aliases)."""
    if not binder.table_map:
        return
    cte_names = {sqlite_fold(c.alias) for c in binder.tree.find_all(exp.CTE)}
    for node in binder.tree.find_all(exp.Table):
        key = sqlite_fold(node.name)
        if key not in binder.table_map or binder.schema.find(node.name) is None:
            continue
        if key in cte_names:
            raise SqlRewriteError("unsupported", f"a CTE is named like table {node.name!r}")
        edits[binder.span(node.this)] = ident(binder.table_map[key])
    for info in binder.selects.values():
        names = [sqlite_fold(s.name) for s in info.sources]
        for source in info.sources:
            if source.table is None or sqlite_fold(source.name) != sqlite_fold(source.table.name):
                continue
            new = binder.table_map.get(sqlite_fold(source.name))
            if new is not None and sqlite_fold(new) in names:
                raise SqlRewriteError("unsupported", f"{new!r} already names a FROM item")
    for column in binder.tree.find_all(exp.Column):
        qualifier = column.args.get("table")
        if not column.table or qualifier is None:
            continue
        try:
            _, source = binder.qualifier(binder.scope_at(column), column.table)
        except SqlRewriteError:
            continue
        if source.table is None or sqlite_fold(source.name) != sqlite_fold(source.table.name):
            continue  # an alias: stays
        new = binder.table_map.get(sqlite_fold(source.table.name))
        if new is not None:
            edits[binder.span(qualifier)] = ident(new)


def _stars(binder: Binder) -> Iterator[tuple[tuple[int, int], list[Source], bool, Scope]]:
    """Every projection star: its span, the FROM items it covers, whether to qualify, and
    the scope of its SELECT."""
    for scope in binder.select_scopes:
        info = binder.selects[id(scope)]
        for proj in scope.expression.expressions:
            if isinstance(proj, exp.Star):
                yield binder.span(proj), info.sources, len(info.sources) > 1, scope
            elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                _, source = binder.qualifier(scope, proj.table)
                start = binder.span(proj.args["table"])[0]
                yield (start, binder.span(proj.this)[1]), [source], True, scope


def _check_joins(binder: Binder, exprs: Mapping[tuple[str, str], str]) -> None:
    """USING and NATURAL joins match columns by name: refuse when a name they use changes
    (or the column becomes an expression)."""
    for info in binder.selects.values():
        if not (info.using or info.natural):
            continue
        for source in info.sources:
            if source.table is None:
                continue
            for exposed in binder.source_columns(source):
                changed = sqlite_fold(exposed.new_name) != sqlite_fold(exposed.name) or (
                    exposed.ref is not None
                    and (sqlite_fold(exposed.ref.table), sqlite_fold(exposed.ref.column)) in exprs
                )
                if changed and (info.natural or sqlite_fold(exposed.name) in info.using):
                    raise SqlRewriteError(
                        "unsupported", f"join matches columns by name and {exposed.name!r} changes"
                    )
            if info.natural and _grows(binder, source, {}):
                raise SqlRewriteError("unsupported", "NATURAL JOIN over a table that gains columns")
