"""Mentions of a schema's tables and columns in free text, renamed with them.

BIRD's ``evidence`` (and the descriptions beside a database) name columns the way a person
writing SQL hints does: by identifier — bare (``Currency = 'EUR'``), qualified
(``T1.Segment``), backticked (`` `Free Meal Count (K-12)` ``) or double-quoted — or by natural
name (``the event name``). When a perturbation renames a column or table, every such mention
must follow, or the text gives the old name away. :func:`rewrite_mentions` does that;
:func:`mentioned` lists what a text still names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cta.sql.identifiers import is_bare_identifier, sqlite_fold

__all__ = ["Rename", "mentioned", "rewrite_mentions"]


@dataclass(frozen=True)
class Rename:
    """A column (``table`` its table's original identifier) or a table (``table`` None)
    renamed: identifiers and natural names before and after."""

    old: str
    new: str
    old_natural: str
    new_natural: str
    table: str | None = None


# a single-quoted value (``= 'EUR'``, ``'Women's Soccer' is an event name``): BIRD's evidence
# quotes values so, never columns; an apostrophe inside a word (``Women's``) opens none
_VALUE = re.compile(r"(?<![\w'])'(?:[^'\n]|'')*'(?![\w])")
# ``T1.`` / ``yearmonth.`` / `` `frpm`. `` right before a name (a full stop and a space end a
# sentence instead)
_QUALIFIER = re.compile(r"(?:`([^`]+)`|\"([^\"]+)\"|([A-Za-z_][\w]*))\.$")


def _spaced(name: str) -> str:
    """A regular expression for a name whose words may be spaced any way."""
    return r"\s+".join(re.escape(w) for w in name.split())


def _word(pattern: str) -> str:
    return rf"(?<![\w`\"]){pattern}(?![\w`\"])"


def _quote(identifier: str) -> str:
    """An identifier as free text names it: bare when it can be, else backticked."""
    return identifier if is_bare_identifier(identifier) else f"`{identifier}`"


def _forms(renames: Sequence[Rename]) -> list[tuple[str, str, str, Rename]]:
    """(pattern, how it is matched, replacement kind, rename), longest pattern first."""
    forms = []
    for r in renames:
        if r.old != r.new:
            forms.append((rf"`{re.escape(r.old)}`", "quoted", "backtick", r))
            forms.append((rf"\"{re.escape(r.old)}\"", "quoted", "double", r))
            forms.append((_word(re.escape(r.old)), "identifier", "identifier", r))
        if r.old_natural.strip() and r.old_natural != r.new_natural:
            forms.append((_word(_spaced(r.old_natural)), "folded", "natural", r))
        elif r.old != r.new and r.old_natural.casefold() == r.old.casefold():
            # a natural name that is the identifier: prose may write it in any case
            forms.append((_word(re.escape(r.old)), "folded", "natural", r))
    forms.sort(key=lambda f: -len(f[3].old_natural if f[2] == "natural" else f[3].old))
    return forms


def _protected(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _VALUE.finditer(text)]


def rewrite_mentions(
    text: str, renames: Sequence[Rename], kept: Iterable[str] = (), tables: Iterable[str] = ()
) -> str:
    """``text`` (BIRD evidence, a description) with every mention of a renamed table or
    column renamed: a backticked or double-quoted identifier keeps its quotes, a bare one
    stays bare when the new identifier can (else it is backticked), a natural name becomes
    the new natural name. A qualified mention (``table.column``) is renamed only when the
    qualifier is the column's table or an alias (``T1``: a short word naming none of the
    database's ``tables``); quoted values (``= 'EUR'``) are never touched. ``kept``:
    identifiers of columns the text may also mean that were not renamed — a bare mention of
    such a name is ambiguous and left as it is."""
    if not text or not renames:
        return text
    keep = {sqlite_fold(k) for k in kept}
    protected = _protected(text)
    table_names = {sqlite_fold(t) for t in tables} | {
        sqlite_fold(r.table if r.table is not None else r.old) for r in renames
    }
    edits: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in [*protected, *taken])

    for pattern, _, replacement, rename in _forms(renames):
        for m in re.finditer(pattern, text, re.IGNORECASE):
            start, end = m.span()
            if not free(start, end):
                continue
            if replacement == "identifier":
                if not _qualifier_fits(text[:start], rename, table_names):
                    continue
                prose = rename.old.casefold() == rename.old_natural.casefold() or (
                    m.group(0) != rename.old
                )
                if prose and not _in_sql(text, start, end):
                    continue  # a word of prose: its natural name's (the next form)
                if rename.table is not None and sqlite_fold(rename.old) in keep:
                    if not _qualified(text[:start]):
                        continue
            if replacement == "backtick":
                new = f"`{rename.new}`"
            elif replacement == "double":
                new = f'"{rename.new}"'
            elif replacement == "identifier":
                new = _quote(rename.new)
            else:
                new = rename.new_natural
            edits.append((start, end, new))
            taken.append((start, end))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


_SQL_BEFORE = re.compile(r"(?:[(.,=<>+\-*/]|\brefers?\s+to)\s*$", re.IGNORECASE)
_SQL_AFTER = re.compile(r"^\s*(?:[=<>!()+\-*/]|(?:not\s+)?(?:in|like|between|is)\b)", re.IGNORECASE)


def _in_sql(text: str, start: int, end: int) -> bool:
    """Is the word at ``text[start:end]`` part of an SQL-like expression (``Currency =
    'EUR'``, ``AVG(Consumption)``, ``refers to Segment``) rather than prose?"""
    return bool(_SQL_BEFORE.search(text[:start]) or _SQL_AFTER.match(text[end:]))


def _qualified(before: str) -> bool:
    return _QUALIFIER.search(before) is not None


def _qualifier_fits(before: str, rename: Rename, table_names: set[str]) -> bool:
    """A bare identifier after ``q.``: the column's own table or an alias (``T1``), not
    another table of the schema."""
    m = _QUALIFIER.search(before)
    if m is None or rename.table is None:
        return True
    qualifier = sqlite_fold(next(g for g in m.groups() if g))
    if qualifier == sqlite_fold(rename.table):
        return True
    return qualifier not in table_names and len(qualifier) <= 3


def mentioned(text: str, renames: Sequence[Rename]) -> list[str]:
    """The old names of ``renames`` that ``text`` mentions (as :func:`rewrite_mentions`
    finds them, values left out): what a rewrite must leave none of."""
    protected = _protected(text)
    found = []
    for pattern, match_kind, _, _ in _forms(renames):
        flags = re.IGNORECASE if match_kind != "identifier" else 0
        for m in re.finditer(pattern, text, flags):
            if all(m.end() <= a or m.start() >= b for a, b in protected):
                found.append(m.group(0).strip('`"'))
                break
    return found
