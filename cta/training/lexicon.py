"""The lexicon of the judge's supervision: WordNet relations of column words, filtered to
reasonably common English words (:class:`Lexicon`), and the word classes it reads them with."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from cta.wordnet import WordNet
from cta.words import ABBREVIATIONS, abbreviates, inflect, inflections, word_zipf

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset

STOP_WORDS = frozenset({"of", "the", "a", "an", "and", "or", "in", "on", "at", "by", "for", "to"})
# Heads that name the same thing in a column (song name ≈ song title): never "neutral" swaps.
EQUIVALENT_HEADS: tuple[frozenset[str], ...] = (
    frozenset({"name", "title"}),
    # Key columns: "airport code" vs "airport number" may well be the same key.
    frozenset({"id", "identifier", "code", "number", "no", "num"}),
)


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


def contains_words(phrase: str, part: str) -> bool:
    """``part`` occurs in ``phrase`` as whole words."""
    return f" {part} " in f" {phrase} "


def same_head(a: str, b: str) -> bool:
    """Two column heads that name the same thing (``name``/``title``, ``id``/``identifier``)."""
    return a == b or any(a in group and b in group for group in EQUIVALENT_HEADS)


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
        if word.isdigit() or word in STOP_WORDS or word in self._short_forms:
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
        return word in STOP_WORDS or any(s.pos() in "nas" for s in self.synsets(word))

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
                if contains_words(text, segment) or contains_words(segment, text):
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
