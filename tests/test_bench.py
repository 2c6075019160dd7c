"""The benchmark harness: metrics on hand-built inputs, naive ≡ ours on tiny tables, skips."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_quality import (  # noqa: E402
    AnnotatedTable,
    EmbeddingAdd,
    EmbeddingNeighbours,
    is_common,
    match_key,
    proposal_stats,
    recall,
    run_w2v,
    score_system,
)
from cta.table import Column, ColumnType, Table  # noqa: E402


def test_name_key_ignores_case_punctuation_and_inflection() -> None:
    assert match_key("Breed_Names") == match_key("breed name") == "breed name"
    assert match_key("written by") == match_key("Writes-By")
    assert match_key("FirstName") == match_key("first names")
    assert match_key("cities") == "city"
    assert match_key("city") != match_key("country")


def test_is_common_rejects_rare_words() -> None:
    assert is_common("given name")
    assert is_common("year 2020")
    assert not is_common("quincunx")
    assert not is_common("ship sobriquet")
    assert not is_common("--")


def test_recall_counts_columns_and_names() -> None:
    gold = {"t/a": ["Given Name", "forename"], "t/b": ["cost"], "t/c": []}
    proposals = {"t/a": ["given names", "alias"], "t/b": ["price"], "t/c": ["x"]}
    got = recall(proposals, gold)
    # t/c has no human names: not an annotated column.
    assert got["columns"] == 2
    assert got["column_recall"] == 0.5
    assert got["human_names"] == 3
    assert got["name_recall"] == round(1 / 3, 4)


def test_proposal_stats() -> None:
    stats = proposal_stats({"a": ["price", "padrone"], "b": []}, ["a", "b", "c"])
    assert stats["per_column"] == round(2 / 3, 3)
    assert stats["share_none"] == round(2 / 3, 4)
    assert stats["natural"] == 0.5


def _tiny_tables() -> list[Table]:
    return [
        Table(
            id="bench:books",
            name="books",
            columns=[
                Column(name="title"),
                Column(name="author"),
                Column(name="price", type=ColumnType.NUMBER),
            ],
        ),
        Table(
            id="bench:flights",
            name="flights",
            columns=[Column(name="flight number"), Column(name="destination")],
            target_columns=["destination"],
        ),
    ]


@pytest.mark.slow
def test_naive_pipeline_reaches_the_same_decisions(tiny_pipeline: object) -> None:
    from benchmarks.naive import NaiveEntailment, NaivePipeline, decisions_of
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions

    assert isinstance(tiny_pipeline, Pipeline)
    tables = _tiny_tables()
    ours = tiny_pipeline.perturb_many(tables, PerturbOptions(seed=0))
    judge = NaiveEntailment(tiny_pipeline.settings.resolved_judge_model())
    naive = NaivePipeline(tiny_pipeline, judge)
    for table, result in zip(tables, ours, strict=True):
        decisions, scores = naive.perturb(table, seed=0)
        assert decisions == decisions_of(result)
        assert scores  # candidates were judged, one pair at a time
    assert judge.pairs > 0
    # The naive judge scores like the product's judge (same checkpoint, no batching).
    premise, hypothesis = "book title (text)", "book author (text)"
    batched = tiny_pipeline.entailment_model.entailment([premise], [hypothesis])[0]
    assert judge.one(premise, hypothesis) == pytest.approx(float(batched), abs=1e-4)


def test_speed_comparisons_of_waves_and_precisions(tiny_pipeline: object) -> None:
    from benchmarks import bench_speed, harness
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions

    assert isinstance(tiny_pipeline, Pipeline)
    tables = _tiny_tables()
    waves = bench_speed.compare_waves(tiny_pipeline, tables)
    assert waves["identical_outputs"] is True
    assert waves["waves"]["model_pairs"] <= waves["all_at_once"]["model_pairs"]

    fp32 = tiny_pipeline.perturb_many(tables, PerturbOptions(seed=0))
    judged, proposed = bench_speed.verdicts(tiny_pipeline, tables, fp32)
    assert proposed and proposed <= judged
    compared = bench_speed.compare_precisions(tiny_pipeline, tables, fp32, 1.0, [("int8", 0.0)])
    int8 = compared["int8"]
    assert int8["verdicts_judged"] == len(judged) and int8["proposals_fp32"] == len(proposed)
    changed = len(set(int8["lost"]) | set(int8["gained"]))
    assert int8["verdicts_identical"] <= 1 - changed / len(judged) + 1e-4
    lines = harness._precision_lines(compared) + harness._waves_rows(waves)
    assert any(line.startswith("| int8") for line in lines)
    assert any("byte-identical: True" in line for line in lines)


@pytest.mark.slow
def test_ablations_without_retriever_and_without_judge(tiny_pipeline: object) -> None:
    from cta import recipes
    from cta.pipeline import Pipeline

    assert isinstance(tiny_pipeline, Pipeline)
    neighbours = EmbeddingNeighbours(tiny_pipeline.reranker)
    near = neighbours.of("price")
    assert near and all(match_key(n) != "price" and is_common(n) for n, _ in near)
    assert [s for _, s in near] == sorted((s for _, s in near), reverse=True)

    tables = _tiny_tables()
    proposals = run_w2v(neighbours, tables, seed=0)
    assert proposals == run_w2v(neighbours, tables, seed=0)  # seeded
    for names in proposals["rpl"].values():
        assert len(names) <= 5
    ranked = [n for n, _ in neighbours.of("price")]
    assert set(proposals["rpl"]["bench:books/price"]) <= set(ranked[:15])
    assert set(proposals["add"]["bench:books/price"]) <= set(ranked[15:50])

    no_retriever = recipes.without_retriever(tiny_pipeline, EmbeddingAdd(neighbours))
    # No retriever: every RPL candidate comes from the dictionary (the tiny judge, untrained,
    # accepts none of them, so the candidates are checked before the judge).
    candidates = no_retriever.candidates(tables[0])
    assert all(column.retrieved == [] for column in candidates.columns)
    proposed = [c for column in candidates.columns for c in column.dictionary]
    assert proposed and {c.source for c in proposed} == {"dictionary"}
    result = no_retriever.perturb(tables[0])
    replaced = [d for column in result.columns for d in column.replace]
    added = [d for column in result.columns for d in column.add]
    assert added, "the ablation proposed no ADD to check"
    assert {d.source for d in replaced} <= {"dictionary"}
    assert {d.provenance for d in added} == {"embedding"}

    items = [AnnotatedTable(table=tables[0], rpl={"price": ["cost"]}, add={"price": ["discount"]})]
    scored = score_system({"rpl": {"bench:books/price": ["costs"]}, "add": {}}, items)
    assert scored["rpl"]["column_recall"] == 1.0
    assert scored["add"]["column_recall"] == 0.0


def test_harness_says_what_it_skipped(tmp_path: Path) -> None:
    from benchmarks import harness
    from cta.settings import Settings

    results = tmp_path / "results"
    harness.run(
        ["quality", "speed"],
        settings=Settings(home=tmp_path / "home"),
        data=tmp_path / "no-data",
        results=results,
    )
    quality = json.loads((results / "quality.json").read_text())
    assert "ADVETA annotations not found" in quality["skipped"]
    summary = (results / "SUMMARY.md").read_text()
    assert "Skipped: ADVETA annotations not found" in summary
    assert "Skipped: WTQ tables not found" in summary
    assert "## Index scale\n\nNot run yet." in summary


def test_cta_bench_starts_the_harness_with_its_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `cta bench` is a launcher: the harness (its own entry point) parses the arguments, and a
    # relative --results means the caller's directory.
    from cta.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CTA_HOME", str(tmp_path / "home"))
    assert main(["bench", "--only", "nope"]) == 2  # the harness's usage error, passed through
    assert main(["bench", "--only", "quality", "--data", "no-data", "--results", "out"]) == 0
    quality = json.loads((tmp_path / "out" / "quality.json").read_text())
    assert "ADVETA annotations not found" in quality["skipped"]
    with pytest.raises(SystemExit) as refused:  # another command still refuses unknown options
        main(["perturb", "x.json", "--only", "quality"])
    assert refused.value.code == 2
    assert "unrecognized arguments: --only quality" in capsys.readouterr().err
