"""Table context: names → entities, zero-shot primary-entity prediction, precedence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cta.context import (
    DEFAULT_ENTITY_HYPOTHESIS,
    ENTITY_CLASSES,
    predict_entity,
    primary_entity,
    table_premise,
)
from cta.table import Column, ColumnType, Table
from cta.words import singular_phrase, split_name


class KeywordModel:
    """Test double: entails a hypothesis exactly when its class word appears in the premise."""

    def __init__(self) -> None:
        self.calls = 0

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = []
        for p, h in zip(premises, hypotheses, strict=True):
            word = h.removeprefix("This table is about ").removesuffix(".")
            out.append(0.9 if word in p else 0.1)
        return np.array(out)


def flights() -> Table:
    return Table(
        columns=[
            Column(name="airport code", type=ColumnType.TEXT),
            Column(name="passengers", type=ColumnType.NUMBER),
        ],
        rows=[["JFK", 100], [None, 250], ["LHR", None]],
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("concert_singer", ["concert", "singer"]),
        ("BatterNumber", ["batter", "number"]),
        ("HTMLParser", ["html", "parser"]),
        ("  Sepal.Length ", ["sepal", "length"]),
    ],
)
def test_split_name(name: str, words: list[str]) -> None:
    assert split_name(name) == words


@pytest.mark.parametrize(
    ("name", "entity"),
    [
        ("singers", "singer"),
        ("Breeds", "breed"),
        ("Treatment_Types", "treatment type"),
        ("concert_singer", "concert singer"),
        ("cities", "city"),
        ("status", "status"),
        ("line 1", "line 1"),
        ("", ""),
    ],
)
def test_a_table_name_gives_its_entity(name: str, entity: str) -> None:
    assert singular_phrase(name) == entity


def test_entity_classes_are_48_distinct_few_nerd_types() -> None:
    assert len(ENTITY_CLASSES) == 48 == len(set(ENTITY_CLASSES))
    assert {
        "person",
        "organization",
        "location",
        "event",
        "product",
        "building",
        "art work",
    } <= set(ENTITY_CLASSES)


def test_table_premise_samples_one_value_per_column_deterministically() -> None:
    table = flights().model_copy(update={"caption": "Busiest airports"})
    text = table_premise(table, seed=3)
    assert text == table_premise(table, seed=3)
    assert text.startswith("Busiest airports. columns: airport code, passengers. values: ")
    values = text.split("values: ")[1].split(", ")
    assert values[0] in {"JFK", "LHR"} and values[1] in {"100", "250"}
    # Different seeds reach different cells (the sampling is real, not "first row").
    assert len({table_premise(table, seed=s) for s in range(20)}) > 1


def test_predict_entity_takes_the_most_entailed_class() -> None:
    assert predict_entity(flights(), KeywordModel()) == "airport"


def test_predict_entity_with_a_real_checkpoint_is_a_class_and_deterministic(tmp_path: Path) -> None:
    from test_judge import PERMUTED, tiny_checkpoint

    from cta.judge import HFEntailmentModel

    model = HFEntailmentModel(str(tiny_checkpoint(tmp_path / "tiny", PERMUTED)), device="cpu")
    first = predict_entity(flights(), model)
    assert first in ENTITY_CLASSES
    assert predict_entity(flights(), model) == first
    # Zero-shot softmax runs over the raw entailment logits of the 48 hypotheses.
    logits = model.entailment_logits(
        [table_premise(flights())] * 48,
        [DEFAULT_ENTITY_HYPOTHESIS.format(entity=c) for c in ENTITY_CLASSES],
    )
    assert first == ENTITY_CLASSES[int(np.argmax(logits))]


def test_primary_entity_precedence() -> None:
    model = KeywordModel()
    given = flights().model_copy(update={"primary_entity": "flight", "name": "airports"})
    assert primary_entity(given, model) == ("flight", "given")
    named = flights().model_copy(update={"name": "Airports"})
    assert primary_entity(named, model) == ("airport", "table-name")
    assert primary_entity(named, model, use_name=False) == ("airport", "predicted")
    assert primary_entity(flights(), model) == ("airport", "predicted")
    assert model.calls == 2  # only the two predictions touched the model
    with pytest.raises(ValueError, match="entailment model"):
        primary_entity(flights(), None)
    # A page title is not an entity: past max_name_words the entity is predicted.
    titled = flights().model_copy(update={"name": "List of the busiest airports in Europe"})
    assert primary_entity(titled, model, max_name_words=3) == ("airport", "predicted")
    assert primary_entity(named, model, max_name_words=1) == ("airport", "table-name")
    long_name = "list of the busiest airports in europe"
    assert primary_entity(titled, model) == (long_name, "table-name")  # no limit given
    assert primary_entity(titled, None, max_name_words=3) == (long_name, "table-name")
    # A name without a letter (a CSV file's stem) names no entity: predicted when a model is.
    numbered = flights().model_copy(update={"name": "204"})
    assert primary_entity(numbered, model) == ("airport", "predicted")
    assert primary_entity(numbered, model, max_name_words=3) == ("airport", "predicted")
    assert primary_entity(numbered, None) == ("204", "table-name")
