"""Spider's exact set match (EM), as the official evaluator computes it, over sqlglot parses.

The official evaluator (test-suite-sql-eval's ``evaluation.py``, Spider's
``evaluation.py`` before it) parses gold and predicted SQL into a nested structure — SELECT
items ``(agg, val_unit)``, table units, conditions ``(not, op, val_unit, val1, val2)``,
GROUP BY, HAVING, ORDER BY, LIMIT and the set operations — rewrites both, and compares them
component by component. Here sqlglot does the parsing (SQLite dialect, SQLite's name
resolution: aliases, unqualified columns through the FROM clause in order, then enclosing
queries; a double-quoted name that names no column is a string) into :class:`SqlTree`, the
same structure as written; :func:`official_form` applies the evaluator's rewrites and
:func:`exact_set_match` its comparison:

- **rewrites** — a condition's value is dropped unless it is a subquery, and values inside
  those subqueries and the INTERSECT/UNION/EXCEPT parts are dropped too; in the query and
  its set-operation parts ``DISTINCT`` is dropped and a column of a foreign-key cluster
  counts as the cluster's first column when its table is in the outer query's FROM. The
  subqueries of conditions keep ``DISTINCT`` and their own columns; a FROM subquery is kept
  as written, values included.
- **comparison** — ``select``, ``select(no AGG)``, ``where``, ``where(no OP)``,
  ``group(no Having)`` (column names, tables ignored), ``group`` (GROUP BY columns as a list,
  HAVING equal), ``order`` (one direction per ORDER BY, the last one written, else ``asc``;
  the terms as a list; LIMIT present on both or neither), ``and/or`` (of WHERE),
  ``IUEN`` (the set-operation parts, recursively) and ``keywords`` must all match, and the
  table units must be the same multiset. JOIN … ON conditions count only through
  ``keywords`` (``or``, ``not``, ``in``, ``like``).

Where this differs from the evaluator — each with an example in docs/evaluation.md#exact-match:
SQL its grammar cannot read scores 0 there, and is read here the way SQLite reads it
(``<>``, ``NOT x IN``, ``IS [NOT] NULL``, ``EXISTS``, aliases in SELECT, a table alias
without ``AS``, comma joins, ``T1.*``, quoted identifiers, an unqualified column of an
enclosing query, a table alias given to two tables at two nesting levels — read there as the
last table so named); it replaces ``value`` with ``1`` in every prediction and we do not. SQL outside the structure (functions other than the five
aggregates, CASE, CAST, arithmetic on more than two columns, JOIN … USING) raises
:class:`UnsupportedSql`: a gold query of that kind is not scored, a prediction is wrong.

One file: the structure, how a parse fills it, the evaluator's rewrites and its comparison
are one definition of EM, to be read and checked against the evaluator side by side.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from cta.formats.spider_schema import SpiderSchema
from cta.sql.identifiers import evaluator_fold

__all__ = [
    "Bound",
    "ExactMatcher",
    "SqlTree",
    "UnsupportedSql",
    "bind",
    "exact_set_match",
    "official_form",
]

AGG_OPS: dict[type[exp.Expr], int] = {exp.Max: 1, exp.Min: 2, exp.Count: 3, exp.Sum: 4, exp.Avg: 5}
UNIT_OPS: dict[type[exp.Expr], int] = {exp.Sub: 1, exp.Add: 2, exp.Mul: 3, exp.Div: 4}
# Spider's WHERE_OPS: not, between, =, >, <, >=, <=, !=, in, like, is, exists
OP_BETWEEN, OP_IN, OP_LIKE, OP_IS, OP_EXISTS = 1, 8, 9, 10, 11
COMPARISONS: dict[type[exp.Expr], int] = {
    exp.EQ: 2,
    exp.GT: 3,
    exp.LT: 4,
    exp.GTE: 5,
    exp.LTE: 6,
    exp.NEQ: 7,
}

ColUnit = tuple[int, str, bool]  # (aggregate, column key, DISTINCT inside the aggregate)
ValUnit = tuple[int, ColUnit, ColUnit | None]  # (unit op, column, second column)
Value = Any  # a condition's value: a SqlTree (subquery), str, float, a ColUnit, or None


class UnsupportedSql(ValueError):
    """A query sqlglot cannot parse, or one outside Spider's SQL structure."""


@dataclass(frozen=True)
class Cond:
    """A condition ``(not, op, val_unit, val1, val2)``; :func:`official_form` masks the
    values that are not subqueries."""

    negated: bool
    op: int
    left: ValUnit
    val1: Value = None
    val2: Value = None


Conditions = tuple["Cond | str", ...]  # units and the "and"/"or" between them


@dataclass(frozen=True)
class SqlTree:
    """Spider's parsed SQL, as written (values, DISTINCT and column keys kept); hashable,
    compared by value. :func:`official_form` turns it into what the evaluator compares."""

    select: tuple[tuple[int, ValUnit], ...]
    tables: tuple[tuple[str, Any], ...]  # ("table_unit", "__t__") or ("sql", SqlTree)
    from_conds: Conditions = ()
    where: Conditions = ()
    group_by: tuple[ColUnit, ...] = ()
    having: Conditions = ()
    order_by: tuple[str, tuple[ValUnit, ...]] | None = None
    limit: bool = False
    intersect: SqlTree | None = None
    union: SqlTree | None = None
    except_: SqlTree | None = None
    distinct: bool = False  # SELECT DISTINCT


@dataclass
class Bound:
    """A parsed query with every column and table node bound to the schema (by node id)."""

    tree: exp.Expr
    spider: SqlTree
    columns: dict[int, int] = field(default_factory=dict)  # id(exp.Column) → column index
    tables: dict[int, int] = field(default_factory=dict)  # id(exp.Table) → table index


@dataclass
class _Source:
    name: str  # the alias, or the table identifier
    table: int | None  # None: a derived table


@dataclass
class _Scope:
    sources: list[_Source]
    outer: _Scope | None
    aliases: dict[str, exp.Expr]
    projections: list[exp.Expr]


def _unwrap(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren | exp.Subquery) and not (
        isinstance(node, exp.Subquery) and node.alias
    ):
        node = node.this
    return node


class _Translator:
    def __init__(self, schema: SpiderSchema) -> None:
        self.schema = schema
        self.columns: dict[int, int] = {}
        self.tables: dict[int, int] = {}

    # -- queries ------------------------------------------------------------------------
    def query(self, node: exp.Expr, outer: _Scope | None) -> SqlTree:
        node = _unwrap(node)
        if isinstance(node, exp.Union | exp.Intersect | exp.Except):
            return self._compound(node, outer)
        if isinstance(node, exp.Select):
            return self._select(node, outer)
        raise UnsupportedSql(f"not a query: {type(node).__name__}")

    def _compound(self, node: exp.Expr, outer: _Scope | None) -> SqlTree:
        parts: list[tuple[str, exp.Expr]] = []

        def flatten(n: exp.Expr, op: str) -> None:
            n = _unwrap(n)
            if isinstance(n, exp.Union | exp.Intersect | exp.Except) and not n.args.get("order"):
                flatten(n.this, op)
                parts.append((type(n).__name__.lower(), n.expression))
            else:
                parts.append((op, n))

        flatten(node.this, "")
        parts.append((type(node).__name__.lower(), node.expression))
        # Spider nests to the right: A UNION B EXCEPT C = A with union = (B with except = C);
        # an ORDER BY/LIMIT of the whole compound is read with its last query, as Spider does.
        tree: SqlTree | None = None
        for i in range(len(parts) - 1, -1, -1):
            extra = node if i == len(parts) - 1 else None
            current = self._select_like(parts[i][1], outer, extra)
            if tree is not None:
                op = parts[i + 1][0]
                if op == "union":
                    current = dataclasses.replace(current, union=tree)
                elif op == "intersect":
                    current = dataclasses.replace(current, intersect=tree)
                else:
                    current = dataclasses.replace(current, except_=tree)
            tree = current
        assert tree is not None
        return tree

    def _select_like(
        self, node: exp.Expr, outer: _Scope | None, compound: exp.Expr | None
    ) -> SqlTree:
        node = _unwrap(node)
        if not isinstance(node, exp.Select):
            return self.query(node, outer)
        return self._select(node, outer, compound)

    def _select(
        self, sel: exp.Select, outer: _Scope | None, compound: exp.Expr | None = None
    ) -> SqlTree:
        scope = _Scope([], outer, {}, list(sel.expressions))
        units: list[tuple[str, Any]] = []
        from_ = sel.args.get("from_")
        sources = [from_.this] if from_ is not None else []
        joins = list(sel.args.get("joins") or [])
        sources += [j.this for j in joins]
        for source in sources:
            units.append(self._source(source, scope))
        for p in sel.expressions:
            if isinstance(p, exp.Alias):
                scope.aliases.setdefault(evaluator_fold(p.alias), p.this)
        from_conds: list[Cond | str] = []
        for j in joins:
            if j.args.get("using"):
                raise UnsupportedSql("JOIN … USING")
            on = j.args.get("on")
            if on is not None and not isinstance(on, exp.Boolean):  # sqlglot: ON TRUE when none
                if from_conds:
                    from_conds.append("and")
                from_conds.extend(self._conditions(on, scope))
        select = tuple(self._select_item(p, scope) for p in sel.expressions)
        where = sel.args.get("where")
        having = sel.args.get("having")
        group = sel.args.get("group")
        order_node = (compound.args.get("order") if compound is not None else None) or sel.args.get(
            "order"
        )
        limit = sel.args.get("limit") or (compound.args.get("limit") if compound else None)
        return SqlTree(
            select=select,
            tables=tuple(units),
            from_conds=tuple(from_conds),
            where=tuple(self._conditions(where.this, scope)) if where is not None else (),
            group_by=tuple(self._col_unit(g, scope) for g in group.expressions) if group else (),
            having=tuple(self._conditions(having.this, scope)) if having is not None else (),
            order_by=self._order(order_node, scope) if order_node is not None else None,
            limit=limit is not None,
            distinct=sel.args.get("distinct") is not None,
        )

    def _source(self, node: exp.Expr, scope: _Scope) -> tuple[str, Any]:
        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                raise UnsupportedSql(f"table {node.sql('sqlite')!r}")
            t = self.schema.table_index(node.name)
            if t is None:
                raise UnsupportedSql(f"unknown table {node.name!r}")
            self.tables[id(node)] = t
            scope.sources.append(_Source(node.alias_or_name, t))
            return ("table_unit", self.schema.table_key(t))
        if isinstance(node, exp.Subquery):
            nested = self.query(node.this, None)
            scope.sources.append(_Source(node.alias or "", None))
            return ("sql", nested)
        raise UnsupportedSql(f"FROM item {type(node).__name__}")

    # -- expressions ----------------------------------------------------------------------
    def _select_item(self, node: exp.Expr, scope: _Scope) -> tuple[int, ValUnit]:
        node = _unwrap(node.this if isinstance(node, exp.Alias) else node)
        agg = AGG_OPS.get(type(node))
        if agg is not None:
            # The evaluator reads ``count(DISTINCT x)`` in SELECT as count over (x, distinct).
            inner = self._dealias(_unwrap(self._agg_arg(node)), scope)
            column = (0, self._column_key(inner, scope), isinstance(node.this, exp.Distinct))
            return agg, (0, column, None)
        return 0, self._val_unit(node, scope)

    def _agg_arg(self, node: exp.Expr) -> exp.Expr:
        arg = node.this
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise UnsupportedSql("DISTINCT over several expressions")
            arg = arg.expressions[0]
        if arg is None:
            raise UnsupportedSql(f"{type(node).__name__} without argument")
        return arg

    def _val_unit(self, node: exp.Expr, scope: _Scope) -> ValUnit:
        node = self._dealias(_unwrap(node), scope)
        op = UNIT_OPS.get(type(node))
        if op is not None:
            return op, self._col_unit(node.this, scope), self._col_unit(node.expression, scope)
        return 0, self._col_unit(node, scope), None

    def _col_unit(self, node: exp.Expr, scope: _Scope) -> ColUnit:
        node = self._dealias(_unwrap(node), scope)
        agg = AGG_OPS.get(type(node))
        if agg is not None:
            inner = self._dealias(_unwrap(self._agg_arg(node)), scope)
            return agg, self._column_key(inner, scope), isinstance(node.this, exp.Distinct)
        return 0, self._column_key(node, scope), False

    def _dealias(self, node: exp.Expr, scope: _Scope) -> exp.Expr:
        """A bare name that no table column answers but a result alias does → its expression."""
        if (
            isinstance(node, exp.Column)
            and not node.table
            and isinstance(node.this, exp.Identifier)
        ):
            if self._lookup(node, scope) is None and evaluator_fold(node.name) in scope.aliases:
                return _unwrap(scope.aliases[evaluator_fold(node.name)])
        return node

    def _lookup(self, node: exp.Column, scope: _Scope) -> tuple[_Source, int | None] | None:
        name, qualifier = node.name, node.table
        current: _Scope | None = scope
        while current is not None:
            for source in current.sources:
                if qualifier and evaluator_fold(source.name) != evaluator_fold(qualifier):
                    continue
                if source.table is None:
                    if qualifier:
                        return source, None
                    continue
                index = self.schema.column_index(source.table, name)
                if index is not None:
                    return source, index
            current = current.outer
        return None

    def _column_key(self, node: exp.Expr, scope: _Scope) -> str:
        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            return "__all__"
        if not isinstance(node, exp.Column):
            raise UnsupportedSql(f"expression {type(node).__name__}")
        found = self._lookup(node, scope)
        if found is None:
            raise UnsupportedSql(f"unknown column {node.sql('sqlite')!r}")
        source, index = found
        if index is None:  # a derived table's column
            return f"__{evaluator_fold(source.name)}.{evaluator_fold(node.name)}__"
        self.columns[id(node)] = index
        return self.schema.column_key(index)

    def _value(self, node: exp.Expr | None, scope: _Scope) -> Value:
        """A condition's value as the evaluator reads it: a subquery, a string (quotes of
        either kind alike), a number (``30`` = ``30.0``), a column; else the SQL text."""
        if node is None:
            return None
        node = _unwrap(node) if not isinstance(node, exp.Subquery) else node
        if isinstance(node, exp.Subquery):
            return self.query(node.this, scope)
        if isinstance(node, exp.Select | exp.Union | exp.Intersect | exp.Except):
            return self.query(node, scope)
        if isinstance(node, exp.Column) and self._lookup(node, scope) is not None:
            return self._col_unit(node, scope)  # a column compared with a column
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier):
            return node.name  # SQLite: a double-quoted name that names no column is a string
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            try:
                return float(node.this)
            except ValueError:
                return node.this
        return node.sql("sqlite")

    # -- conditions -------------------------------------------------------------------------
    def _conditions(self, node: exp.Expr, scope: _Scope) -> list[Cond | str]:
        node = _unwrap(node)
        if isinstance(node, exp.And | exp.Or):
            word = "and" if isinstance(node, exp.And) else "or"
            return [
                *self._conditions(node.this, scope),
                word,
                *self._conditions(node.expression, scope),
            ]
        return [self._condition(node, scope)]

    def _condition(self, node: exp.Expr, scope: _Scope) -> Cond:
        negated = False
        while isinstance(node, exp.Not):
            negated = not negated
            node = _unwrap(node.this)
        if node.args.get("negate"):
            negated = not negated
        if isinstance(node, exp.Exists):
            all_ = (0, "__all__", False)
            return Cond(negated, OP_EXISTS, (0, all_, None), self.query(node.this, scope))
        left = self._val_unit(node.this, scope)
        if isinstance(node, exp.Is):
            return Cond(negated, OP_IS, left)
        if isinstance(node, exp.In):
            query = node.args.get("query")
            return Cond(negated, OP_IN, left, self._value(query, scope) if query else None)
        if isinstance(node, exp.Like):
            return Cond(negated, OP_LIKE, left, self._value(node.expression, scope))
        if isinstance(node, exp.Between):
            low, high = node.args.get("low"), node.args.get("high")
            return Cond(
                negated, OP_BETWEEN, left, self._value(low, scope), self._value(high, scope)
            )
        op = COMPARISONS.get(type(node))
        if op is None:
            raise UnsupportedSql(f"condition {node.sql('sqlite')!r}")
        return Cond(negated, op, left, self._value(node.expression, scope))

    def _order(self, node: exp.Expr, scope: _Scope) -> tuple[str, tuple[ValUnit, ...]]:
        # The evaluator keeps one direction per ORDER BY: the last one written, else asc
        # (``a DESC, b`` is desc, ``a DESC, b ASC`` is asc).
        units = []
        direction = "asc"
        for term in node.expressions:
            desc = term.args.get("desc")
            if desc is not None:
                direction = "desc" if desc else "asc"
            key = term.this
            if isinstance(key, exp.Literal) and not key.is_string:
                position = int(key.this) - 1
                if not 0 <= position < len(scope.projections):
                    raise UnsupportedSql(f"ORDER BY {key.this}: no such result column")
                key = scope.projections[position]
                key = key.this if isinstance(key, exp.Alias) else key
            units.append(self._val_unit(key, scope))
        return direction, tuple(units)


def bind(sql: str, schema: SpiderSchema) -> Bound:
    """Parse ``sql`` (SQLite) and bind it to ``schema``; raises :class:`UnsupportedSql`."""
    try:
        statements = sqlglot.parse(sql, read="sqlite")
    except SqlglotError as exc:
        raise UnsupportedSql(str(exc).splitlines()[0]) from None
    if len(statements) != 1 or statements[0] is None:
        raise UnsupportedSql("expected one statement")
    tree = statements[0]
    translator = _Translator(schema)
    spider = translator.query(tree, None)
    return Bound(tree, spider, translator.columns, translator.tables)


# -- what the evaluator compares ----------------------------------------------------------------
def official_form(tree: SqlTree, kmap: Mapping[str, str]) -> SqlTree:
    """``tree`` as the evaluator compares it, after its two rewrites of a parsed query.

    Values: a condition's value is dropped unless it is a subquery; inside the subqueries
    of conditions and of INTERSECT/UNION/EXCEPT values are dropped in turn. Columns: in the
    query and its INTERSECT/UNION/EXCEPT parts, ``DISTINCT`` is dropped and a column of a
    foreign-key cluster becomes the cluster's first (``kmap``) when its table is one of the
    *outer* query's FROM tables. Left as written: the subqueries of conditions (their
    ``DISTINCT``, their columns) and FROM subqueries (values included).
    """
    tables = {key[2:-2] for kind, key in tree.tables if kind == "table_unit"}
    return _columns_rebuilt(tree, tables, kmap)


def _columns_rebuilt(tree: SqlTree, tables: set[str], kmap: Mapping[str, str]) -> SqlTree:
    def column(unit: ColUnit) -> ColUnit:
        agg, key, _ = unit
        if "." in key and key[2 : key.index(".")] in tables:
            key = kmap.get(key, key)
        return agg, key, False

    def val_unit(unit: ValUnit) -> ValUnit:
        op, first, second = unit
        return op, column(first), column(second) if second is not None else None

    def conditions(conds: Conditions) -> Conditions:
        return tuple(
            dataclasses.replace(
                c, left=val_unit(c.left), val1=_masked(c.val1), val2=_masked(c.val2)
            )
            if isinstance(c, Cond)
            else c
            for c in conds
        )

    def part(nested: SqlTree | None) -> SqlTree | None:
        return _columns_rebuilt(nested, tables, kmap) if nested is not None else None

    order = tree.order_by
    return dataclasses.replace(
        tree,
        select=tuple((agg, val_unit(unit)) for agg, unit in tree.select),
        from_conds=conditions(tree.from_conds),
        where=conditions(tree.where),
        group_by=tuple(column(unit) for unit in tree.group_by),
        having=conditions(tree.having),
        order_by=(order[0], tuple(val_unit(u) for u in order[1])) if order else None,
        intersect=part(tree.intersect),
        union=part(tree.union),
        except_=part(tree.except_),
        distinct=False,
    )


def _masked(value: Value) -> Value:
    return _values_masked(value) if isinstance(value, SqlTree) else None


def _values_masked(tree: SqlTree) -> SqlTree:
    def conditions(conds: Conditions) -> Conditions:
        return tuple(
            dataclasses.replace(c, val1=_masked(c.val1), val2=_masked(c.val2))
            if isinstance(c, Cond)
            else c
            for c in conds
        )

    def part(nested: SqlTree | None) -> SqlTree | None:
        return _values_masked(nested) if nested is not None else None

    return dataclasses.replace(
        tree,
        from_conds=conditions(tree.from_conds),
        where=conditions(tree.where),
        having=conditions(tree.having),
        intersect=part(tree.intersect),
        union=part(tree.union),
        except_=part(tree.except_),
    )


# -- the comparison (Spider's evaluation.py) ---------------------------------------------------
def _units(conds: Conditions) -> list[Cond]:
    return [c for c in conds if isinstance(c, Cond)]


def _same_bag(pred: Sequence[Any], gold: Sequence[Any]) -> bool:
    """Spider's ``get_scores`` is 1 only when both totals and the matched count agree."""
    return len(pred) == len(gold) and Counter(pred) == Counter(gold)


def _match_select(pred: SqlTree, gold: SqlTree) -> bool:
    return _same_bag(pred.select, gold.select) and _same_bag(
        [u[1] for u in pred.select], [u[1] for u in gold.select]
    )


def _match_where(pred: SqlTree, gold: SqlTree) -> bool:
    p, g = _units(pred.where), _units(gold.where)
    return _same_bag(p, g) and _same_bag([c.left for c in p], [c.left for c in g])


def _group_names(tree: SqlTree) -> list[str]:
    return [key.split(".")[1] if "." in key else key for _, key, _ in tree.group_by]


def _match_group(pred: SqlTree, gold: SqlTree) -> bool:
    return _same_bag(_group_names(pred), _group_names(gold))


def _match_having(pred: SqlTree, gold: SqlTree) -> bool:
    # Spider's eval_having: GROUP BY columns equal as lists (table included), HAVING equal.
    if bool(pred.group_by) != bool(gold.group_by):
        return False
    if not gold.group_by:
        return True
    same_columns = [u[1] for u in pred.group_by] == [u[1] for u in gold.group_by]
    return same_columns and pred.having == gold.having


def _match_order(pred: SqlTree, gold: SqlTree) -> bool:
    if (pred.order_by is None) != (gold.order_by is None):
        return False
    return gold.order_by is None or (pred.order_by == gold.order_by and pred.limit == gold.limit)


def _and_or(tree: SqlTree) -> set[str]:
    return {c for c in tree.where if isinstance(c, str)}


def _keywords(tree: SqlTree) -> set[str]:
    out: set[str] = set()
    for word, present in (
        ("where", tree.where),
        ("group", tree.group_by),
        ("having", tree.having),
        ("order", tree.order_by),
        ("limit", tree.limit),
        ("except", tree.except_),
        ("union", tree.union),
        ("intersect", tree.intersect),
    ):
        if present:
            out.add(word)
    if tree.order_by is not None:
        out.add(tree.order_by[0])
    conds = [*tree.from_conds, *tree.where, *tree.having]
    if "or" in conds:
        out.add("or")
    units = _units(tuple(conds))
    if any(c.negated for c in units):
        out.add("not")
    if any(c.op == OP_IN for c in units):
        out.add("in")
    if any(c.op == OP_LIKE for c in units):
        out.add("like")
    return out


def _match_nested(pred: SqlTree | None, gold: SqlTree | None) -> bool:
    if pred is None or gold is None:
        return pred is None and gold is None
    return exact_set_match(gold, pred)


def exact_set_match(gold: SqlTree, pred: SqlTree) -> bool:
    """Spider's exact set match of two :func:`official_form` trees: every component equal
    as a set, table units as a bag."""
    components = (
        _match_select(pred, gold),
        _match_where(pred, gold),
        _match_group(pred, gold),
        _match_having(pred, gold),
        _match_order(pred, gold),
        _and_or(pred) == _and_or(gold),
        all(
            _match_nested(getattr(pred, k), getattr(gold, k))
            for k in ("intersect", "union", "except_")
        ),
        _keywords(pred) == _keywords(gold),
    )
    return all(components) and Counter(pred.tables) == Counter(gold.tables)


class ExactMatcher:
    """Exact set match of predictions against gold queries, per schema (kmaps cached)."""

    def __init__(self) -> None:
        self._kmaps: dict[str, dict[str, str]] = {}

    def parse(self, sql: str, schema: SpiderSchema) -> SqlTree:
        """Spider's structure of ``sql``; raises :class:`UnsupportedSql`."""
        kmap = self._kmaps.get(schema.db_id)
        if kmap is None:
            kmap = self._kmaps[schema.db_id] = schema.foreign_key_map()
        return official_form(bind(sql, schema).spider, kmap)

    def score(self, schema: SpiderSchema, gold: str, pred: str | None) -> bool | None:
        """True/False; None when the gold query is outside what can be scored."""
        try:
            gold_tree = self.parse(gold, schema)
        except UnsupportedSql:
            return None
        if pred is None:
            return False
        try:
            pred_tree = self.parse(pred, schema)
        except UnsupportedSql:
            return False
        return exact_set_match(gold_tree, pred_tree)
