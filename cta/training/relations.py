"""The relations of the judge's lexical supervision, their labels and the example they make.

Each relation (:data:`RELATIONS`) is a way two column names relate — the same column written
another way (entailment), two columns that belong in one table (neutral), opposites
(contradiction) — or a table's text and an entity class (the zero-shot entity examples). A
label scheme (:func:`scheme_label`) maps them to the judge's classes; :data:`DEFAULT_MIX` shares
the examples among them. :mod:`cta.training.supervision` generates the pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cta.judge.nli import render
from cta.table import ColumnType

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
VERBATIM_RELATIONS = frozenset({"topic", "off-topic"})

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
        if self.relation in VERBATIM_RELATIONS:
            return self.premise, self.hypothesis
        return (
            render(template, self.entity, self.premise, self.premise_type.value),
            render(template, self.entity, self.hypothesis, self.hypothesis_type.value),
        )


def unordered(entity: str | None, a: str, b: str) -> tuple[str | None, str, str]:
    """The key of a symmetric pair: the same for (a, b) and (b, a) in one context."""
    return (entity, a, b) if a <= b else (entity, b, a)
