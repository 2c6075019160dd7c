"""Judge supervision from the entity schemas (``data/entity-schemas``), a recipe knob.

Each schema says, for one kind of row, which headers name the same column and which columns
a table of it holds side by side; turned into pairs in the judge's own text format, with the
entity as context:

* ``schema-equivalent`` — a column's name ⇔ one of its same-meaning headers: **entailment**;
* ``schema-associated`` — two columns of one facet (each could be added beside the other):
  **neutral** (a human judgement of association, like the annotations' ``associated``).

A header that another column of the same entity could also take (a generic ``date`` beside
``death date``, or a header two columns share) is left out of the equivalent pairs: the
schemas' audit found such generic headers the commonest error. At most ``pairs`` pairs of each
relation, drawn with a seeded RNG; both directions of each pair (the judge scores e1 and e2).
Off unless a recipe names the schema file (``judge_train_entity_schemas``).
"""

from __future__ import annotations

import random
import re

from cta.entity_schemas import EntitySchema, EntitySchemas
from cta.training.relations import Example, LabelScheme, scheme_label
from cta.words import column_words, name_key

RELATIONS = {"schema-equivalent": "entailment", "schema-associated": "neutral"}


def _taken_elsewhere(schema: EntitySchema, column: int, header: str) -> bool:
    """Whether another column of ``schema`` could take ``header``: one of its headers, or a
    word run of one of them."""
    key = name_key(header)
    for j, other in enumerate(schema.columns):
        if j == column:
            continue
        for h in other.headers():
            other_key = name_key(h)
            if key == other_key or re.search(rf"(^| ){re.escape(key)}( |$)", other_key):
                return True
    return False


def schema_examples(
    schemas: EntitySchemas, pairs: int, scheme: LabelScheme, *, seed: int = 0
) -> list[Example]:
    """Up to ``pairs`` pairs of each relation, both directions, deterministic in ``seed``."""
    rng = random.Random(seed)
    found: dict[str, list[tuple[str, str, object, str, object]]] = {r: [] for r in RELATIONS}
    for schema in schemas:
        entity = schema.entity
        for i, column in enumerate(schema.columns):
            name = column_words(column.name)
            for header in column.equivalent:
                other = column_words(header)
                if other and other != name and not _taken_elsewhere(schema, i, header):
                    found["schema-equivalent"].append(
                        (entity, name, column.type, other, column.type)
                    )
            for later in schema.columns[i + 1 :]:
                if later.facet == column.facet:
                    other = column_words(later.name)
                    if other and other != name:
                        found["schema-associated"].append(
                            (entity, name, column.type, other, later.type)
                        )
    examples: list[Example] = []
    for relation, rows in found.items():
        rng.shuffle(rows)
        label = scheme_label(RELATIONS[relation], relation, scheme)  # type: ignore[arg-type]
        for entity, a, ta, b, tb in rows[:pairs]:
            examples.append(Example(entity, a, ta, b, tb, label, relation))  # type: ignore[arg-type]
            examples.append(Example(entity, b, tb, a, ta, label, relation))  # type: ignore[arg-type]
    rng.shuffle(examples)
    return examples
