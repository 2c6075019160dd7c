"""The column-header thesaurus as a candidate source (``CTA_CANDIDATE_SOURCES=["thesaurus"]``).

``data/annotations/thesaurus.jsonl`` lists frequent column headers of real tables with the
names people use for the same column (``price`` → ``cost``, ``unit price``) and names of
associated, different columns (``price`` → ``discount``, ``quantity``). For a target column
whose name matches a header, the equivalent names are proposed as RPL candidates and the
associated ones as ADD candidates; the judge decides as for every other candidate.

A column matches a header through :func:`cta.words.name_key` (case, ``_``/``-``, camelCase
and spacing ignored), trying in turn the name itself, its last word singular or plural
(``authors`` → ``author``), and the name without the table's entity (``book title`` in a
table of books → ``title``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

from cta.annotations import ThesaurusEntry, load_thesaurus
from cta.components import ColumnContext, SourceProposal
from cta.names import name_type
from cta.registry import register
from cta.results import Candidate
from cta.settings import Settings
from cta.table import ColumnType
from cta.words import inflect, lemmas, name_key, singular

__all__ = ["ThesaurusSource", "name_variants", "other_sense"]


_OPTIONAL_PLURAL = re.compile(r"\((?:e?s)\)$")


@lru_cache(maxsize=50_000)
def _number_forms(word: str) -> tuple[str, ...]:
    """The singular and plural of a noun (``author`` ↔ ``authors``), the word itself excluded."""
    forms = [*lemmas(word, "NOUN"), *inflect(word, "NNS")]
    return tuple(dict.fromkeys(f.lower() for f in forms if f.lower() != word))


def name_variants(name: str, entity: str | None = None) -> Iterator[str]:
    """Keys a column name may be found under, best first: its :func:`name_key`, with the last
    word singular or plural (an optional plural ending dropped: ``driver(s)`` → ``driver``),
    and without the entity's words in front (``book title`` → ``title`` for the entity
    ``book``)."""
    key = name_key(name)
    if not key:
        return
    seen = {key}
    yield key
    # A plural written as an optional ending (``driver(s)``, ``episode(s)``) is the word.
    bare = _OPTIONAL_PLURAL.sub("", key)
    keys = [key] if bare == key or not bare else [bare]
    entity_words = name_key(entity).split() if entity else []
    words = keys[0].split()
    if entity_words and len(words) > len(entity_words):
        for n in (len(entity_words), 1):
            head = words[:n]
            if [singular(w) for w in head] == [singular(w) for w in entity_words[:n]]:
                keys.append(" ".join(words[n:]))
                break
    for base in keys:
        *front, last = base.split()
        forms = _number_forms(last) if last.isalpha() else ()
        for variant in (base, *(" ".join([*front, form]) for form in forms)):
            if variant not in seen:
                seen.add(variant)
                yield variant


class ThesaurusSource:
    """Equivalent (RPL) and associated (ADD) names of the thesaurus header a column matches
    (a :class:`cta.components.CandidateSource`)."""

    name = "thesaurus"

    def __init__(self, entries: Sequence[ThesaurusEntry]) -> None:
        self.entries = tuple(entries)
        self._by_key: dict[str, ThesaurusEntry] = {}
        for entry in self.entries:
            self._by_key.setdefault(name_key(entry.name), entry)

    def known_names(self) -> frozenset[str]:
        """Every header, equivalent and associated name (a :class:`cta.components.KnownNames`)."""
        return frozenset(
            name_key(n) for e in self.entries for n in (e.name, *e.equivalent, *e.associated)
        )

    def entry(self, name: str, entity: str | None = None) -> ThesaurusEntry | None:
        """The header ``name`` matches (see :func:`name_variants`), if any."""
        for key in name_variants(name, entity):
            found = self._by_key.get(key)
            if found is not None:
                return found
        return None

    def propose(self, context: ColumnContext) -> SourceProposal:
        """The matched header's equivalent names (typed like the column) and associated names
        (typed by their name, else by their own header, else text), in the thesaurus's order.

        ``score`` is the list order (1.0, 0.9, …); ``provenance`` names the header.
        """
        entry = self.entry(context.name, context.entity)
        if entry is None or other_sense(entry, context):
            return SourceProposal()
        provenance = f"thesaurus:{entry.name}"
        equivalent = [
            Candidate(
                name=name,
                type=context.type,
                score=_order_score(i),
                source="thesaurus",
                provenance=provenance,
            )
            for i, name in enumerate(entry.equivalent)
        ]
        associated = [
            Candidate(
                name=name,
                type=self._type_of(name),
                score=_order_score(i),
                source="thesaurus",
                provenance=provenance,
            )
            for i, name in enumerate(entry.associated)
        ]
        return SourceProposal(equivalent=equivalent, associated=associated)

    def same_meaning(self, a: str, b: str) -> bool:
        """Whether ``a`` can stand for the column ``b``: the header ``b`` matches (see
        :meth:`entry`) lists ``a`` among its equivalent names.

        One way only: a header's equivalents hold in that header's usual tables, so ``name``
        among the equivalents of ``club name`` says nothing of ``club name`` beside a
        player's ``name``."""
        entry = self.entry(b)
        if entry is None:
            return False
        keys_a = set(name_variants(a))
        return any(name_key(other) in keys_a for other in entry.equivalent)

    def _type_of(self, name: str) -> ColumnType:
        implied = name_type(name)
        if implied is not None:
            return implied
        own = self._by_key.get(name_key(name))
        return own.type if own is not None else ColumnType.TEXT


def other_sense(entry: ThesaurusEntry, context: ColumnContext) -> bool:
    """Whether the header's usual sense is not the column's in its linked table: the column
    aligns by its header with a schema column, none of whose headers the entry lists, and some
    of the entry's equivalent names are headers of the schema column that another column of
    the table, of the same type, aligns with (an employee's ``office`` aligns with the schema's
    ``location``; the thesaurus's ``office`` is a political office, ≡ ``position``, which the
    schema holds as ``job title``, a column of the table). Then neither its renames nor its
    associated names are the column's. Unlinked, or aligned only by word vectors: False."""
    link = context.link
    aligned = link.alignment.get(context.name) if link is not None else None
    if link is None or link.schema_ is None or aligned is None or aligned.via != "header":
        return False
    owners = [link.schema_.columns_named(name) for name in entry.equivalent]
    if any(aligned.column in found for found in owners):
        return False
    taken = {
        a.column
        for column, a in link.alignment.items()
        if column != context.name and a.type == aligned.type
    }
    return any(found & taken for found in owners)


def _order_score(i: int) -> float:
    return round(max(0.0, 1.0 - i / 10), 6)


@register("source", "thesaurus")
def _thesaurus_source(settings: Settings) -> ThesaurusSource:
    return ThesaurusSource(load_thesaurus(settings.resolved_annotations_dir()))
