"""Word-level dictionary replacement (METHOD.md §3.3): RPL candidates from WordNet synonyms.

Each word of the target column name is replaced by a WordNet synonym (lemmas of its
synsets, the word itself excluded), or kept with probability ``dictionary_keep_prob``;
names are sampled until ``dictionary_max_candidates`` new ones or
``dictionary_max_repeats`` consecutive repeats (a sampled name already seen, or the
original). The random stream is derived from ``(seed, column)`` with SHA-256, so the same
input gives the same candidates in every process.

What is never replaced (kept as written): tokens shorter than 3 characters (``id``,
``no``, single letters), tokens with digits, identifier words (``ids``, ``uuid`` …) and
acronyms (an all-capitals token in a name that has lowercase letters, e.g. ``GDP``).

Which synsets: the last word of a name is its head noun, so its noun synsets are used;
earlier words are modifiers, so noun and adjective synsets are used. A word without such
synsets falls back to every part of speech. Inflection is preserved with ``lemminflect``
(``names`` → ``appellations``; a verb form keeps its tense). Multi-word lemmas are split
into words (``given_name`` → ``given name``) and joined in the column's own style
(``first_name`` → ``given_name``, ``firstName`` → ``givenName``, ``First Name`` →
``Given Name``). Synonyms containing digits, or a word rarer than ``dictionary_min_zipf``
(``wordfreq`` Zipf frequency, which also drops misspellings and archaic forms), are
dropped; the words kept from the original name are not checked.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from cta.registry import register
from cta.results import Candidate
from cta.settings import Settings
from cta.wordnet import load_wordnet

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

__all__ = ["WordNetReplacer", "name_words", "word_spans"]

_MIN_REPLACEABLE_LENGTH = 3
_IDENTIFIER_WORDS = frozenset({"ids", "uid", "uuid", "guid"})
# WordNet part of speech → lemminflect tags of its inflected forms.
_INFLECTION_TAGS: dict[str, tuple[str, ...]] = {
    "n": ("NNS",),
    "v": ("VBZ", "VBD", "VBN", "VBG"),
    "a": ("JJR", "JJS"),
    "s": ("JJR", "JJS"),
    "r": ("RBR", "RBS"),
}
_HEAD_POS = ("n",)
_MODIFIER_POS = ("n", "a", "s")
_ALL_POS = ("n", "v", "a", "s", "r")
_ALNUM_RUN = re.compile(r"[^\W_]+")
_LETTERS_OR_DIGITS = re.compile(r"\d+|[^\W\d_]+")


def _camel_parts(run: str) -> list[tuple[int, int]]:
    """Spans of camelCase parts of a run of letters (``"HTTPServer"`` → HTTP, Server)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(run)):
        prev, cur = run[i - 1], run[i]
        nxt = run[i + 1] if i + 1 < len(run) else ""
        if (prev.islower() and cur.isupper()) or (
            prev.isupper() and cur.isupper() and nxt.islower()
        ):
            spans.append((start, i))
            start = i
    spans.append((start, len(run)))
    return spans


def word_spans(name: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each word of a column name, split on separators and camelCase.

    Anything that is not a letter or digit separates words (space, ``_``, ``-``,
    punctuation); runs of letters split at camelCase and letter/digit boundaries.
    """
    spans: list[tuple[int, int]] = []
    for run in _ALNUM_RUN.finditer(name):
        for piece in _LETTERS_OR_DIGITS.finditer(run.group()):
            offset = run.start() + piece.start()
            text = piece.group()
            if text[0].isdigit():
                spans.append((offset, offset + len(text)))
            else:
                spans.extend((offset + a, offset + b) for a, b in _camel_parts(text))
    return spans


def name_words(name: str) -> list[str]:
    """Lowercase words of a column name: ``"firstName"``, ``"first_name"`` → ``["first", "name"]``."""
    return [name[a:b].lower() for a, b in word_spans(name)]


@lru_cache(maxsize=200_000)
def word_zipf(word: str) -> float:
    """wordfreq Zipf frequency of an English word (0 for unknown words)."""
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


def is_natural_name(name: str, min_zipf: float) -> bool:
    """Every word of ``name`` is a common English word: no lone letters or numbers, no rare
    or misspelt words (``"E nitens"``, ``"date1"`` are not; ``"list price"`` is)."""
    words = name_words(name)
    return bool(words) and all(
        len(w) > 1 and not w.isdigit() and word_zipf(w) >= min_zipf for w in words
    )


def humanise(name: str) -> str:
    """A code-style header written as words: ``"SalePrice"``, ``"sale_price"`` → ``"sale
    price"``. Names already written with spaces, and one-word names, are kept as they are."""
    stripped = name.strip()
    if not stripped or any(ch.isspace() for ch in stripped):
        return name
    words = name_words(stripped)
    return " ".join(words) if len(words) > 1 else name


def _stable_rng(seed: int, column: str) -> random.Random:
    """A random stream that depends only on ``(seed, column)`` (never on ``hash()``)."""
    digest = hashlib.sha256(f"{seed}\x1f{column}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class WordNetReplacer:
    """Dictionary replacer over WordNet (a :class:`cta.components.DictionaryReplacer`)."""

    def __init__(self, wordnet: WordNetCorpusReader, settings: Settings) -> None:
        self.wordnet = wordnet
        self.keep_prob = settings.dictionary_keep_prob
        self.max_candidates = settings.dictionary_max_candidates
        self.max_repeats = settings.dictionary_max_repeats
        self.min_zipf = settings.dictionary_min_zipf
        self._synonyms = lru_cache(maxsize=50_000)(self._compute_synonyms)

    # -- synonyms of one word -------------------------------------------------------------------
    def synonyms(self, word: str, head: bool = True) -> tuple[str, ...]:
        """Replacements for one lowercase word, inflected like it, rare ones dropped.

        ``head``: the word is the head noun of the name (noun synsets) rather than a
        modifier (noun and adjective synsets); a word with none of those falls back to
        every part of speech. Multi-word synonyms use spaces.
        """
        return self._synonyms(word.lower(), head)

    def _compute_synonyms(self, word: str, head: bool) -> tuple[str, ...]:
        for pos_group in (_HEAD_POS if head else _MODIFIER_POS, _ALL_POS):
            found = self._synonyms_for(word, pos_group)
            if found:
                return found
        return ()

    def _synonyms_for(self, word: str, pos_group: Sequence[str]) -> tuple[str, ...]:
        out: dict[str, None] = {}
        for pos in pos_group:
            for synset in self.wordnet.synsets(word, pos):
                # Named entities (instances: Leontyne Price for "price") are no synonyms.
                if synset.instance_hypernyms():
                    continue
                lemmas = [name.lower() for name in synset.lemma_names()]
                matched = self._matched_lemma(word, pos, lemmas)
                if matched is None:
                    continue
                base, tag = matched
                for lemma in lemmas:
                    if _letters(lemma) in {_letters(word), _letters(base)}:
                        continue
                    synonym = self._inflected(lemma.split("_"), pos, tag)
                    if synonym is not None:
                        out.setdefault(" ".join(synonym), None)
        return tuple(out)

    @staticmethod
    def _matched_lemma(word: str, pos: str, lemmas: Sequence[str]) -> tuple[str, str | None] | None:
        """The synset's lemma the word is a form of, and the inflection tag (None: as is).

        ``None`` when the inflection cannot be told (then no synonym could keep it).
        """
        from lemminflect import getInflection

        if word in lemmas:
            return word, None
        for lemma in lemmas:
            for tag in _INFLECTION_TAGS[pos]:
                if word in getInflection(lemma, tag):
                    return lemma, tag
        return None

    def _inflected(self, words: list[str], pos: str, tag: str | None) -> list[str] | None:
        """``words`` with the inflection applied, or ``None`` if impossible, numeric or rare."""
        from lemminflect import getInflection

        if any(ch.isdigit() for w in words for ch in w):
            return None
        if tag is not None:
            # English inflects a noun phrase's last word, a phrasal verb's first.
            at = 0 if pos == "v" else len(words) - 1
            forms = getInflection(words[at], tag)
            if not forms:
                return None
            words = [*words[:at], forms[0], *words[at + 1 :]]
        if all(word_zipf(w) >= self.min_zipf for w in words):
            return words
        return None

    # -- sampling ------------------------------------------------------------------------------
    def candidates(self, column: str, seed: int) -> list[Candidate]:
        """Sampled RPL names for ``column``, in the order found (score 1.0, then descending).

        The score is ``1 - i / dictionary_max_candidates`` for the ``i``-th new name: the
        dictionary gives no similarity, only a sampling order. ``provenance`` lists the
        replaced words, e.g. ``"name→appellation"``.
        """
        spans = word_spans(column)
        tokens = [column[a:b] for a, b in spans]
        gaps = [column[: spans[0][0]] if spans else column]
        gaps += [column[spans[i][1] : spans[i + 1][0]] for i in range(len(spans) - 1)]
        gaps.append(column[spans[-1][1] :] if spans else "")
        joiner = _joiner(column, gaps[1:-1])
        has_lower = any(ch.islower() for ch in column)
        alphabetic = [i for i, t in enumerate(tokens) if t.isalpha()]
        head = alphabetic[-1] if alphabetic else -1

        choices: dict[int, list[str]] = {}
        for i, token in enumerate(tokens):
            if not _replaceable(token, has_lower):
                continue
            options = [
                _render(s.split(" "), token, joiner, first=i == 0)
                for s in self.synonyms(token, head=i == head)
            ]
            if options:
                choices[i] = options
        if not choices:
            return []

        rng = _stable_rng(seed, column)
        seen: set[str] = set()
        found: list[Candidate] = []
        repeats = 0
        while len(found) < self.max_candidates and repeats < self.max_repeats:
            new_tokens = list(tokens)
            for i in sorted(choices):
                if rng.random() >= self.keep_prob:
                    new_tokens[i] = rng.choice(choices[i])
            name = "".join(g + t for g, t in zip(gaps, [*new_tokens, ""], strict=True))
            if name == column or name in seen:
                repeats += 1
                continue
            repeats = 0
            seen.add(name)
            replaced = [
                f"{old}→{new}" for old, new in zip(tokens, new_tokens, strict=True) if old != new
            ]
            found.append(
                Candidate(
                    name=name,
                    score=1.0 - len(found) / self.max_candidates,
                    source="dictionary",
                    provenance=", ".join(replaced),
                )
            )
        return found


def _letters(text: str) -> str:
    """Only the letters, lowercase: ``"e-mail"`` and ``"email"`` compare equal."""
    return "".join(ch for ch in text.lower() if ch.isalpha())


def _replaceable(token: str, name_has_lower: bool) -> bool:
    if len(token) < _MIN_REPLACEABLE_LENGTH or not token.isalpha():
        return False
    if token.lower() in _IDENTIFIER_WORDS:
        return False
    # An all-capitals token among lowercase words is an acronym (GDP, SSN): keep it.
    return not (name_has_lower and token.isupper())


def _joiner(column: str, inner_gaps: Sequence[str]) -> str:
    """How the column joins its words: its first separator, "" for camelCase, else " "."""
    for gap in inner_gaps:
        stripped = gap.strip()
        if gap and (not stripped or stripped in {"_", "-"}):
            return stripped or " "
    if any(a.islower() and b.isupper() for a, b in zip(column, column[1:], strict=False)):
        return ""
    return " "


def _render(words: list[str], original: str, joiner: str, first: bool) -> str:
    """A (multi-word) synonym in the case and word-joining style of the token it replaces."""
    if len(original) > 1 and original.isupper():
        cased = [w.upper() for w in words]
    elif original[0].isupper():
        cased = [w[:1].upper() + w[1:] for w in words]
    elif joiner == "":
        # camelCase: inner words are capitalised; the name's first word stays lowercase.
        cased = [w if j == 0 and first else w[:1].upper() + w[1:] for j, w in enumerate(words)]
    else:
        cased = words
    return joiner.join(cased)


@register("lexicon", "wordnet")
def _wordnet_replacer(settings: Settings) -> WordNetReplacer:
    return WordNetReplacer(load_wordnet(settings), settings)
