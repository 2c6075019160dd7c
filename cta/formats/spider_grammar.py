"""The SQL the official Spider evaluator reads, and SQL written so that it reads it.

The official evaluator (``evaluation.py`` of Spider and of test-suite-sql-eval) parses the
*gold* query of every line with its own small grammar, even for execution accuracy, and
outside any error handling: one gold line it cannot parse stops the whole run. This module
restates that grammar from its documented behaviour, in our own code, so the project can
tell which gold lines the evaluator reads (:func:`evaluator_problem`) and write the lines
it generates in that grammar wherever an equivalent form exists (:func:`spider_sql`).

The rules, as the evaluator applies them:

* **Tokens.** Single quotes become double quotes and every quoted stretch is one value
  token, so a quoted *identifier* (``"age in years"``) is a value, and an odd number of
  quotes (``"O'Brien"``) stops it. Everything else is lower-cased and split into words
  (``t1.name`` is one word), numbers and punctuation; ``!=``, ``>=``, ``<=`` are joined,
  ``<>`` is not.
* **Tables** come after ``FROM``/``JOIN`` by name, aliased only with ``AS``; a subquery in
  ``FROM`` takes no alias. ``JOIN`` is the only join word (no ``LEFT``/``INNER``/``USING``).
* **Columns** are ``*``, ``alias.column`` or a bare name of a table in ``FROM``; the five
  aggregates ``max min count sum avg`` are syntax wherever they appear (a column called
  ``Avg`` stops it); no other function (``CAST``, ``substr``, ``printf``, ``abs``…), no
  ``CASE``, no ``||``, no constant in arithmetic; a value unit is one column or two joined
  by ``+ - * /``.
* **SELECT** items are ``[agg] value-unit`` separated by commas, no ``AS`` alias; an
  aggregate's argument is one column (``count(DISTINCT x)`` too).
* **Conditions** are ``value-unit [NOT] op value`` joined by ``AND``/``OR``, with op one of
  ``= > < >= <= != IN LIKE BETWEEN IS EXISTS`` and a value a number, a quoted string, a
  column or a parenthesised ``SELECT``: ``IS NULL`` stops it (``NULL`` is not a value), so
  does ``NOT x IN`` (the evaluator wants ``x NOT IN``).
* **GROUP BY** columns, **HAVING** conditions, **ORDER BY** value units each with an
  optional ``ASC``/``DESC``, **LIMIT** an integer, then ``INTERSECT``/``UNION``/``EXCEPT``
  and another query. Tokens after a complete query are ignored (``OFFSET 2`` is dropped).
* **Names** come from the database file: tables and columns, lower-cased
  (:func:`~cta.sql.identifiers.evaluator_fold`, where it differs from SQLite's fold).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite

from cta.sql.identifiers import evaluator_fold

__all__ = [
    "EvaluatorGrammarError",
    "evaluator_form",
    "evaluator_problem",
    "spider_sql",
    "spider_tables_of",
]

CLAUSES = ("select", "from", "where", "group", "order", "limit", "intersect", "union", "except")
JOINS = ("join", "on", "as")
WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("-", "+", "*", "/")
AGGREGATES = ("max", "min", "count", "sum", "avg")
SET_OPS = ("intersect", "union", "except")

_WORD = re.compile(r"\s+|(?P<tok>__value\d+__|(?<=\s)-\d+(?:\.\d+)?|[a-z0-9_]+(?:\.[a-z0-9_]+)?|.)")


class EvaluatorGrammarError(ValueError):
    """A query outside the official evaluator's grammar (the message says where)."""


def _tokens(sql: str) -> list[str]:
    text = sql.replace("'", '"')
    quotes = [i for i, ch in enumerate(text) if ch == '"']
    if len(quotes) % 2:
        raise EvaluatorGrammarError("an odd number of quotes (a value holding a quote)")
    values: dict[str, str] = {}
    out, last = [], 0
    for n in range(0, len(quotes), 2):
        a, b = quotes[n], quotes[n + 1]
        key = f"__value{n // 2}__"
        values[key] = text[a : b + 1]
        out.append(text[last:a] + f" {key} ")
        last = b + 1
    out.append(text[last:])
    lowered = evaluator_fold("".join(out))
    toks = [m["tok"] for m in _WORD.finditer(lowered) if m["tok"]]
    joined: list[str] = []
    for tok in toks:
        if tok == "=" and joined and joined[-1] in ("!", ">", "<"):
            joined[-1] += "="
        else:
            joined.append(tok)
    for first, second in zip(joined, joined[1:], strict=False):
        if (first, second) == ("<", ">"):
            raise EvaluatorGrammarError("'<>' (the evaluator's grammar knows '!=')")
    return [values.get(t, t) for t in joined]


class _Parser:
    """A recursive-descent reading of one query by the evaluator's rules."""

    def __init__(self, toks: list[str], schema: Mapping[str, Collection[str]]) -> None:
        self.toks = toks
        self.schema = schema
        self.aliases = self._aliases()

    # -- helpers ---------------------------------------------------------------------------
    def _aliases(self) -> dict[str, str]:
        aliases: dict[str, str] = {}
        for i, tok in enumerate(self.toks):
            if tok == "as" and 0 < i < len(self.toks) - 1:
                aliases[self.toks[i + 1]] = self.toks[i - 1]
        for table in self.schema:
            if table in aliases:
                raise EvaluatorGrammarError(f"alias {table!r} is also a table name")
            aliases[table] = table
        return aliases

    def tok(self, i: int) -> str:
        if i >= len(self.toks):
            raise EvaluatorGrammarError("the query ends too early")
        return self.toks[i]

    def expect(self, i: int, want: str) -> int:
        if self.tok(i) != want:
            raise EvaluatorGrammarError(f"expected {want!r}, found {self.tok(i)!r}")
        return i + 1

    def at(self, i: int, *words: str) -> bool:
        return i < len(self.toks) and self.toks[i] in words

    def listed(self, i: int, item: Callable[[int], int]) -> int:
        """Items separated by commas from ``i``; where the list ends."""
        i = item(i)
        while self.at(i, ","):
            i = item(i + 1)
        return i

    # -- grammar ---------------------------------------------------------------------------
    def query(self, i: int) -> int:
        block = self.at(i, "(")
        if block:
            i += 1
        # FROM first (its tables resolve bare columns), then SELECT, then on after FROM
        from_end, tables = self.from_clause(i)
        self.select(i, tables)
        i = from_end
        if self.at(i, "where"):
            i = self.conditions(i + 1, tables)
        if self.at(i, "group"):
            i = self.listed(self.expect(i + 1, "by"), lambda j: self.col_unit(j, tables))
        if self.at(i, "having"):
            i = self.conditions(i + 1, tables)
        if self.at(i, "order"):
            i = self.listed(self.expect(i + 1, "by"), lambda j: self.order_item(j, tables))
        if self.at(i, "limit"):
            value = self.tok(i + 1)
            if not re.fullmatch(r"\d+", value):
                raise EvaluatorGrammarError(f"LIMIT {value!r} is not an integer")
            i += 2
        while self.at(i, ";"):
            i += 1
        if block:
            i = self.expect(i, ")")
        if self.at(i, *SET_OPS):
            i = self.query(i + 1)
        return i

    def from_clause(self, start: int) -> tuple[int, list[str]]:
        try:
            i = self.toks.index("from", start) + 1
        except ValueError:
            raise EvaluatorGrammarError("no FROM") from None
        tables: list[str] = []
        while i < len(self.toks):
            block = self.at(i, "(")
            if block:
                i += 1
            if self.at(i, "select"):
                i = self.query(i)
            else:
                if self.at(i, "join"):
                    i += 1
                name = self.tok(i)
                if name not in self.aliases:
                    raise EvaluatorGrammarError(f"table {name!r} (not a table or AS alias)")
                tables.append(self.aliases[name])
                i += 3 if self.at(i + 1, "as") else 1
                if self.at(i, "on"):
                    i = self.conditions(i + 1, tables)
            if block:
                i = self.expect(i, ")")
            if i < len(self.toks) and (self.toks[i] in CLAUSES or self.toks[i] in (")", ";")):
                break
        return i, tables

    def select(self, i: int, tables: list[str]) -> int:
        i = self.expect(i, "select")
        if self.at(i, "distinct"):
            i += 1
        while i < len(self.toks) and self.toks[i] not in CLAUSES:
            if self.at(i, *AGGREGATES):
                i += 1
            i = self.val_unit(i, tables)
            if self.at(i, ","):
                i += 1
        return i

    def val_unit(self, i: int, tables: list[str]) -> int:
        block = self.at(i, "(")
        if block:
            i += 1
        i = self.col_unit(i, tables)
        if self.at(i, *UNIT_OPS):
            i = self.col_unit(i + 1, tables)
        if block:
            i = self.expect(i, ")")
        return i

    def order_item(self, i: int, tables: list[str]) -> int:
        """A value unit and its optional ASC/DESC."""
        i = self.val_unit(i, tables)
        return i + 1 if self.at(i, "asc", "desc") else i

    def col_unit(self, i: int, tables: list[str]) -> int:
        block = self.at(i, "(")
        if block:
            i += 1
        if self.at(i, *AGGREGATES):
            i = self.expect(i + 1, "(")
            if self.at(i, "distinct"):
                i += 1
            i = self.column(i, tables)
            return self.expect(i, ")")
        if self.at(i, "distinct"):
            i += 1
        i = self.column(i, tables)
        if block:
            i = self.expect(i, ")")
        return i

    def column(self, i: int, tables: list[str]) -> int:
        tok = self.tok(i)
        if tok == "*":
            return i + 1
        if "." in tok:
            alias, name = tok.split(".", 1)
            table = self.aliases.get(alias)
            if table is None or name not in self.schema.get(table, ()):
                raise EvaluatorGrammarError(f"column {tok!r}")
            return i + 1
        if not tables:
            raise EvaluatorGrammarError(f"column {tok!r} with no table in FROM")
        if any(tok in self.schema.get(t, ()) for t in tables):
            return i + 1
        raise EvaluatorGrammarError(f"column {tok!r}")

    def conditions(self, i: int, tables: list[str]) -> int:
        while True:
            i = self.val_unit(i, tables)
            if self.at(i, "not"):
                i += 1
            op = self.tok(i)
            if op not in WHERE_OPS:
                raise EvaluatorGrammarError(f"condition operator {op!r}")
            i += 1
            if op == "between":
                i = self.value(i, tables)
                i = self.expect(i, "and")
            i = self.value(i, tables)
            if i < len(self.toks) and (
                self.toks[i] in CLAUSES or self.toks[i] in (")", ";") or self.toks[i] in JOINS
            ):
                return i
            if self.at(i, "and", "or"):
                i += 1
                continue
            return i

    def value(self, i: int, tables: list[str]) -> int:
        block = self.at(i, "(")
        if block:
            i += 1
        tok = self.tok(i)
        if tok == "select":
            i = self.query(i)
        elif tok.startswith('"'):
            i += 1
        elif re.fullmatch(r"-?\d+(?:\.\d+)?", tok):
            i += 1
        else:
            i = self.col_unit(i, tables)
        if block:
            i = self.expect(i, ")")
        return i


def evaluator_problem(sql: str, schema: Mapping[str, Collection[str]]) -> str | None:
    """Why the official Spider evaluator would stop on ``sql`` as a gold query, or None when
    it reads it. ``schema`` maps each table name to its column names, lower-case, as the
    evaluator reads them from the database file (:func:`spider_tables_of`)."""
    try:
        toks = _tokens(sql)
        _Parser(toks, schema).query(0)
    except EvaluatorGrammarError as exc:
        return str(exc)
    return None


def spider_tables_of(entry: Mapping[str, Any]) -> dict[str, set[str]]:
    """Table → column names (lower-case SQL identifiers) of a ``tables.json`` entry."""
    tables: dict[str, set[str]] = {
        evaluator_fold(str(t)): set() for t in entry["table_names_original"]
    }
    names = [evaluator_fold(str(t)) for t in entry["table_names_original"]]
    for t, column in entry["column_names_original"]:
        if int(t) >= 0:
            tables[names[int(t)]].add(evaluator_fold(str(column)))
    return tables


class _SpiderGenerator(SQLite.Generator):  # type: ignore[misc,valid-type]
    """SQLite as sqlglot writes it, with the evaluator's spellings of negation."""

    def neq_sql(self, expression: exp.NEQ) -> str:
        return self.binary(expression, "!=")

    def not_sql(self, expression: exp.Not) -> str:
        inner = expression.this
        if isinstance(inner, exp.In | exp.Between):
            text = self.sql(inner)
            left = self.sql(inner, "this")
            return f"{left} NOT {text[len(left) + 1 :]}"
        if isinstance(inner, exp.Is):
            return f"{self.sql(inner, 'this')} IS NOT {self.sql(inner, 'expression')}"
        return str(super().not_sql(expression))

    def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
        on = expression.args.get("on")
        plain = not expression.args.get("kind") and not expression.args.get("side")
        if plain and isinstance(on, exp.Boolean) and on.this is True:  # sqlglot's ON TRUE
            return f"{self.seg('JOIN')} {self.sql(expression, 'this')}"
        return str(super().join_sql(expression, join_op))


class _SpiderSQLite(SQLite):
    Generator = _SpiderGenerator


def spider_sql(tree: exp.Expr) -> str:
    """``tree`` written as SQLite in the evaluator's spellings: ``!=`` for ``<>``,
    ``x NOT IN (…)``/``x NOT BETWEEN …``/``x NOT LIKE …``/``x IS NOT NULL`` for ``NOT x …``,
    ``JOIN t`` for sqlglot's ``JOIN t ON TRUE``."""
    return str(tree.sql(dialect=_SpiderSQLite()))


def _branches(tree: exp.Expr) -> list[exp.Expr]:
    """The SELECTs of a chain of set operations (the query itself when it has none)."""
    if isinstance(tree, exp.SetOperation):
        return [*_branches(tree.this), *_branches(tree.expression)]
    return [tree]


def evaluator_form(sql: str, schema: Mapping[str, Collection[str]]) -> str | None:
    """An equivalent spelling of ``sql`` that the official evaluator reads, or None.

    Two things stop it on SQL that is otherwise in its grammar: its alias table is global,
    so ``T1`` naming ``Friend`` in one branch of an ``INTERSECT`` and ``Likes`` in the other
    resolves to one of them everywhere; and sqlglot's spellings (``<>``, ``NOT x IN``). Here
    each branch of a set operation gets aliases of its own (``T3``, ``T4``… where an earlier
    branch used ``T1``, ``T2``) and the query is written with :func:`spider_sql`; the result
    is returned only when the evaluator reads it."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None
    used: set[str] = set()
    for branch in _branches(tree):
        tables = [t for t in branch.find_all(exp.Table) if t.alias]
        names = [evaluator_fold(t.alias) for t in tables]
        if len(set(names)) != len(names):
            return None  # an alias defined twice in one branch: leave it alone
        renames: dict[str, str] = {}
        for table in tables:
            alias = table.alias
            if evaluator_fold(alias) in used:
                n = 1
                while f"t{n}" in used or f"t{n}" in names:
                    n += 1
                renames[evaluator_fold(alias)] = f"T{n}"
                table.set("alias", exp.TableAlias(this=exp.to_identifier(f"T{n}")))
                used.add(f"t{n}")
            used.add(evaluator_fold(alias))
        for column in branch.find_all(exp.Column):
            if column.table and evaluator_fold(column.table) in renames:
                column.set("table", exp.to_identifier(renames[evaluator_fold(column.table)]))
    text = spider_sql(tree)
    return text if evaluator_problem(text, schema) is None else None
