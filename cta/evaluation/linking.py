"""Lexical schema linking: which tables and columns a question names, by string match.

This is the string-match linker of RAT-SQL-style parsers (Wang et al., 2020): question
n-grams are matched against the natural names of the schema (``column_names`` /
``table_names`` — what a parser sees), both sides lower-cased and lemmatised:

- ``exact``: the whole name occurs in the question (``singer name`` in "each singer name");
- ``fuzzy``: it occurs with near-identical words (similarity ≥ 0.8 on words of at least four
  letters: typos, spelling variants — ``colour``/``color``);
- ``partial``: a content word of the name occurs in the question (``name`` for ``song name``).

RPL renames break exact links (the question still says ``name`` while the column is now
``designation``); ADD columns attract links that belong to the original column. The probe
(``cta eval --model lexical-probe``) scores those links against the columns the gold SQL mentions —
the model-free part of ADVETA's schema-linking analysis (paper Table 4).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Literal

from cta.formats.spider_schema import SpiderSchema
from cta.words import lemma_words

__all__ = ["LinkCounts", "SchemaLinks", "link_schema", "name_lemmas"]

Strength = Literal["exact", "fuzzy", "partial"]
RANK: dict[str, int] = {"exact": 3, "fuzzy": 2, "partial": 1}
FUZZY_RATIO = 0.8
# Function words and question words a partial match must not rest on.
STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or not no is are was were be been
    has have had do does did what which who whom whose when where why how many much
    all any each every some than that this these those there their its it as per
    give list show find return tell me number count""".split()
)


@lru_cache(maxsize=200_000)
def name_lemmas(name: str) -> tuple[str, ...]:
    """The lemmas of a schema name, kept (names are linked against every question)."""
    return tuple(lemma_words(name))


@lru_cache(maxsize=200_000)
def _similar(a: str, b: str) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < 4:
        return False
    return SequenceMatcher(None, a, b).ratio() >= FUZZY_RATIO


def _match(question: Sequence[str], name: Sequence[str]) -> tuple[Strength, tuple[int, int]] | None:
    """The strongest match of ``name`` in ``question`` and the question span it covers."""
    n = len(name)
    if n == 0:
        return None
    fuzzy: tuple[int, int] | None = None
    for i in range(len(question) - n + 1):
        window = question[i : i + n]
        if tuple(window) == tuple(name):
            return "exact", (i, i + n)
        if fuzzy is None and all(_similar(a, b) for a, b in zip(window, name, strict=True)):
            fuzzy = (i, i + n)
    if fuzzy is not None:
        return "fuzzy", fuzzy
    for i, word in enumerate(question):
        if word not in STOPWORDS and word in name:
            return "partial", (i, i + 1)
    return None


@dataclass
class SchemaLinks:
    """Links of one question: element index → strength, and the question spans matched."""

    columns: dict[int, Strength] = field(default_factory=dict)
    tables: dict[int, Strength] = field(default_factory=dict)
    column_spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    table_spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    question: tuple[str, ...] = ()

    def column_score(self, index: int) -> int:
        """3 exact, 2 fuzzy, 1 partial, 0 not linked."""
        strength = self.columns.get(index)
        return RANK[strength] if strength else 0

    def table_score(self, index: int) -> int:
        strength = self.tables.get(index)
        return RANK[strength] if strength else 0


def link_schema(question: str, schema: SpiderSchema) -> SchemaLinks:
    """Link ``question`` to the tables and columns of ``schema`` (``*`` never linked)."""
    q = tuple(lemma_words(question))
    links = SchemaLinks(question=q)
    for i, column in enumerate(schema.columns):
        if column.table < 0:
            continue
        found = _match(q, name_lemmas(column.name))
        if found is not None:
            links.columns[i], links.column_spans[i] = found
    for t, name in enumerate(schema.table_names):
        found = _match(q, name_lemmas(name))
        if found is not None:
            links.tables[t], links.table_spans[t] = found
    return links


@dataclass
class LinkCounts:
    """Micro-averaged linking counts over questions: gold columns found, links made."""

    gold: int = 0
    linked: int = 0
    hit: int = 0
    hit_strong: int = 0  # gold columns linked exactly or fuzzily
    questions: int = 0

    def add(self, gold: Iterable[str], linked: Mapping[str, str]) -> None:
        """Count one question: the gold SQL's columns and the linked ones (key → strength)."""
        gold_set = set(gold)
        strong = {c for c, s in linked.items() if s != "partial"}
        self.gold += len(gold_set)
        self.linked += len(linked)
        self.hit += len(gold_set & set(linked))
        self.hit_strong += len(gold_set & strong)
        self.questions += 1

    def metrics(self) -> dict[str, float | None]:
        def share(a: int, b: int) -> float | None:
            return round(a / b, 4) if b else None

        return {
            "linking_recall": share(self.hit, self.gold),
            "linking_precision": share(self.hit, self.linked),
            "exact_linking_recall": share(self.hit_strong, self.gold),
        }
