"""Gold-SQL rewriting for perturbed schemas, with SQLite's own name resolution.

:func:`rewrite_query` takes a query written against an original schema and returns the
same query for the perturbed schema: every reference to a renamed column — in SELECT,
WHERE, JOIN … ON, GROUP BY, HAVING, ORDER BY, subqueries, derived tables, CTEs and set
operations, qualified (``T1.name``) or not — names the new column, quoted when it needs it
(``"home city"``). Only the perturbed table's columns change, even when another table has
a column of the same name.

How. The query is parsed with sqlglot (SQLite dialect); each column reference is bound to
its table the way SQLite binds it: qualified names through the table aliases of the
enclosing SELECTs; unqualified ones through the FROM clause of the innermost SELECT, then
its result aliases, then the enclosing SELECTs (correlated subqueries); a whole ORDER BY
term prefers a result alias; an ORDER BY term of a compound SELECT matches the result
columns of its SELECTs from the right. A double-quoted token that names no column is a
string literal (``WHERE city = "Paris"``), as in SQLite. The rewrite then *splices* new
identifiers into the original text at the parsed positions, so everything else — case,
spacing, quirks — stays as written.

Consistency beyond renaming:

- ``SELECT *`` and ``T.*`` over a table that gained columns (ADD) are expanded to the
  original column list, so the result set keeps its columns.
- An unqualified reference that a new or renamed column would capture (ambiguity or a
  closer scope) is qualified with its table alias; a double-quoted literal that would now
  name a column becomes a single-quoted literal.
- What cannot be rewritten safely raises :class:`SqlRewriteError` with a ``problem``
  (``parse_error``, ``unknown_table``, ``unknown_column``, ``ambiguous_column``,
  ``captured_alias``, ``unsupported``) — never a query passed through as if rewritten.

:func:`bind_query` exposes the binding itself: the base columns a query mentions (which
the ADVETA protocol perturbs), the literals each column is compared with and the column
pairs it joins on (which seed synthesised databases).

One file, because binding and rewriting are one walk over the syntax tree with SQLite's
scoping rules: splitting them would separate the rule from the only code that applies it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, NamedTuple

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, ScopeType, traverse_scope

from cta.sql.database import ColumnRef, SqlSchema, SqlTable, quote_identifier, sqlite_fold
from cta.table import ProblemError

__all__ = ["BoundQuery", "SqlRewriteError", "bind_query", "rewrite_query"]

_ALIAS_CLAUSES = frozenset({"where", "group", "having", "order"})
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.Glob)


class SqlRewriteError(ProblemError):
    """A query that cannot be bound or rewritten; ``problem`` names why."""


@dataclass(frozen=True)
class BoundQuery:
    """What a query mentions, bound to base columns of its schema."""

    sql: str
    columns: tuple[ColumnRef, ...]
    literals: dict[ColumnRef, list[Any]] = field(default_factory=dict)
    links: tuple[tuple[ColumnRef, ColumnRef], ...] = ()


@dataclass
class _Source:
    """A FROM-clause item: a base table or a derived table/CTE, by the name it is used with."""

    name: str
    table: SqlTable | None = None
    scope: Scope | None = None


class _Exposed(NamedTuple):
    """A column a derived table exposes; ``ref`` when it passes a base column through."""

    name: str
    ref: ColumnRef | None
    new_name: str


@dataclass
class _Binding:
    kind: Literal["base", "derived", "alias", "literal"]
    scope: Scope | None = None
    source: _Source | None = None
    ref: ColumnRef | None = None
    name: str = ""
    new_name: str = ""


@dataclass
class _SelectInfo:
    sources: list[_Source]
    aliases: dict[str, exp.Alias]
    using: set[str]
    natural: bool


def _unwrap(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Subquery):
        node = node.this
    return node


def _outer(scope: Scope) -> Scope | None:
    """The scope whose names ``scope`` can see: none for FROM subqueries and CTEs."""
    if scope.scope_type in (ScopeType.DERIVED_TABLE, ScopeType.CTE):
        return None
    return scope.parent


@lru_cache(maxsize=4096)
def _parse(sql: str) -> tuple[exp.Expr, tuple[Scope, ...]]:
    """Parse tree and scopes of a query; cached because the protocol rewrites each gold
    query once per kind and seed, and binding only reads the tree (never changes it)."""
    try:
        statements = sqlglot.parse(sql, read="sqlite")
    except SqlglotError as exc:
        raise SqlRewriteError("parse_error", str(exc).splitlines()[0]) from None
    if len(statements) != 1 or statements[0] is None:
        raise SqlRewriteError("parse_error", f"expected one statement, got {len(statements)}")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise SqlRewriteError("unsupported", f"not a query: {type(tree).__name__}")
    try:
        scopes = tuple(traverse_scope(tree))
    except SqlglotError as exc:
        raise SqlRewriteError("unsupported", str(exc).splitlines()[0]) from None
    return tree, scopes


class _Binder:
    """Binds every column reference of one query against an original and a new schema."""

    def __init__(
        self,
        sql: str,
        schema: SqlSchema,
        new_schema: SqlSchema | None = None,
        column_map: Mapping[ColumnRef, str] | None = None,
        table_map: Mapping[str, str] | None = None,
    ) -> None:
        self.sql = sql
        self.schema = schema
        self.new_schema = new_schema or schema
        self.table_map = {sqlite_fold(t): n for t, n in (table_map or {}).items()}
        self.column_map = {
            (sqlite_fold(r.table), sqlite_fold(r.column)): n for r, n in (column_map or {}).items()
        }
        self.tree, scopes = _parse(sql)
        self.scope_of = {id(s.expression): s for s in scopes}
        self.selects: dict[int, _SelectInfo] = {}
        self.select_scopes: list[Scope] = []
        for scope in scopes:
            if isinstance(scope.expression, exp.Select):
                self.selects[id(scope)] = self._select_info(scope)
                self.select_scopes.append(scope)
        self.exposures: dict[int, list[_Exposed]] = {}
        self.bindings: dict[int, _Binding] = {}
        for column in self._columns():
            self.bindings[id(column)] = self._bind(column)

    # -- structure -----------------------------------------------------------------------------
    def _columns(self) -> Iterator[exp.Column]:
        for column in self.tree.find_all(exp.Column):
            if not isinstance(column.this, exp.Star):
                yield column

    def new_name(self, ref: ColumnRef) -> str:
        return self.column_map.get((sqlite_fold(ref.table), sqlite_fold(ref.column)), ref.column)

    def new_table(self, table: SqlTable) -> SqlTable | None:
        """The table ``table`` became in the new schema (renamed or not), if any."""
        return self.new_schema.find(self.table_map.get(sqlite_fold(table.name), table.name))

    def _select_info(self, scope: Scope) -> _SelectInfo:
        select = scope.expression
        nodes: list[exp.Expression] = []
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is not None:
            nodes.append(from_.this)
        using: set[str] = set()
        natural = False
        for join in select.args.get("joins") or []:
            nodes.append(join.this)
            using.update(sqlite_fold(i.name) for i in join.args.get("using") or [])
            natural = natural or join.args.get("method", "") == "NATURAL"
        by_node = {id(node): name for name, (node, _) in scope.selected_sources.items()}
        sources = []
        for node in nodes:
            name = by_node.get(id(node), by_node.get(id(_unwrap(node))))
            if name is None:
                raise SqlRewriteError("unsupported", f"FROM item {node.sql('sqlite')!r}")
            source = scope.selected_sources[name][1]
            if isinstance(source, Scope):
                sources.append(_Source(name=name, scope=source))
            elif isinstance(source, exp.Table):
                table = self.schema.find(source.name)
                if table is None:
                    raise SqlRewriteError("unknown_table", f"no table {source.name!r}")
                sources.append(_Source(name=name, table=table))
            else:
                raise SqlRewriteError("unsupported", f"FROM item {node.sql('sqlite')!r}")
        aliases = {sqlite_fold(p.alias): p for p in select.expressions if isinstance(p, exp.Alias)}
        return _SelectInfo(sources, aliases, using, natural)

    def _scope(self, node: exp.Expression) -> Scope:
        parent = node.parent
        while parent is not None:
            scope = self.scope_of.get(id(parent))
            if scope is not None:
                return scope
            parent = parent.parent
        raise SqlRewriteError("unsupported", f"column {node.sql('sqlite')!r} outside any SELECT")

    def _leaves(self, scope: Scope) -> list[Scope]:
        """The SELECTs of a set operation, left to right."""
        out: list[Scope] = []

        def walk(node: exp.Expr) -> None:
            node = _unwrap(node)
            if isinstance(node, exp.SetOperation):
                walk(node.this)
                walk(node.expression)
            else:
                found = self.scope_of.get(id(node))
                if found is None:
                    raise SqlRewriteError("unsupported", f"set operand {node.sql('sqlite')!r}")
                out.append(found)

        walk(scope.expression)
        return out

    def _clause(self, column: exp.Column, scope: Scope) -> str:
        """The clause of ``scope``'s SELECT the column sits in (``where``, ``order``…)."""
        node: exp.Expr = column
        while node.parent is not None and node.parent is not scope.expression:
            node = node.parent
        return node.arg_key or ""

    # -- exposures -------------------------------------------------------------------------------
    def exposure(self, scope: Scope) -> list[_Exposed]:
        """The columns a SELECT (or set operation) yields, with what they pass through."""
        key = id(scope)
        if key in self.exposures:
            return self.exposures[key]
        if isinstance(scope.expression, exp.SetOperation):
            result = self.exposure(self._leaves(scope)[0])
        else:
            info = self.selects[key]
            result = []
            for proj in scope.expression.expressions:
                if isinstance(proj, exp.Star):
                    for source in info.sources:
                        result.extend(self.source_columns(source))
                elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                    result.extend(self.source_columns(self._qualifier(scope, proj.table)[1]))
                elif isinstance(proj, exp.Column):
                    b = self.bindings.get(id(proj)) or self._bind(proj)
                    if b.kind in ("base", "derived"):
                        result.append(_Exposed(proj.name, b.ref, b.new_name))
                    else:
                        result.append(_Exposed(proj.name, None, proj.name))
                else:
                    name = proj.alias_or_name or proj.sql("sqlite")
                    result.append(_Exposed(name, None, name))
        self.exposures[key] = result
        return result

    def source_columns(self, source: _Source) -> list[_Exposed]:
        if source.table is not None:
            return [
                _Exposed(
                    c.name,
                    ColumnRef(source.table.name, c.name),
                    self.new_name(ColumnRef(source.table.name, c.name)),
                )
                for c in source.table.columns
            ]
        assert source.scope is not None
        return self.exposure(source.scope)

    def _find(self, source: _Source, name: str, new: bool = False) -> _Exposed | None:
        key = sqlite_fold(name)
        if source.table is not None and new:
            table = self.new_table(source.table)
            if table is not None and table.find(name) is not None:
                return _Exposed(name, None, name)
            return None
        for exposed in self.source_columns(source):
            if sqlite_fold(exposed.new_name if new else exposed.name) == key:
                return exposed
        return None

    # -- binding ---------------------------------------------------------------------------------
    def _qualifier(self, scope: Scope, qualifier: str) -> tuple[Scope, _Source]:
        key = sqlite_fold(qualifier)
        current: Scope | None = scope
        while current is not None:
            info = self.selects.get(id(current))
            if info is not None:
                for source in info.sources:
                    if sqlite_fold(source.name) == key:
                        return current, source
            current = _outer(current)
        raise SqlRewriteError("unknown_table", f"no table or alias {qualifier!r} in scope")

    def _bound(self, scope: Scope, source: _Source, exposed: _Exposed) -> _Binding:
        kind: Literal["base", "derived"] = "base" if source.table is not None else "derived"
        return _Binding(kind, scope, source, exposed.ref, exposed.name, exposed.new_name)

    def _lookup(self, scope: Scope, name: str) -> _Binding | None:
        """Unqualified ``name`` among the FROM items of one SELECT."""
        info = self.selects[id(scope)]
        hits = [(s, e) for s in info.sources if (e := self._find(s, name)) is not None]
        if len(hits) > 1 and not (info.natural or sqlite_fold(name) in info.using):
            raise SqlRewriteError(
                "ambiguous_column",
                f"{name!r} is in {', '.join(repr(s.name) for s, _ in hits)}",
            )
        if hits:
            return self._bound(scope, *hits[0])
        return None

    def _bind(self, column: exp.Column) -> _Binding:
        scope = self._scope(column)
        if isinstance(scope.expression, exp.SetOperation):
            return self._bind_compound_order(scope, column)
        clause = self._clause(column, scope)
        whole_order_term = (
            clause == "order"
            and isinstance(column.parent, exp.Ordered)
            and column.parent.parent is not None
            and column.parent.parent.parent is scope.expression
        )
        name = column.name
        if column.table:
            where, source = self._qualifier(scope, column.table)
            exposed = self._find(source, name)
            if exposed is None:
                raise SqlRewriteError("unknown_column", f"{column.table}.{name}: no such column")
            return self._bound(where, source, exposed)
        key = sqlite_fold(name)
        if whole_order_term and key in self.selects[id(scope)].aliases:
            return _Binding("alias", scope, name=name)
        current: Scope | None = scope
        allow_alias = clause in _ALIAS_CLAUSES
        while current is not None:
            if id(current) in self.selects:
                found = self._lookup(current, name)
                if found is not None:
                    return found
                if (allow_alias or current is not scope) and key in self.selects[
                    id(current)
                ].aliases:
                    return _Binding("alias", current, name=name)
            current = _outer(current)
        if self._quote_char(column.this) == '"':
            return _Binding("literal", scope, name=name)
        raise SqlRewriteError("unknown_column", f"{name!r}: no such column")

    def _bind_compound_order(self, scope: Scope, column: exp.Column) -> _Binding:
        """An ORDER BY term of a compound SELECT: matched from the rightmost SELECT."""
        for leaf in reversed(self._leaves(scope)):
            info = self.selects.get(id(leaf))
            if info is None:
                continue
            if not column.table and sqlite_fold(column.name) in info.aliases:
                return _Binding("alias", leaf, name=column.name)
            try:
                if column.table:
                    where, source = self._qualifier(leaf, column.table)
                    exposed = self._find(source, column.name)
                    found = None if exposed is None else self._bound(where, source, exposed)
                else:
                    found = self._lookup(leaf, column.name)
            except SqlRewriteError:
                continue
            if found is None:
                continue
            for proj in leaf.expression.expressions:
                if isinstance(proj, exp.Column) and not isinstance(proj.this, exp.Star):
                    b = self.bindings.get(id(proj)) or self._bind(proj)
                    if b.ref == found.ref and b.source is found.source:
                        return found
        raise SqlRewriteError(
            "unsupported", f"ORDER BY term {column.sql('sqlite')!r} matches no result column"
        )

    # -- text positions --------------------------------------------------------------------------
    def _quote_char(self, identifier: exp.Expression) -> str:
        start = identifier.meta.get("start")
        if start is None:
            return ""
        return self.sql[start] if identifier.args.get("quoted") else ""

    def span(self, node: exp.Expression) -> tuple[int, int]:
        meta = node.meta
        if "start" not in meta or "end" not in meta:
            raise SqlRewriteError("unsupported", f"no position for {node.sql('sqlite')!r}")
        return int(meta["start"]), int(meta["end"]) + 1


# -- public API -------------------------------------------------------------------------------------
def bind_query(sql: str, schema: SqlSchema) -> BoundQuery:
    """Bind ``sql`` against ``schema``: mentioned base columns, compared literals, joins.

    Raises :class:`SqlRewriteError` when the query cannot be parsed or bound.
    """
    binder = _Binder(sql, schema)
    ordered = sorted(
        binder._columns(), key=lambda c: binder.span(c.this)[0] if "start" in c.this.meta else 0
    )
    columns: list[ColumnRef] = []
    for column in ordered:
        b = binder.bindings[id(column)]
        if b.kind == "base" and b.ref is not None and b.ref not in columns:
            columns.append(b.ref)
    literals: dict[ColumnRef, list[Any]] = {}
    links: list[tuple[ColumnRef, ColumnRef]] = []

    def ref_of(node: exp.Expression | None) -> ColumnRef | None:
        if isinstance(node, exp.Column) and id(node) in binder.bindings:
            b = binder.bindings[id(node)]
            return b.ref if b.kind in ("base", "derived") else None
        return None

    def value_of(node: exp.Expression | None) -> tuple[bool, Any]:
        if isinstance(node, exp.Literal):
            return True, _literal_value(node)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
            ok, value = True, _literal_value(node.this)
            return ok, -value if isinstance(value, int | float) else value
        if isinstance(node, exp.Column) and id(node) in binder.bindings:
            if binder.bindings[id(node)].kind == "literal":
                return True, node.name
        return False, None

    for node in binder.tree.find_all(*_COMPARISONS, exp.In, exp.Between):
        left = ref_of(node.this)
        others: list[exp.Expression] = []
        if isinstance(node, exp.In):
            others = list(node.expressions)
        elif isinstance(node, exp.Between):
            others = [node.args["low"], node.args["high"]]
        else:
            right = ref_of(node.expression)
            if left is not None and right is not None and isinstance(node, exp.EQ):
                links.append((left, right))
                continue
            if left is None and right is not None:
                left, others = right, [node.this]
            else:
                others = [node.expression]
        if left is None:
            continue
        for other in others:
            ok, value = value_of(other)
            if ok:
                if isinstance(node, exp.Like | exp.Glob) and isinstance(value, str):
                    value = _instance_of_pattern(value, glob=isinstance(node, exp.Glob))
                literals.setdefault(left, []).append(value)
    return BoundQuery(sql, tuple(columns), literals, tuple(links))


def _literal_value(node: exp.Literal) -> Any:
    if node.is_string:
        return node.this
    text = node.this
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _instance_of_pattern(pattern: str, glob: bool) -> str:
    """A string matching a LIKE (or GLOB) pattern: wildcards dropped, one-char ones → ``a``."""
    if glob:
        return pattern.replace("*", "").replace("?", "a")
    return pattern.replace("%", "").replace("_", "a")


def rewrite_query(
    sql: str,
    schema: SqlSchema,
    new_schema: SqlSchema,
    column_map: Mapping[ColumnRef, str],
    *,
    table_map: Mapping[str, str] | None = None,
    expressions: Mapping[ColumnRef, str] | None = None,
) -> str:
    """``sql`` rewritten from ``schema`` to ``new_schema`` (see the module docstring).

    ``column_map`` maps original columns to their identifiers in ``new_schema`` (columns
    absent keep their name); columns of ``new_schema`` that no original column maps to are
    added ones. ``table_map`` renames tables (old identifier → new). ``expressions`` replaces
    an original column by an SQL expression over its (new) table's columns, ``{t}`` standing
    where the table's qualifier goes (``{t}first_name || ' ' || {t}last_name``): every
    reference becomes the parenthesised expression, qualified as the reference was. Raises
    :class:`SqlRewriteError` naming what could not be rewritten.
    """
    binder = _Binder(sql, schema, new_schema, column_map, table_map)
    exprs = {
        (sqlite_fold(r.table), sqlite_fold(r.column)): t for r, t in (expressions or {}).items()
    }
    edits: dict[tuple[int, int], str] = {}
    _table_edits(binder, edits)

    for column in binder._columns():
        b = binder.bindings[id(column)]
        start, end = binder.span(column.this)
        scope = binder._scope(column)
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
                edits[(start, end)] = quote_identifier(column.name)
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
            text = _substituted(template, qualifier)
            if _projected_in_derived(binder, scope, column):
                text = f"{text} AS {quote_identifier(column.name)}"
            edits[(start, end)] = text
            continue
        if b.kind in ("base", "derived"):
            renamed = sqlite_fold(b.new_name) != sqlite_fold(b.name)
            text = quote_identifier(b.new_name) if renamed else sql[start:end]
            compound = isinstance(scope.expression, exp.SetOperation)
            if not column.table and not compound and _captured(binder, scope, column, b):
                assert b.source is not None
                if not b.source.name:
                    raise SqlRewriteError(
                        "unsupported", f"{column.name!r} would be captured and has no qualifier"
                    )
                text = f"{quote_identifier(b.source.name)}.{quote_identifier(b.new_name)}"
                edits[(start, end)] = text
            elif renamed:
                edits[(start, end)] = text
        elif b.kind == "alias":
            if binder._clause(column, scope) != "order" and _visible_in_new(
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
                        text = _substituted(template, qualifier if qualify else "")
                        if _names_read(binder, star_scope):
                            text = f"{text} AS {quote_identifier(exposed.name)}"
                        items.append(text)
                        continue
                    name = quote_identifier(exposed.new_name)
                    items.append(f"{quote_identifier(qualifier)}.{name}" if qualify else name)
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


def _projected_in_derived(binder: _Binder, scope: Scope, column: exp.Column) -> bool:
    """Is ``column`` a bare result column of a SELECT whose names something reads (not the
    outermost query)? Such a projection keeps its name with ``AS`` when it becomes an
    expression."""
    if not isinstance(column.parent, exp.Select) or column not in column.parent.expressions:
        return False
    return _names_read(binder, scope)


def _names_read(binder: _Binder, scope: Scope) -> bool:
    """Can something read the result column names of ``scope``'s SELECT (is it a subquery,
    a derived table, a CTE or a SELECT of a compound)?"""
    return _outer(scope) is not None or scope.expression is not binder.tree


def _visible_in_new(binder: _Binder, scope: Scope, name: str, stop_at_first: bool = False) -> bool:
    """Would ``name`` resolve to a column of the new schema from ``scope`` outwards?"""
    current: Scope | None = scope
    while current is not None:
        info = binder.selects.get(id(current))
        if info is not None:
            if any(binder._find(s, name, new=True) is not None for s in info.sources):
                return True
            if stop_at_first:
                return False
        current = _outer(current)
    return False


def _captured(binder: _Binder, scope: Scope, column: exp.Column, b: _Binding) -> bool:
    """Would the unqualified reference bind elsewhere (or ambiguously) in the new schema?"""
    if binder._clause(column, scope) == "order" and sqlite_fold(b.new_name) in (
        binder.selects[id(scope)].aliases
    ):
        return True  # an ORDER BY term prefers a result alias of the same name
    current: Scope | None = scope
    while current is not None:
        info = binder.selects.get(id(current))
        if info is not None:
            hits = [s for s in info.sources if binder._find(s, b.new_name, new=True) is not None]
            if current is b.scope:
                if info.natural or sqlite_fold(b.new_name) in info.using:
                    return not hits or hits[0] is not b.source
                return hits != [b.source]
            if hits or sqlite_fold(b.new_name) in info.aliases:
                return True
        current = _outer(current)
    return True


def _grows(binder: _Binder, source: _Source, expressions: Mapping[ColumnRef, str]) -> bool:
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
    """An expression template (``{t}`` where a qualifier goes) with ``qualifier`` in place."""
    return (
        "(" + template.replace("{t}", f"{quote_identifier(qualifier)}." if qualifier else "") + ")"
    )


def _table_edits(binder: _Binder, edits: dict[tuple[int, int], str]) -> None:
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
        edits[binder.span(node.this)] = quote_identifier(binder.table_map[key])
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
            _, source = binder._qualifier(binder._scope(column), column.table)
        except SqlRewriteError:
            continue
        if source.table is None or sqlite_fold(source.name) != sqlite_fold(source.table.name):
            continue  # an alias: stays
        new = binder.table_map.get(sqlite_fold(source.table.name))
        if new is not None:
            edits[binder.span(qualifier)] = quote_identifier(new)


def _stars(binder: _Binder) -> Iterator[tuple[tuple[int, int], list[_Source], bool, Scope]]:
    """Every projection star: its span, the FROM items it covers, whether to qualify, and
    the scope of its SELECT."""
    for scope in binder.select_scopes:
        info = binder.selects[id(scope)]
        for proj in scope.expression.expressions:
            if isinstance(proj, exp.Star):
                yield binder.span(proj), info.sources, len(info.sources) > 1, scope
            elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                _, source = binder._qualifier(scope, proj.table)
                start = binder.span(proj.args["table"])[0]
                yield (start, binder.span(proj.this)[1]), [source], True, scope


def _check_joins(binder: _Binder, exprs: Mapping[tuple[str, str], str]) -> None:
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
