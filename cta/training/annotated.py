"""Judge supervision from the annotated columns and the thesaurus (``data/annotations``).

Human judgements are the closest thing to the decisions the judge makes, so they are turned
into training pairs in the judge's own text format (``"{entity} {column} ({type})"``):

* ``annotated-equivalent`` — a target column ⇔ a name annotated *equivalent* in that table:
  **entailment**;
* ``annotated-associated`` — a target column ⇔ a name annotated *associated* (an ADD):
  **neutral**;
* ``annotated-neither`` — a target column ⇔ a name annotated *neither* (wrong sense, broader
  or narrower, corpus junk): **contradiction** under the default three-way label scheme
  (:func:`~cta.training.relations.scheme_label`; **neutral** under ``two-way``); these are
  the realistic hard negatives, subsampled to ``neither_ratio`` × the equivalent and
  associated pairs;
* ``annotated-co-occurring`` — two columns of the same annotated table: **neutral**;
* ``thesaurus-equivalent`` / ``thesaurus-associated`` — a frequent header ⇔ one of its
  equivalent (**entailment**) or associated (**neutral**) names, without a table, so with no
  entity in the premise.

The premise context is the annotated primary entity, the singularised table name (what the
product uses when a table comes without an entity) or, with ``context="both"``, one of the
two drawn per pair. Pairs are emitted in both directions (the judge scores e1 and e2) or in
one random direction. Only ``split="train"`` tables are ever used: the ``dev`` split is
evaluation data. Seeded; iterates in file order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cta.annotations import AnnotatedTable, ThesaurusEntry
from cta.table import ColumnType
from cta.training.relations import Example, Label, LabelScheme, scheme_label, unordered
from cta.words import column_words, singular_phrase

EntityContext = Literal["annotated", "table-name", "both"]

# Relation → label under the two-way scheme (AnnotationRecipe.label applies the recipe's).
ANNOTATION_RELATIONS: dict[str, Label] = {
    "annotated-equivalent": "entailment",
    "annotated-associated": "neutral",
    "annotated-neither": "neutral",
    "annotated-co-occurring": "neutral",
    "thesaurus-equivalent": "entailment",
    "thesaurus-associated": "neutral",
}


@dataclass(frozen=True)
class AnnotationRecipe:
    """How the annotations become training pairs (every knob is a setting, see train_judge)."""

    neither_ratio: float = 1.0
    co_occurring_ratio: float = 0.25
    context: EntityContext = "both"
    both_directions: bool = True
    thesaurus: bool = True
    repeats: int = 1
    scheme: LabelScheme = "three-way"

    def label(self, relation: str) -> Label:
        """The training label of an annotation relation under this recipe's label scheme."""
        return scheme_label(ANNOTATION_RELATIONS[relation], relation, self.scheme)


def annotation_examples(
    tables: Sequence[AnnotatedTable],
    thesaurus: Sequence[ThesaurusEntry],
    recipe: AnnotationRecipe,
    *,
    seed: int = 0,
) -> list[Example]:
    """Training pairs from the ``train`` tables and the thesaurus, deterministic in ``seed``.

    A text pair that received two labels in the same context is dropped (annotators
    disagreed across passes); ``repeats`` copies the result (weighting against the lexical
    supervision).
    """
    if recipe.neither_ratio < 0 or recipe.co_occurring_ratio < 0 or recipe.repeats < 1:
        raise ValueError("annotation ratios must be ≥ 0 and repeats ≥ 1")
    rng = random.Random(seed)
    pairs: list[tuple[str | None, str, ColumnType, str, ColumnType, str]] = []
    neither: list[tuple[str | None, str, ColumnType, str, ColumnType, str]] = []
    co_occurring: list[tuple[str | None, str, ColumnType, str, ColumnType, str]] = []
    for table in tables:
        if table.split != "train":
            continue
        contexts = _contexts(table, recipe.context)
        names = [column_words(c.name) for c in table.columns]
        for target, annotation in table.targets.items():
            type_ = table.column_type(target)
            column = column_words(target)
            for relation, judged in (
                ("annotated-equivalent", annotation.equivalent),
                ("annotated-associated", annotation.associated),
                ("annotated-neither", annotation.neither),
            ):
                for name in judged:
                    other = column_words(name)
                    if not other or other == column:
                        continue
                    row = (rng.choice(contexts), column, type_, other, type_, relation)
                    (neither if relation == "annotated-neither" else pairs).append(row)
        types = {column_words(c.name): c.type for c in table.columns}
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if a and b and a != b:
                    row = (rng.choice(contexts), a, types[a], b, types[b], "annotated-co-occurring")
                    co_occurring.append(row)
    judged_count = len(pairs)
    rng.shuffle(neither)
    pairs.extend(neither[: round(recipe.neither_ratio * judged_count)])
    rng.shuffle(co_occurring)
    pairs.extend(co_occurring[: round(recipe.co_occurring_ratio * judged_count)])
    if recipe.thesaurus:
        for entry in thesaurus:
            header = column_words(entry.name)
            for relation, related in (
                ("thesaurus-equivalent", entry.equivalent),
                ("thesaurus-associated", entry.associated),
            ):
                for name in related:
                    other = column_words(name)
                    if other and other != header:
                        pairs.append((None, header, entry.type, other, entry.type, relation))

    labels: dict[tuple[str | None, str, str], set[Label]] = {}
    for entity, a, _, b, _, relation in pairs:
        labels.setdefault(unordered(entity, a, b), set()).add(recipe.label(relation))
    examples: list[Example] = []
    seen: set[tuple[str | None, str, str]] = set()
    for entity, a, ta, b, tb, relation in pairs:
        key = unordered(entity, a, b)
        if len(labels[key]) > 1 or key in seen:
            continue
        seen.add(key)
        label = recipe.label(relation)
        directions = [(a, ta, b, tb), (b, tb, a, ta)]
        if not recipe.both_directions:
            directions = [directions[rng.random() < 0.5]]
        for p, tp, h, th in directions:
            examples.append(Example(entity, p, tp, h, th, label, relation))
    examples = examples * recipe.repeats
    rng.shuffle(examples)
    return examples


def annotated_text_labels(examples: Sequence[Example]) -> dict[tuple[str, str], Label]:
    """Each annotated column pair (any context, unordered) with its label, ambiguous ones left out.

    Lexical supervision that contradicts a human judgement (a WordNet synonym of the wrong
    sense taught as entailment, say) is dropped against this map.
    """
    seen: dict[tuple[str, str], set[Label]] = {}
    for e in examples:
        a, b = sorted((e.premise, e.hypothesis))
        seen.setdefault((a, b), set()).add(e.label)
    return {key: next(iter(v)) for key, v in seen.items() if len(v) == 1}


def _contexts(table: AnnotatedTable, context: EntityContext) -> list[str | None]:
    annotated = table.entity.strip().lower() or None
    named = singular_phrase(table.name) if table.name.strip() else None
    if context == "annotated":
        return [annotated]
    if context == "table-name":
        return [named or annotated]
    return sorted({annotated, named or annotated}, key=lambda x: x or "")
