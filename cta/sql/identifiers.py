"""SQL identifiers: how SQLite compares and quotes them, and how a new one is made.

A Spider schema gives every column two names: the natural one a parser reads
(``column_names``: ``age in years``) and the SQL identifier the gold query and the database
use (``column_names_original``: ``age_in_years``). A column or table this project renames or
adds gets both: its natural name verbatim, and an identifier made by :func:`sql_identifier`
in the style of the schema's own identifiers (``snake_case``, ``PascalCase``…) that

* is *bare* — ASCII letters, digits and ``_``, never starting with a digit — so no parser
  built on Spider (nor the official evaluator, which reads a double-quoted name as a string)
  ever meets a quoted identifier with spaces; the one exception is a table whose own
  identifiers mostly hold spaces (BIRD's ``Free Meal Count (K-12)``, never Spider's), where
  the new identifier is spaced like theirs and quoted wherever SQL names it;
* is never a reserved word: neither an SQLite keyword nor a word of the Spider evaluator's
  grammar (clause words and the five aggregates — ``Avg``, ``Count``, ``Order`` would be read
  as syntax); such a name gets a trailing ``_`` (``order_``), the usual convention.

:func:`quote_identifier` writes any name so SQLite reads it back (bare when it can be);
:func:`quote_like` does the same in the quoting style of a name as a query wrote it
(BIRD's backticks).

Folding — when two spellings are one name. :func:`sqlite_fold` is *the* identifier fold:
SQLite's comparison key (ASCII letters case-folded, nothing else), used wherever a query is
bound or a schema searched. Two readers fold differently, and each has its own key here:

* :func:`evaluator_fold` — the official Spider evaluator lower-cases the whole query with
  Python's ``str.lower``. It differs from SQLite on non-ASCII letters: ``Año`` and ``AÑO``
  are two identifiers to SQLite and one to the evaluator (``İ`` even becomes two
  characters). Exact match and the evaluator-grammar check read names with it.
* :func:`name_key` — whether a *new* name collides with a name a table already has, for
  any reader: surrounding spaces dropped and ``str.casefold`` (``ß`` = ``ss``), coarser than
  both folds above, so a name no reader could tell apart from an existing one is refused.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Sequence

from cta.names import NameStyle, restyle, table_style

__all__ = [
    "EVALUATOR_KEYWORDS",
    "RESERVED_WORDS",
    "SQLITE_KEYWORDS",
    "identifier_style",
    "evaluator_fold",
    "is_bare_identifier",
    "name_key",
    "quote_identifier",
    "quote_like",
    "sql_identifier",
    "sqlite_fold",
]

# SQLite's keywords (https://sqlite.org/lang_keywords.html) plus TRUE/FALSE, which resolve
# to values rather than columns; a name among them is always quoted.
SQLITE_KEYWORDS = frozenset(
    """ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE
    BEGIN BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE
    CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE
    DEFERRED DELETE DESC DETACH DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE
    EXISTS EXPLAIN FAIL FILTER FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP
    GROUPS HAVING IF IGNORE IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD
    INTERSECT INTO IS ISNULL JOIN KEY LAST LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT
    NOTHING NOTNULL NULL NULLS OF OFFSET ON OR ORDER OTHERS OUTER OVER PARTITION PLAN PRAGMA
    PRECEDING PRIMARY QUERY RAISE RANGE RECURSIVE REFERENCES REGEXP REINDEX RELEASE RENAME
    REPLACE RESTRICT RETURNING RIGHT ROLLBACK ROW ROWS SAVEPOINT SELECT SET TABLE TEMP
    TEMPORARY THEN TIES TO TRANSACTION TRIGGER UNBOUNDED UNION UNIQUE UPDATE USING VACUUM
    VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH WITHOUT TRUE FALSE""".split()
)
EVALUATOR_KEYWORDS = frozenset(
    """SELECT FROM WHERE GROUP BY ORDER LIMIT HAVING INTERSECT UNION EXCEPT JOIN ON AS NOT
    BETWEEN IN LIKE IS EXISTS AND OR DESC ASC DISTINCT NONE MAX MIN COUNT SUM AVG""".split()
)
"""The words the Spider evaluator's SQL grammar reads as syntax (clauses, joins, operators,
order, and the five aggregates, which it recognises case-insensitively and without ``(``)."""
RESERVED_WORDS = SQLITE_KEYWORDS | EVALUATOR_KEYWORDS

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SYMBOL_WORDS = {"%": " percent ", "#": " number ", "&": " and ", "+": " plus ", "@": " at "}
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")


def sqlite_fold(name: str) -> str:
    """The comparison key SQLite uses for identifiers (ASCII letters case-folded only)."""
    return name.translate(_ASCII_LOWER)


def evaluator_fold(name: str) -> str:
    """The key the official Spider evaluator compares names (and whole queries) with:
    ``str.lower``, which also folds non-ASCII letters (unlike :func:`sqlite_fold`)."""
    return name.lower()


def name_key(name: str) -> str:
    """The key under which a new name collides with an existing one for any reader (a
    natural name or an identifier): stripped and ``str.casefold``-ed."""
    return name.strip().casefold()


def is_bare_identifier(name: str) -> bool:
    """Whether SQLite (and the Spider evaluator) read ``name`` unquoted as an identifier."""
    return _PLAIN_IDENTIFIER.fullmatch(name) is not None and name.upper() not in RESERVED_WORDS


def quote_identifier(name: str) -> str:
    """``name`` as an SQLite identifier: bare when it can be, else double-quoted."""
    if _PLAIN_IDENTIFIER.fullmatch(name) and name.upper() not in SQLITE_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_like(name: str, quote: str) -> str:
    """``name`` as an SQLite identifier in the quoting style ``quote`` of the text it goes
    into: bare when it can be (:func:`quote_identifier`), else in backticks when ``quote`` is
    `````, in brackets when it is ``[`` (and the name holds no ``]``), else double-quoted."""
    plain = quote_identifier(name)
    if plain == name:
        return name
    if quote == "`":
        return "`" + name.replace("`", "``") + "`"
    if quote == "[" and "]" not in name:
        return f"[{name}]"
    return plain


def identifier_style(identifiers: Sequence[str]) -> NameStyle:
    """The style of a schema's identifiers (:func:`~cta.names.table_style`), with a word
    joiner an identifier can hold: a space or hyphen becomes ``_`` — unless most of the
    identifiers hold spaces themselves (BIRD's ``Free Meal Count (K-12)``, ``County Code``),
    where a space is their own style and stays (see :func:`sql_identifier`)."""
    style = table_style(list(identifiers))
    spaced = 2 * sum(1 for name in identifiers if " " in name.strip()) > len(identifiers)
    if spaced:
        return dataclasses.replace(style, joiner=" ")
    if style.joiner in (" ", "-"):
        style = dataclasses.replace(style, joiner="_")
    capitalised = sum(1 for name in identifiers if name[:1].isupper())
    if style.joiner == "" and style.case == "camel" and 2 * capitalised > len(identifiers):
        style = dataclasses.replace(style, case="title")  # StuID, Fname → PascalCase
    return style


def _spaced_identifier(text: str, style: NameStyle) -> str:
    """Words joined by spaces as a spaced schema writes them (``Free Meal Count (K-12)``):
    letters, digits, brackets, ``-`` and ``%`` kept, other punctuation a word break; quoted
    wherever SQL names it. A single word stays bare, so it follows the bare rules."""
    text = re.sub(r"[^A-Za-z0-9()%\-]+", " ", text).strip() or "column"
    ident = restyle(text, style)
    if " " not in ident:
        return sql_identifier(ident, dataclasses.replace(style, joiner="_"))
    # a word written with capitals inside (``K-12``, ``SAT``) keeps them
    given = {w.lower(): w for w in text.split() if any(c.isupper() for c in w[1:])}
    return " ".join(given.get(w.lower(), w) for w in ident.split(" "))


def sql_identifier(natural: str, style: NameStyle) -> str:
    """An unreserved SQL identifier for the natural name ``natural``, written in ``style``
    (see :func:`identifier_style`): accents dropped, ``%``/``#``/``&`` spelled out, other
    punctuation a word break, ``col`` before a leading digit, ``_`` after a reserved word —
    bare, unless ``style`` joins words with spaces (a schema whose identifiers mostly hold
    spaces: there they are words joined by spaces, brackets and ``-`` kept). Deterministic;
    uniqueness within a table is the caller's check."""
    text = unicodedata.normalize("NFKD", natural).encode("ascii", "ignore").decode("ascii")
    text = text.replace("'", "")
    if style.joiner == " ":
        return _spaced_identifier(text, style)
    for symbol, word in _SYMBOL_WORDS.items():
        text = text.replace(symbol, word)
    # words as written (case kept, camelCase intact for restyle to split)
    words = [w for w in _NON_WORD.split(text) if w]
    if not words:
        words = ["column"]
    if words[0][0].isdigit():
        words.insert(0, "col")
    joiner = style.joiner if style.joiner in ("_", "") else "_"
    ident = restyle(" ".join(words), dataclasses.replace(style, joiner=joiner))
    if ident.upper() in RESERVED_WORDS:
        ident += "_"
    return ident
