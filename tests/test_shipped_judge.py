"""The judge that ships in ``models/judge``: the measured file, its card, its recipe, its data.

* the weights are the file the manifest names (sha256) and stay under the size the device
  transfer and the clone can carry;
* every training source still hashes to what the card says (a data change without a retrain
  fails here), and the recipe file is the card's;
* the card is exactly what :func:`cta.training.card.render_card` writes from the manifest;
* the paper's worked examples, recomputed on this file, give the manifest's scores;
* the recipe, run through the product's own supervision, builds the rows the file was trained
  on (slow; needs ``../shared``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cta.settings import SHIPPED_JUDGE, Settings
from cta.training.card import MANIFEST, render_card
from cta.training.recipe import file_sha256, load_recipe, recipe_settings, source_hashes

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "models" / "judge.recipe.json"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SHIPPED_JUDGE / MANIFEST).read_text())
    return data


def test_the_shipped_weights_are_the_measured_file(manifest: dict[str, Any]) -> None:
    weights = SHIPPED_JUDGE / "model.safetensors"
    assert file_sha256(weights) == manifest["files"]["model.safetensors"]
    assert weights.stat().st_size <= 50 * 2**20
    assert Settings().resolved_judge_model() == str(SHIPPED_JUDGE)
    config = json.loads((SHIPPED_JUDGE / "config.json").read_text())
    assert sorted(config["id2label"].values()) == ["contradiction", "entailment", "neutral"]


def test_training_sources_still_match_the_card(
    manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the recipe's paths are relative to the repository root
    settings = recipe_settings(RECIPE)
    now = source_hashes(settings)
    card = manifest["sources"]
    assert set(card) >= {"annotations/tables.jsonl", "annotations/thesaurus.jsonl"}
    missing = [
        spec
        for spec in card
        if spec not in now and not (SHARED / "data").is_dir()  # ../shared absent: not checkable
    ]
    checked = {k: v for k, v in card.items() if k in now}
    changed = {k: (v, now[k]) for k, v in checked.items() if now[k] != v}
    assert not changed, (
        f"training data changed since the shipped judge was trained: {sorted(changed)}; retrain "
        "(cta judge train --recipe models/judge.recipe.json) and update models/judge"
    )
    assert set(checked) | set(missing) == set(card), "a source of the card cannot be found"


def test_the_recipe_file_is_the_cards(manifest: dict[str, Any]) -> None:
    assert load_recipe(RECIPE) == manifest["recipe"]


def test_the_card_is_written_from_the_manifest(manifest: dict[str, Any]) -> None:
    card = (SHIPPED_JUDGE / "README.md").read_text()
    assert card == render_card(manifest)
    assert manifest["sources"]["annotations/tables.jsonl"] in card
    assert "cta judge train --recipe models/judge.recipe.json" in card


def test_the_paper_cases_recompute_on_this_file(manifest: dict[str, Any]) -> None:
    from cta.judge.nli import BidirectionalJudge, HFEntailmentModel
    from cta.results import JudgeColumn, JudgePair

    cases = manifest["evaluation"]["paper_cases"]
    assert len(cases) >= 8
    judge = BidirectionalJudge(HFEntailmentModel(str(SHIPPED_JUDGE), device="cpu"))
    pairs = [
        JudgePair(
            entity=c["entity"],
            target=JudgeColumn(name=c["target"], type=c["type"]),
            candidate=JudgeColumn(name=c["candidate"], type=c["type"]),
        )
        for c in cases
    ]
    scores = judge.score(pairs)
    for case, (e1, e2) in zip(cases, scores, strict=True):
        assert e1 == pytest.approx(case["e1"], abs=2e-4), case
        assert e2 == pytest.approx(case["e2"], abs=2e-4), case


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "data/spider").is_dir(), reason="needs ../shared/data")
def test_the_recipe_builds_the_rows_the_file_was_trained_on(
    manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from collections import Counter

    from cta.training.train import build_training_data

    monkeypatch.chdir(ROOT)
    data = build_training_data(recipe_settings(RECIPE))
    assert len(data.training) == manifest["training"]["rows"]
    labels = dict(sorted(Counter(e.label for e in data.training).items()))
    assert labels == manifest["training"]["label_counts"]
