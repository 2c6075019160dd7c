"""How a query's names are bound: scopes, FROM-clause sources and column bindings, by
SQLite's own rules — the one binding layer the gold-SQL rewriter, the schema families and
the data seeding all read.

:class:`Binder` parses a query with sqlglot (SQLite dialect, which also reads MySQL-style
backticked and bracketed identifiers, as BIRD writes them) and binds every column reference
to the FROM item it names, the way SQLite binds it: qualified names through the table
aliases of the enclosing SELECTs; unqualified ones through the FROM clause of the innermost
SELECT, then its result aliases, then the enclosing SELECTs (correlated subqueries); a whole
ORDER BY term prefers a result alias; an ORDER BY term of a compound SELECT matches the
result columns of its SELECTs from the right. A double-quoted token that names no column is
a string literal (``WHERE city = "Paris"``), as in SQLite. Functions, casts, ``CASE``,
arithmetic and nested aggregates are walked through: only the column references in them
are bound.

Given a new schema and a map of renamed columns (and tables), the binder also tells what
each name would become and what it would bind to there (:meth:`Binder.find` with
``new=True``), which is what :mod:`cta.sql.rewrite` and :mod:`cta.families.flatten` need.

:func:`bind_query` is the summary most callers want: the base columns a query mentions
(which the ADVETA protocol perturbs), the literals each column is compared with and the
column pairs it joins on (which seed synthesised databases).

Identifier folding. Names are compared with :func:`~cta.sql.identifiers.sqlite_fold`, the
one identifier fold of the project; where the official Spider evaluator folds differently
(:func:`~cta.sql.identifiers.evaluator_fold`) is listed beside it in
:mod:`cta.sql.identifiers`. Exact match (:mod:`cta.evaluation.exact_match`) re-reads a
query by the evaluator's rules — its fold, the first of two equal result aliases, a FROM
subquery's columns taken on trust — so it keeps its own walk over the same sqlglot parse and
uses that evaluator fold.
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

from cta.sql.database import ColumnRef, SqlSchema, SqlTable
from cta.sql.identifiers import sqlite_fold
from cta.table import ProblemError

__all__ = [
    "Binder",
    "Binding",
    "BoundQuery",
    "Exposed",
    "SelectInfo",
    "Source",
    "SqlRewriteError",
    "bind_query",
    "outer_scope",
    "parse_query",
]

_ALIAS_CLAUSES = frozenset({"where", "group", "having", "order"})
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.Glob)


class SqlRewriteError(ProblemError):
    """A query that cannot be bound or rewritten; ``problem`` names why (``parse_error``,
    ``unknown_table``, ``unknown_column``, ``ambiguous_column``, ``captured_alias``,
    ``unsupported``)."""


@dataclass(frozen=True)
class BoundQuery:
    """What a query mentions, bound to base columns of its schema."""

    sql: str
    columns: tuple[ColumnRef, ...]
    literals: dict[ColumnRef, list[Any]] = field(default_factory=dict)
    links: tuple[tuple[ColumnRef, ColumnRef], ...] = ()


@dataclass
class Source:
    """A FROM-clause item: a base table or a derived table/CTE, by the name it is used with."""

    name: str
    table: SqlTable | None = None
    scope: Scope | None = None


class Exposed(NamedTuple):
    """A column a derived table exposes; ``ref`` when it passes a base column through."""

    name: str
    ref: ColumnRef | None
    new_name: str


@dataclass
class Binding:
    """What one column reference names: a ``base`` table column (``ref``), a column of a
    ``derived`` table or CTE (``ref`` when it passes a base column through), a result
    ``alias`` of a SELECT, or a double-quoted string ``literal``. ``scope`` and ``source``
    say where it was found; ``new_name`` is its name in the new schema."""

    kind: Literal["base", "derived", "alias", "literal"]
    scope: Scope | None = None
    source: Source | None = None
    ref: ColumnRef | None = None
    name: str = ""
    new_name: str = ""


@dataclass
class SelectInfo:
    """One SELECT's FROM items in order, its result aliases (folded), the columns its
    ``USING`` joins match (folded) and whether it has a ``NATURAL`` join."""

    sources: list[Source]
    aliases: dict[str, exp.Alias]
    using: set[str]
    natural: bool


def _unwrap(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Subquery):
        node = node.this
    return node


def outer_scope(scope: Scope) -> Scope | None:
    """The scope whose names ``scope`` can see: none for FROM subqueries and CTEs."""
    if scope.scope_type in (ScopeType.DERIVED_TABLE, ScopeType.CTE):
        return None
    return scope.parent


@lru_cache(maxsize=4096)
def parse_query(sql: str) -> tuple[exp.Expr, tuple[Scope, ...]]:
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


class Binder:
    """Binds every column reference of one query against an original and a new schema.

    ``column_map`` maps original columns to their identifiers in ``new_schema`` and
    ``table_map`` renames tables (old identifier → new); without them the new schema is the
    original one. After construction, ``bindings`` holds a :class:`Binding` for every column
    reference (by node id), ``selects`` a :class:`SelectInfo` for every SELECT scope (by
    scope id) and ``select_scopes`` those scopes in sqlglot's traversal order. ``tree`` is
    shared between binders of the same text (cached): read it, never change it.
    """

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
        self.tree, scopes = parse_query(sql)
        self._scope_of = {id(s.expression): s for s in scopes}
        self.selects: dict[int, SelectInfo] = {}
        self.select_scopes: list[Scope] = []
        self.exposures: dict[int, list[Exposed]] = {}
        self.bindings: dict[int, Binding] = {}
        try:
            for scope in scopes:
                if isinstance(scope.expression, exp.Select):
                    self.selects[id(scope)] = self._select_info(scope)
                    self.select_scopes.append(scope)
            for column in self.columns():
                self.bindings[id(column)] = self._bind(column)
        except SqlglotError as exc:  # sqlglot's own scope checks (an alias used twice…)
            raise SqlRewriteError("unsupported", str(exc).splitlines()[0]) from None

    # -- structure -----------------------------------------------------------------------------
    def columns(self) -> Iterator[exp.Column]:
        """Every column reference of the query (stars left out)."""
        for column in self.tree.find_all(exp.Column):
            if not isinstance(column.this, exp.Star):
                yield column

    def new_name(self, ref: ColumnRef) -> str:
        """The identifier ``ref`` has in the new schema."""
        return self.column_map.get((sqlite_fold(ref.table), sqlite_fold(ref.column)), ref.column)

    def new_table(self, table: SqlTable) -> SqlTable | None:
        """The table ``table`` became in the new schema (renamed or not), if any."""
        return self.new_schema.find(self.table_map.get(sqlite_fold(table.name), table.name))

    def _select_info(self, scope: Scope) -> SelectInfo:
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
                sources.append(Source(name=name, scope=source))
            elif isinstance(source, exp.Table):
                table = self.schema.find(source.name)
                if table is None:
                    raise SqlRewriteError("unknown_table", f"no table {source.name!r}")
                sources.append(Source(name=name, table=table))
            else:
                raise SqlRewriteError("unsupported", f"FROM item {node.sql('sqlite')!r}")
        aliases = {sqlite_fold(p.alias): p for p in select.expressions if isinstance(p, exp.Alias)}
        return SelectInfo(sources, aliases, using, natural)

    def scope_at(self, node: exp.Expression) -> Scope:
        """The innermost SELECT (or set operation) ``node`` sits in."""
        parent = node.parent
        while parent is not None:
            scope = self._scope_of.get(id(parent))
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
                found = self._scope_of.get(id(node))
                if found is None:
                    raise SqlRewriteError("unsupported", f"set operand {node.sql('sqlite')!r}")
                out.append(found)

        walk(scope.expression)
        return out

    def clause(self, column: exp.Column, scope: Scope) -> str:
        """The clause of ``scope``'s SELECT the column sits in (``where``, ``order``…)."""
        node: exp.Expr = column
        while node.parent is not None and node.parent is not scope.expression:
            node = node.parent
        return node.arg_key or ""

    # -- exposures -------------------------------------------------------------------------------
    def exposure(self, scope: Scope) -> list[Exposed]:
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
                    result.extend(self.source_columns(self.qualifier(scope, proj.table)[1]))
                elif isinstance(proj, exp.Column):
                    b = self.bindings.get(id(proj)) or self._bind(proj)
                    if b.kind in ("base", "derived"):
                        result.append(Exposed(proj.name, b.ref, b.new_name))
                    else:
                        result.append(Exposed(proj.name, None, proj.name))
                else:
                    name = proj.alias_or_name or proj.sql("sqlite")
                    result.append(Exposed(name, None, name))
        self.exposures[key] = result
        return result

    def source_columns(self, source: Source) -> list[Exposed]:
        """The columns a FROM item yields, in order, with their new names."""
        if source.table is not None:
            return [
                Exposed(
                    c.name,
                    ColumnRef(source.table.name, c.name),
                    self.new_name(ColumnRef(source.table.name, c.name)),
                )
                for c in source.table.columns
            ]
        assert source.scope is not None
        return self.exposure(source.scope)

    def find(self, source: Source, name: str, new: bool = False) -> Exposed | None:
        """The column ``name`` of ``source`` — in the new schema when ``new`` — or None."""
        key = sqlite_fold(name)
        if source.table is not None and new:
            table = self.new_table(source.table)
            if table is not None and table.find(name) is not None:
                return Exposed(name, None, name)
            return None
        for exposed in self.source_columns(source):
            if sqlite_fold(exposed.new_name if new else exposed.name) == key:
                return exposed
        return None

    # -- binding ---------------------------------------------------------------------------------
    def qualifier(self, scope: Scope, qualifier: str) -> tuple[Scope, Source]:
        """The FROM item a qualifier names from ``scope`` outwards, and the scope it is in."""
        key = sqlite_fold(qualifier)
        current: Scope | None = scope
        while current is not None:
            info = self.selects.get(id(current))
            if info is not None:
                for source in info.sources:
                    if sqlite_fold(source.name) == key:
                        return current, source
            current = outer_scope(current)
        raise SqlRewriteError("unknown_table", f"no table or alias {qualifier!r} in scope")

    def _bound(self, scope: Scope, source: Source, exposed: Exposed) -> Binding:
        kind: Literal["base", "derived"] = "base" if source.table is not None else "derived"
        return Binding(kind, scope, source, exposed.ref, exposed.name, exposed.new_name)

    def _lookup(self, scope: Scope, name: str) -> Binding | None:
        """Unqualified ``name`` among the FROM items of one SELECT."""
        info = self.selects[id(scope)]
        hits = [(s, e) for s in info.sources if (e := self.find(s, name)) is not None]
        if len(hits) > 1 and not (info.natural or sqlite_fold(name) in info.using):
            raise SqlRewriteError(
                "ambiguous_column",
                f"{name!r} is in {', '.join(repr(s.name) for s, _ in hits)}",
            )
        if hits:
            return self._bound(scope, *hits[0])
        return None

    def _bind(self, column: exp.Column) -> Binding:
        scope = self.scope_at(column)
        if isinstance(scope.expression, exp.SetOperation):
            return self._bind_compound_order(scope, column)
        clause = self.clause(column, scope)
        whole_order_term = (
            clause == "order"
            and isinstance(column.parent, exp.Ordered)
            and column.parent.parent is not None
            and column.parent.parent.parent is scope.expression
        )
        name = column.name
        if column.table:
            where, source = self.qualifier(scope, column.table)
            exposed = self.find(source, name)
            if exposed is None:
                raise SqlRewriteError("unknown_column", f"{column.table}.{name}: no such column")
            return self._bound(where, source, exposed)
        key = sqlite_fold(name)
        if whole_order_term and key in self.selects[id(scope)].aliases:
            return Binding("alias", scope, name=name)
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
                    return Binding("alias", current, name=name)
            current = outer_scope(current)
        if self.quote_char(column.this) == '"':
            return Binding("literal", scope, name=name)
        raise SqlRewriteError("unknown_column", f"{name!r}: no such column")

    def _bind_compound_order(self, scope: Scope, column: exp.Column) -> Binding:
        """An ORDER BY term of a compound SELECT: matched from the rightmost SELECT."""
        for leaf in reversed(self._leaves(scope)):
            info = self.selects.get(id(leaf))
            if info is None:
                continue
            if not column.table and sqlite_fold(column.name) in info.aliases:
                return Binding("alias", leaf, name=column.name)
            try:
                if column.table:
                    where, source = self.qualifier(leaf, column.table)
                    exposed = self.find(source, column.name)
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
    def quote_char(self, identifier: exp.Expression) -> str:
        """The character ``identifier`` is quoted with in the text (``"``, `````, ``[``), or
        ``""`` when it is bare."""
        start = identifier.meta.get("start")
        if start is None:
            return ""
        return self.sql[start] if identifier.args.get("quoted") else ""

    def span(self, node: exp.Expression) -> tuple[int, int]:
        """Where ``node`` is written in the query text: ``[start, end)``."""
        meta = node.meta
        if "start" not in meta or "end" not in meta:
            raise SqlRewriteError("unsupported", f"no position for {node.sql('sqlite')!r}")
        return int(meta["start"]), int(meta["end"]) + 1


# -- what a query mentions ---------------------------------------------------------------------------
def bind_query(sql: str, schema: SqlSchema) -> BoundQuery:
    """Bind ``sql`` against ``schema``: mentioned base columns, compared literals, joins.

    Raises :class:`SqlRewriteError` when the query cannot be parsed or bound.
    """
    binder = Binder(sql, schema)
    ordered = sorted(
        binder.columns(), key=lambda c: binder.span(c.this)[0] if "start" in c.this.meta else 0
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
