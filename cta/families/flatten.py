"""MT-Teql's flatten: a table ``B`` that a foreign key of table ``A`` references is merged
into ``A`` — ``A`` gains ``B``'s columns (all but the referenced key), ``B`` is dropped.

Data. ``A``'s rows are kept, each with the cells of the one ``B`` row its key matches
(``A LEFT JOIN B`` on the key, in ``A``'s rowid order). The edit is only made when that
match is exact on the original file: every ``A`` row matches exactly one ``B`` row (so no
``A`` row is lost or repeated), the matched keys are identical (same value and storage
class) and both key columns have the same type affinity (so ``B``'s key can be read as
``A``'s in any comparison), and neither table declares a collation.

Queries. Every SELECT that joins ``A`` and ``B`` on exactly that key — ``JOIN … ON``,
``INNER JOIN``, or a comma join with the equality in ``WHERE``, under any aliases and in
either order — loses ``B``: its columns are read from ``A`` (``B``'s key as ``A``'s foreign
key), the key equality disappears and the other conditions of the removed join move to
``WHERE`` (the same rows, as every join of such a SELECT must be an inner join). Because
each ``A`` row met exactly one ``B`` row, the joined rows are ``A``'s rows, and so are the
new ones. A query that uses ``B`` any other way — alone, joined on another condition, in
an outer, ``NATURAL`` or ``USING`` join — needs ``B``'s own rows and raises
:class:`~cta.sql.binding.SqlRewriteError` (``unsupported``): the item stays unperturbed.
Stars over ``A`` or ``B`` are spelled out in their original order; an unqualified
reference that one of ``A``'s new columns could capture is qualified; the rewritten
query is regenerated from the syntax tree (sqlglot, SQLite dialect).

One file, because the data check and the query rewrite of a flatten are one proof: the
rewrite is only valid under the exact match the data check establishes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from cta.families.base import FamilyContext, NotApplicable
from cta.families.expressions import column_affinities, original_rows
from cta.families.model import DbEdit, Key
from cta.families.naming import styled_identifier
from cta.formats.spider_grammar import spider_sql
from cta.seeding import seeded_rng
from cta.sql.binding import Binder, Source, SqlRewriteError, outer_scope
from cta.sql.database import (
    SqlSchema,
    SqlTable,
    quote_identifier,
    sqlite_fold,
)
from cta.table import ForeignKey

__all__ = ["Flatten", "FlattenPlan", "flatten_rewrite"]


@dataclass(frozen=True)
class FlattenPlan:
    """``B`` (``inner``) merged into ``A`` (``outer``) along ``A.key`` → ``B.ref``."""

    outer: SqlTable  # A, as it was
    inner: SqlTable  # B
    key: str  # A's foreign-key column
    ref: str  # B's referenced column
    moved: dict[str, str]  # B's column → its name in the new A (B's key → A's key)

    @property
    def added(self) -> set[str]:
        """Folded names of the columns A gains."""
        return {sqlite_fold(n) for c, n in self.moved.items() if sqlite_fold(c) != self._ref}

    @property
    def _ref(self) -> str:
        return sqlite_fold(self.ref)

    def is_outer(self, source: Source) -> bool:
        return source.table is not None and sqlite_fold(source.table.name) == sqlite_fold(
            self.outer.name
        )

    def is_inner(self, source: Source) -> bool:
        return source.table is not None and sqlite_fold(source.table.name) == sqlite_fold(
            self.inner.name
        )

    def new_name(self, column: str) -> str:
        for old, new in self.moved.items():
            if sqlite_fold(old) == sqlite_fold(column):
                return new
        raise KeyError(column)


def _unsupported(message: str) -> SqlRewriteError:
    return SqlRewriteError("unsupported", message)


def _ident(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=quote_identifier(name) != name)


def _column(name: str, qualifier: str = "") -> exp.Column:
    if qualifier:
        return exp.Column(this=_ident(name), table=_ident(qualifier))
    return exp.Column(this=_ident(name))


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The top-level AND terms of a condition (parentheses around an AND looked through)."""
    if node is None:
        return []
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _plain_join(join: exp.Join | None) -> bool:
    """An inner join (``JOIN``, ``INNER JOIN``, ``CROSS JOIN``, a comma), not NATURAL/USING."""
    if join is None:
        return True
    kind = str(join.args.get("kind") or "").upper()
    return (
        kind in ("", "INNER", "CROSS")
        and not join.args.get("side")
        and not join.args.get("method")
        and not join.args.get("using")
    )


@dataclass
class _Select:
    """One SELECT: its FROM items in order, each with its join (None for the first)."""

    scope: Scope
    sources: list[Source]
    items: list[exp.Expression]
    joins: list[exp.Join | None]


class _Flattener:
    def __init__(self, sql: str, schema: SqlSchema, plan: FlattenPlan) -> None:
        self.plan = plan
        self.binder = Binder(sql, schema)
        self.tree = self.binder.tree.copy()  # the binder's tree is shared (cached): never edited
        self.twin: dict[int, Any] = {}
        for a, b in zip(self.binder.tree.walk(), self.tree.walk(), strict=True):
            if type(a) is not type(b):
                raise _unsupported("the query's syntax tree could not be copied")
            self.twin[id(a)] = b
        self.changed = False
        self.selects: dict[int, _Select] = {}
        for scope in self.binder.select_scopes:
            select = scope.expression
            from_ = select.args.get("from_") or select.args.get("from")
            joins = list(select.args.get("joins") or [])
            items = ([from_.this] if from_ is not None else []) + [j.this for j in joins]
            info = self.binder.selects[id(scope)]
            self.selects[id(scope)] = _Select(scope, info.sources, items, [None, *joins])

    # -- which B meets which A ------------------------------------------------------------------
    def _bound(self, node: exp.Expression) -> tuple[Source, str] | None:
        if not isinstance(node, exp.Column) or id(node) not in self.binder.bindings:
            return None
        b = self.binder.bindings[id(node)]
        if b.kind != "base" or b.source is None or b.ref is None:
            return None
        return b.source, sqlite_fold(b.ref.column)

    def _key_equality(self, node: exp.Expression, select: _Select) -> tuple[Source, Source] | None:
        """(A source, B source) when ``node`` is ``a.key = b.ref`` (either order)."""
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.EQ):
            return None
        left, right = self._bound(node.this), self._bound(node.expression)
        if left is None or right is None:
            return None
        for (s1, c1), (s2, c2) in ((left, right), (right, left)):
            if (
                self.plan.is_outer(s1)
                and c1 == sqlite_fold(self.plan.key)
                and self.plan.is_inner(s2)
                and c2 == sqlite_fold(self.plan.ref)
                and any(s is s1 for s in select.sources)
                and any(s is s2 for s in select.sources)
            ):
                return s1, s2
        return None

    def pairs(self) -> dict[int, tuple[Source, exp.Expression]]:
        """Every B source (by id) → the A source it is joined to and the key equality."""
        out: dict[int, tuple[Source, exp.Expression]] = {}
        for select in self.selects.values():
            inner = [s for s in select.sources if self.plan.is_inner(s)]
            if not inner:
                continue
            if not all(_plain_join(j) for j in select.joins):
                raise _unsupported(
                    f"{self.plan.inner.name} is joined in a SELECT with an outer, NATURAL or "
                    "USING join"
                )
            where = select.scope.expression.args.get("where")
            conditions = _conjuncts(where.this if where is not None else None)
            for join in select.joins:
                if join is not None:
                    conditions += _conjuncts(join.args.get("on"))
            found: dict[int, list[tuple[Source, exp.Expression]]] = {}
            for condition in conditions:
                pair = self._key_equality(condition, select)
                if pair is not None:
                    found.setdefault(id(pair[1]), []).append((pair[0], condition))
            used: set[int] = set()
            for source in inner:
                matches = found.get(id(source), [])
                if len(matches) != 1:
                    raise _unsupported(
                        f"{self.plan.inner.name} ({source.name}) is used without being joined "
                        f"to {self.plan.outer.name} on {self.plan.key} = {self.plan.ref} "
                        "exactly once: the query needs its own rows"
                    )
                outer, condition = matches[0]
                if id(outer) in used:
                    raise _unsupported(f"{outer.name} is joined to {self.plan.inner.name} twice")
                used.add(id(outer))
                out[id(source)] = (outer, condition)
        return out

    # -- the rewrite -----------------------------------------------------------------------------
    def rewrite(self, sql: str) -> str:
        plan = self.plan
        for node in self.binder.tree.find_all(exp.Table):
            if sqlite_fold(node.name) == sqlite_fold(plan.inner.name) and not any(
                node is item or node is item.this for s in self.selects.values() for item in s.items
            ):
                raise _unsupported(f"{plan.inner.name} is used outside a FROM clause")
        for cte in self.binder.tree.find_all(exp.CTE):
            if sqlite_fold(cte.alias) in (
                sqlite_fold(plan.outer.name),
                sqlite_fold(plan.inner.name),
            ):
                raise _unsupported(f"a CTE is named like {cte.alias!r}")
        pairs = self.pairs()
        self._check_name_joins()
        for column in list(self.binder.columns()):
            self._column(column, pairs)
        for select in self.selects.values():
            self._stars(select, pairs)
        for select in self.selects.values():
            self._remove_inner(select, pairs)
        return spider_sql(self.tree) if self.changed else sql

    def _check_name_joins(self) -> None:
        for select in self.selects.values():
            touches = any(self.plan.is_outer(s) or self.plan.is_inner(s) for s in select.sources)
            if touches and not all(
                j is None or (not j.args.get("method") and not j.args.get("using"))
                for j in select.joins
            ):
                raise _unsupported(
                    f"a NATURAL or USING join over {self.plan.outer.name}, which gains columns"
                )

    def _visible(self, scope: Scope, source: Source) -> bool:
        """Does ``source``'s name, from ``scope``, still name ``source``?"""
        try:
            return self.binder.qualifier(scope, source.name)[1] is source
        except SqlRewriteError:
            return False

    def _outer_in_reach(self, scope: Scope, until: Scope | None) -> bool:
        """Is an A item among the FROM items an unqualified name in ``scope`` is looked up in,
        up to the SELECT ``until`` where it was found (None: every enclosing SELECT)?"""
        current: Scope | None = scope
        while current is not None:
            select = self.selects.get(id(current))
            if select is not None and any(self.plan.is_outer(s) for s in select.sources):
                return True
            if current is until:
                return False
            current = outer_scope(current)
        return False

    def _names_read(self, scope: Scope) -> bool:
        """Whether a SELECT's result names are read: it is a derived table or a CTE. The
        top query, the branches of a set operation and a subquery in a condition are read
        by position or value only (and the official evaluator reads no ``AS`` in SELECT)."""
        node: exp.Expr | None = scope.expression
        while node is not None and node is not self.binder.tree:
            parent = node.parent
            if isinstance(parent, exp.CTE):
                return True
            if isinstance(node, exp.Subquery) and isinstance(parent, (exp.From, exp.Join)):
                return True
            node = parent
        return False

    def _replace(self, node: exp.Expression, new: exp.Expression) -> None:
        self.twin[id(node)].replace(new)
        self.changed = True

    def _column(self, column: exp.Column, pairs: dict[int, tuple[Source, exp.Expression]]) -> None:
        plan = self.plan
        b = self.binder.bindings[id(column)]
        scope = self.binder.scope_at(column)
        compound = isinstance(scope.expression, exp.SetOperation)
        added = sqlite_fold(column.name) in plan.added
        if b.kind == "literal":
            if added and self._outer_in_reach(scope, None):
                self._replace(column, exp.Literal.string(column.name))
            return
        if b.kind == "alias":
            whole_order = self.binder.clause(column, scope) == "order" and isinstance(
                column.parent, exp.Ordered
            )
            if added and not whole_order and self._outer_in_reach(scope, b.scope):
                raise SqlRewriteError(
                    "captured_alias", f"result alias {column.name!r} would now name a column"
                )
            return
        if b.source is None:
            return
        if b.kind == "base" and plan.is_inner(b.source):
            outer, _ = pairs[id(b.source)]
            new = plan.new_name(column.name)
            if compound:
                if column.table or sqlite_fold(new) != sqlite_fold(column.name):
                    raise _unsupported(f"compound ORDER BY term {column.sql('sqlite')!r}")
                return
            if not self._visible(scope, outer):
                raise _unsupported(f"{outer.name!r} is shadowed where {column.sql('sqlite')} is")
            node: exp.Expression = _column(new, outer.name)
            parent = column.parent
            bare = isinstance(parent, exp.Select) and column in parent.expressions
            if bare and self._names_read(scope) and sqlite_fold(new) != sqlite_fold(column.name):
                node = exp.Alias(this=node, alias=_ident(column.name))
            self._replace(column, node)
            return
        if column.table or compound or not added or not self._outer_in_reach(scope, b.scope):
            return
        # an unqualified name A now also has: qualify it with its own FROM item
        if not b.source.name or not self._visible(scope, b.source):
            raise _unsupported(
                f"{column.name!r} could be captured by {plan.outer.name}'s new column"
            )
        self._replace(column, _column(column.name, b.source.name))

    def _stars(self, select: _Select, pairs: dict[int, tuple[Source, exp.Expression]]) -> None:
        plan = self.plan
        projections = select.scope.expression.expressions
        node = self.twin[id(select.scope.expression)]
        current = list(node.expressions)  # the projections as rewritten so far, same places
        several = len(select.sources) > 1
        expanded: list[exp.Expression] = []
        touched = False
        for proj, now in zip(projections, current, strict=True):
            covered: list[Source] | None = None
            qualify = several
            if isinstance(proj, exp.Star):
                covered = select.sources
            elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                covered = [self.binder.qualifier(select.scope, proj.table)[1]]
                qualify = True
            if covered is None or not any(plan.is_outer(s) or plan.is_inner(s) for s in covered):
                expanded.append(now)
                continue
            touched = True
            for source in covered:
                expanded.extend(self._spelled(select, source, pairs, qualify))
        if touched:
            node.set("expressions", expanded)
            self.changed = True

    def _spelled(
        self,
        select: _Select,
        source: Source,
        pairs: dict[int, tuple[Source, exp.Expression]],
        qualify: bool,
    ) -> list[exp.Expression]:
        """The columns a star yields over ``source``, spelled out for the new schema."""
        plan = self.plan
        if plan.is_inner(source):
            outer, _ = pairs[id(source)]
            out: list[exp.Expression] = []
            for c in plan.inner.columns:
                new = plan.new_name(c.name)
                node: exp.Expression = _column(new, outer.name)
                if self._names_read(select.scope) and sqlite_fold(new) != sqlite_fold(c.name):
                    node = exp.Alias(this=node, alias=_ident(c.name))
                out.append(node)
            return out
        if plan.is_outer(source) or source.table is not None:
            assert source.table is not None
            qualifier = source.name if qualify else ""
            if qualify and not source.name:
                raise _unsupported("a star over an unnamed FROM item")
            return [_column(c.name, qualifier) for c in source.table.columns]
        if not source.name:
            raise _unsupported("a star over an unnamed subquery")
        return [exp.Column(this=exp.Star(), table=_ident(source.name))]

    def _remove_inner(
        self, select: _Select, pairs: dict[int, tuple[Source, exp.Expression]]
    ) -> None:
        """Drop each B item of the SELECT: its A item takes the earlier of the two places,
        the key equality goes, the later place's other join conditions move to WHERE."""
        inner = [s for s in select.sources if id(s) in pairs]
        if not inner:
            return
        node = self.twin[id(select.scope.expression)]
        sources = list(select.sources)
        slots = [
            [self.twin[id(item)], None if j is None else self.twin[id(j)]]
            for item, j in zip(select.items, select.joins, strict=True)
        ]
        where = node.args.get("where")
        terms = _conjuncts(where.this if where is not None else None)
        for source in inner:
            outer, condition = pairs[id(source)]
            key = self.twin[id(condition)]
            terms = [t for t in terms if t is not key]
            for _, join in slots:
                if join is not None and join.args.get("on") is not None:
                    kept = [t for t in _conjuncts(join.args["on"]) if t is not key]
                    join.set("on", exp.and_(*kept, copy=False) if kept else None)
            i_outer = next(i for i, s in enumerate(sources) if s is outer)
            i_inner = next(i for i, s in enumerate(sources) if s is source)
            early, late = sorted((i_outer, i_inner))
            late_join = slots[late][1]
            assert late_join is not None
            terms += _conjuncts(late_join.args.get("on"))
            if i_outer == late:
                slots[early][0] = slots[late][0]  # A moves up to B's place
                sources[early] = outer
            del slots[late]
            del sources[late]
        from_ = node.args.get("from_") or node.args.get("from")
        from_.set("this", slots[0][0])
        joins = []
        for item, join in slots[1:]:
            assert join is not None
            join.set("this", item)
            joins.append(join)
        node.set("joins", joins or None)
        node.set("where", exp.Where(this=exp.and_(*terms, copy=False)) if terms else None)
        self.changed = True


def flatten_rewrite(sql: str, schema: SqlSchema, plan: FlattenPlan) -> str:
    """``sql`` for the flattened database; raises :class:`SqlRewriteError` when the query
    needs ``B``'s own rows (see the module docstring)."""
    return _Flattener(sql, schema, plan).rewrite(sql)


# -- the family ---------------------------------------------------------------------------------------
def _inexact(ctx: FamilyContext, a: SqlTable, fk: ForeignKey, b: SqlTable) -> str:
    """Why merging ``b`` into ``a`` along ``fk`` would not be exact on the file ("" if it is)."""
    assert ctx.path is not None
    affinities_a = column_affinities(ctx.path, a.name)
    affinities_b = column_affinities(ctx.path, b.name)
    if affinities_a is None or affinities_b is None:
        return "a table declares a collation"
    if affinities_a.get(sqlite_fold(fk.column)) != affinities_b.get(sqlite_fold(fk.ref_column)):
        return f"{a.name}.{fk.column} and {b.name}.{fk.ref_column} have different affinities"
    ta, tb = quote_identifier(a.name), quote_identifier(b.name)
    k, r = f"{ta}.{quote_identifier(fk.column)}", f"{tb}.{quote_identifier(fk.ref_column)}"
    unmatched = original_rows(
        ctx.path,
        f"SELECT count(*) FROM {ta} WHERE (SELECT count(*) FROM {tb} WHERE {r} = {k}) <> 1",
    )[0][0]
    if unmatched:
        return f"{unmatched} {a.name} rows do not match exactly one {b.name} row"
    different = original_rows(
        ctx.path,
        f"SELECT count(*) FROM {ta} JOIN {tb} ON {r} = {k} "
        f"WHERE NOT ({k} IS {r} AND typeof({k}) = typeof({r}))",
    )[0][0]
    if different:
        return f"{different} {a.name} keys equal their {b.name} key only after a conversion"
    return ""


def _plan(ctx: FamilyContext, a: SqlTable, fk: ForeignKey, b: SqlTable) -> FlattenPlan | None:
    """New names for ``b``'s columns in ``a`` (``b``'s natural name in front on a clash)."""
    taken = {sqlite_fold(c.name) for c in a.columns}
    moved: dict[str, str] = {}
    for column in b.columns:
        if sqlite_fold(column.name) == sqlite_fold(fk.ref_column):
            moved[column.name] = a.columns[a.index(fk.column)].name
            continue
        name = column.name
        if sqlite_fold(column.name) in taken:
            natural = f"{ctx.natural(b.name)} {ctx.natural(b.name, column.name)}"
            styled = styled_identifier(natural, a, taken)
            name = f"{b.name}_{column.name}" if styled is None else styled
            if quote_identifier(name) != name or sqlite_fold(name) in taken:
                return None
        taken.add(sqlite_fold(name))
        moved[column.name] = name
    return FlattenPlan(a, b, fk.column, fk.ref_column, moved)


def _edit(ctx: FamilyContext, plan: FlattenPlan) -> DbEdit:
    a, b = plan.outer, plan.inner
    ta, tb = sqlite_fold(a.name), sqlite_fold(b.name)
    ref = sqlite_fold(plan.ref)
    gained = [c for c in b.columns if sqlite_fold(c.name) != ref]
    columns = list(a.columns) + [dataclasses.replace(c, name=plan.moved[c.name]) for c in gained]
    fks = [
        fk
        for fk in a.foreign_keys
        if not (sqlite_fold(fk.column) == sqlite_fold(plan.key) and sqlite_fold(fk.ref_table) == tb)
    ]
    fks += [
        fk.model_copy(update={"column": plan.moved[b.columns[b.index(fk.column)].name]})
        for fk in b.foreign_keys
        if sqlite_fold(fk.ref_table) != tb and sqlite_fold(fk.column) != ref
    ]
    new_a = dataclasses.replace(a, columns=tuple(columns), foreign_keys=tuple(fks))
    tables = []
    for table in ctx.schema.tables:
        if table is b:
            continue
        if table is a:
            tables.append(new_a)
            continue
        kept = tuple(fk for fk in table.foreign_keys if sqlite_fold(fk.ref_table) != tb)
        tables.append(dataclasses.replace(table, foreign_keys=kept))
    schema = SqlSchema(tuple(tables))
    origin: dict[Key, Key] = {}
    for table in schema.tables:
        t = sqlite_fold(table.name)
        for column in table.columns:
            origin[(t, sqlite_fold(column.name))] = (t, sqlite_fold(column.name))
    labels: dict[Key, str] = {}
    for column in gained:
        new = plan.moved[column.name]
        origin[(ta, sqlite_fold(new))] = (tb, sqlite_fold(column.name))
        if sqlite_fold(new) != sqlite_fold(column.name):
            labels[(ta, sqlite_fold(new))] = (
                f"{ctx.natural(b.name)} {ctx.natural(b.name, column.name)}"
            )
    qa, qb = quote_identifier(a.name), quote_identifier(b.name)
    select = [f"{qa}.{quote_identifier(c.name)}" for c in a.columns]
    select += [
        f"{qb}.{quote_identifier(c.name)} AS {quote_identifier(plan.moved[c.name])}" for c in gained
    ]
    fill = (
        f"SELECT {', '.join(select)} FROM {qa} LEFT JOIN {qb} ON "
        f"{qa}.{quote_identifier(plan.key)} = {qb}.{quote_identifier(plan.ref)} ORDER BY {qa}.rowid"
    )
    old_schema = ctx.schema
    gained_names = ", ".join(plan.moved[c.name] for c in gained) or "no column"
    return DbEdit(
        schema=schema,
        operation=(
            f"table {b.name} merged into {a.name} along {a.name}.{plan.key} → "
            f"{b.name}.{plan.ref} ({a.name} gains {gained_names}; {b.name} dropped)"
        ),
        origin=origin,
        labels=labels,
        fill={new_a.name: fill},
        mapping={b.name: {c: f"{a.name}.{n}" for c, n in plan.moved.items()}},
        rewrite=lambda sql: flatten_rewrite(sql, old_schema, plan),
        keeps_parsed_sql=False,
    )


class Flatten:
    """MT-Teql's flatten: a table some gold query joins through a foreign key merged into
    the referencing table (seeded choice among the exact ones; see the module docstring)."""

    kind = "flatten"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        if ctx.path is None:
            raise NotApplicable("no database file: the key matches cannot be checked")
        candidates = [
            (a, fk, b)
            for a in ctx.schema.tables
            for fk in a.foreign_keys
            if (b := ctx.schema.find(fk.ref_table)) is not None
            and b is not a
            and not sqlite_fold(a.name).startswith("sqlite_")
            and not sqlite_fold(b.name).startswith("sqlite_")
            and b.find(fk.ref_column) is not None
            and sqlite_fold(a.name) in ctx.usage.tables
            and sqlite_fold(b.name) in ctx.usage.tables
        ]
        if not candidates:
            raise NotApplicable("no gold query uses both tables of a foreign key")
        seeded_rng(seed, ctx.db_id, self.kind).shuffle(candidates)
        reasons = []
        for a, fk, b in candidates:
            why = _inexact(ctx, a, fk, b)
            plan = None if why else _plan(ctx, a, fk, b)
            if plan is None:
                reasons.append(why or f"no free names for {b.name}'s columns in {a.name}")
                continue
            joined = 0
            for query in ctx.queries:
                tables = {
                    sqlite_fold(t.name)
                    for t in sqlglot.parse_one(query.sql, read="sqlite").find_all(exp.Table)
                }
                if sqlite_fold(b.name) not in tables:
                    continue
                try:
                    flatten_rewrite(query.sql, ctx.schema, plan)
                except SqlRewriteError:
                    continue
                joined += 1
            if not joined:
                reasons.append(f"no gold query joins {a.name} and {b.name} on {fk.column}")
                continue
            return _edit(ctx, plan)
        raise NotApplicable("; ".join(sorted(set(reasons))))  # one wording whatever the seed
