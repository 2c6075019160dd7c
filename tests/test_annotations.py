"""The annotations loader and the judge supervision built from it."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from annotations_fixture import TINY_TABLES, TINY_THESAURUS, write_tiny_annotations

from cta.annotations import (
    AnnotationsError,
    load_annotated_tables,
    load_thesaurus,
)
from cta.settings import Settings
from cta.table import ColumnType
from cta.training.annotated import (
    ANNOTATION_RELATIONS,
    AnnotationRecipe,
    annotated_text_labels,
    annotation_examples,
)
from cta.words import column_words

REPO_ANNOTATIONS = Settings().resolved_annotations_dir()


def test_loader_reads_the_shipped_files_with_the_readme_counts() -> None:
    tables = load_annotated_tables(REPO_ANNOTATIONS)
    readme = (REPO_ANNOTATIONS / "README.md").read_text()
    assert f"{len(tables)} tables" in readme
    dev = load_annotated_tables(REPO_ANNOTATIONS, "dev")
    assert f"dev: {len(dev)} tables" in readme
    assert {t.split for t in dev} == {"dev"} and len(dev) < len(tables)
    thesaurus = load_thesaurus(REPO_ANNOTATIONS)
    assert f"{len(thesaurus):,} column headers" in readme
    totals = Counter()
    for table in tables:
        assert table.targets, table.id
        for annotation in table.targets.values():
            totals["equivalent"] += len(annotation.equivalent)
            totals["associated"] += len(annotation.associated)
            totals["neither"] += len(annotation.neither)
    for kind, count in totals.items():
        assert f"{count:,} {kind}" in readme
    assert all(isinstance(e.type, ColumnType) for e in thesaurus)


def test_loader_names_file_and_line_of_bad_rows(tmp_path: Path) -> None:
    directory = write_tiny_annotations(tmp_path / "a")
    with (directory / "tables.jsonl").open("a") as handle:
        handle.write("{not json\n")
    with pytest.raises(AnnotationsError, match=r"tables.jsonl:4: not JSON"):
        load_annotated_tables(directory)
    with pytest.raises(AnnotationsError, match="not found"):
        load_thesaurus(tmp_path / "missing")


def test_examples_label_every_human_judgement_and_never_use_dev(tmp_path: Path) -> None:
    directory = write_tiny_annotations(tmp_path / "a")
    tables = load_annotated_tables(directory)
    recipe = AnnotationRecipe(neither_ratio=10.0, co_occurring_ratio=10.0, context="annotated")
    examples = annotation_examples(tables, load_thesaurus(directory), recipe, seed=0)
    assert examples
    for e in examples:
        assert e.label == recipe.label(e.relation)
    # three-way: associated → neutral, neither → the third class; two-way keeps both neutral
    by_relation = {e.relation: e.label for e in examples}
    assert by_relation["annotated-associated"] == "neutral"
    assert by_relation["annotated-neither"] == "contradiction"
    two_way = annotation_examples(
        tables, load_thesaurus(directory), replace(recipe, scheme="two-way"), seed=0
    )
    assert {e.label for e in two_way if e.relation == "annotated-neither"} == {"neutral"}
    assert all(e.label == ANNOTATION_RELATIONS[e.relation] for e in two_way)
    pairs = {(e.premise, e.hypothesis, e.label) for e in examples}
    # every judged name of the train tables, in both directions, with its label
    expected = 0
    for table in TINY_TABLES:
        if table["split"] != "train":
            continue
        for target, annotation in table["targets"].items():  # type: ignore[attr-defined]
            for kind, label in (
                ("equivalent", "entailment"),
                ("associated", "neutral"),
                ("neither", "contradiction"),
            ):
                for name in annotation[kind]:
                    a, b = column_words(target), column_words(name)
                    assert (a, b, label) in pairs and (b, a, label) in pairs
                    expected += 1
    assert expected > 0
    dev_words = {column_words(n) for n in ("location", "stage", "locale", "venue")}
    assert not any(e.premise in dev_words or e.hypothesis in dev_words for e in examples)
    assert {e.entity for e in examples if e.relation.startswith("annotated")} == {"novel", "singer"}
    thesaurus = [e for e in examples if e.relation.startswith("thesaurus")]
    assert thesaurus and all(e.entity is None for e in thesaurus)
    assert len(thesaurus) == 2 * sum(
        len(t["equivalent"]) + len(t["associated"]) for t in TINY_THESAURUS  # type: ignore[arg-type]
    )


def test_recipe_knobs_change_the_examples(tmp_path: Path) -> None:
    directory = write_tiny_annotations(tmp_path / "a")
    tables = load_annotated_tables(directory)
    thesaurus = load_thesaurus(directory)
    base = AnnotationRecipe(neither_ratio=0.5, co_occurring_ratio=0.0)

    def count(recipe: AnnotationRecipe) -> Counter[str]:
        return Counter(e.relation for e in annotation_examples(tables, thesaurus, recipe, seed=1))

    full = count(base)
    judged = sum(
        len(a.equivalent) + len(a.associated)
        for t in tables
        if t.split == "train"
        for a in t.targets.values()
    )
    assert full["annotated-neither"] == 2 * round(0.5 * judged)
    assert full["annotated-co-occurring"] == 0
    assert count(replace(base, co_occurring_ratio=1.0))["annotated-co-occurring"] > 0
    one = count(replace(base, both_directions=False))
    assert 2 * one["annotated-equivalent"] == full["annotated-equivalent"]
    assert not any(r.startswith("thesaurus") for r in count(replace(base, thesaurus=False)))
    assert sum(count(replace(base, repeats=3)).values()) == 3 * sum(full.values())
    names = {e.entity for e in annotation_examples(tables, thesaurus, replace(base, context="table-name"))}
    assert "novel" in names  # "novels" singularised
    with pytest.raises(ValueError):
        annotation_examples(tables, thesaurus, replace(base, repeats=0))
    # deterministic in the seed
    assert annotation_examples(tables, thesaurus, base, seed=4) == annotation_examples(
        tables, thesaurus, base, seed=4
    )


def test_conflicting_human_labels_are_dropped(tmp_path: Path) -> None:
    rows = [dict(t) for t in TINY_TABLES]
    rows[0] = json.loads(json.dumps(rows[0]))
    # the same pair in the same context judged equivalent and associated
    rows[0]["targets"]["writer"]["associated"].append("author")
    directory = tmp_path / "a"
    write_tiny_annotations(directory)
    (directory / "tables.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples = annotation_examples(
        load_annotated_tables(directory), (), AnnotationRecipe(context="annotated")
    )
    assert not any({e.premise, e.hypothesis} == {"writer", "author"} for e in examples)
    assert any({e.premise, e.hypothesis} == {"writer", "novelist"} for e in examples)
    labels = annotated_text_labels(examples)
    assert labels[("novelist", "writer")] == "entailment"
    assert labels[("publisher", "writer")] == "neutral"
