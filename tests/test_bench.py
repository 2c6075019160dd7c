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


class HashedEntailment:
    """A stand-in judge whose (P(entailment), P(neutral)) is a fixed function of the two texts,
    spread over [0, 1]: batched (the product's judge) or one pair at a time (the naive
    reference's), every pair gets the same exact scores, so any difference in decisions is a
    difference in rules. (The tiny judge gives every pair nearly the same score: decisions
    and their order would turn on float noise.)"""

    def __init__(self) -> None:
        self.pairs = 0

    @staticmethod
    def _probabilities(premise: str, hypothesis: str) -> tuple[float, float]:
        import hashlib

        digest = hashlib.sha256(f"{premise}\x00{hypothesis}".encode()).digest()
        u, v = digest[0] / 255, digest[1] / 255
        return u * u, (1 - u * u) * v

    # -- the product's EntailmentModel ---------------------------------------------------------
    def probabilities(self, premises: list[str], hypotheses: list[str]) -> object:
        import numpy as np

        return np.array(
            [self._probabilities(p, h) for p, h in zip(premises, hypotheses, strict=True)]
        )

    def entailment(self, premises: list[str], hypotheses: list[str]) -> object:
        import numpy as np

        return np.array(
            [self._probabilities(p, h)[0] for p, h in zip(premises, hypotheses, strict=True)]
        )

    def entailment_logits(self, premises: list[str], hypotheses: list[str]) -> object:
        return self.entailment(premises, hypotheses)

    # -- the naive reference's single pairs ----------------------------------------------------
    def both(self, premise: str, hypothesis: str) -> tuple[float, float]:
        self.pairs += 1
        return self._probabilities(premise, hypothesis)

    def one(self, premise: str, hypothesis: str) -> float:
        return self.both(premise, hypothesis)[0]


# The paper's rule, then the association rule (every name associated at 0.0, the top-2 cap
# biting), with the pipeline's entity link, rank groups and contradiction rule in both.
NAIVE_RULES = [
    {"add_association": None},
    {"add_association": 0.0, "add_association_top_k": 2},
]


@pytest.mark.slow
@pytest.mark.parametrize("rules", NAIVE_RULES, ids=["paper-rule", "association"])
def test_naive_pipeline_reaches_the_same_decisions(
    tiny_pipeline: object, rules: dict[str, object]
) -> None:
    import dataclasses

    from benchmarks.naive import NaivePipeline, decisions_of
    from cta.judge.nli import BidirectionalJudge
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions

    assert isinstance(tiny_pipeline, Pipeline)
    settings = tiny_pipeline.settings.model_copy(update=rules)
    stand_in = HashedEntailment()
    pipeline = dataclasses.replace(
        tiny_pipeline,
        settings=settings,
        judge_model=BidirectionalJudge(stand_in, template=settings.judge_template),  # type: ignore[arg-type]
    )
    tables = _tiny_tables()
    ours = pipeline.perturb_many(tables, PerturbOptions(seed=0))
    naive = NaivePipeline(pipeline, stand_in)
    rpl = add = 0
    for table, result in zip(tables, ours, strict=True):
        decisions, scores = naive.perturb(table, seed=0)
        assert decisions == decisions_of(result)
        assert scores  # candidates were judged, one pair at a time
        rpl += sum(len(r) for r, _ in decisions.values())
        add += sum(len(a) for _, a in decisions.values())
    # Equal decisions only mean something when there are some of each kind.
    assert rpl > 0 and add > 0, (rpl, add)
    assert stand_in.pairs > 0
    if rules["add_association"] is not None:
        capped = [column.add for result in ours for column in result.columns]
        assert all(len(names) <= 2 for names in capped)
        # by rank group (the linked schema's names first), then most associated first
        for names in capped:
            keys = [(d.source != "entity-schema", -(d.association or 0.0)) for d in names]
            assert keys == sorted(keys)


@pytest.mark.slow
def test_naive_judge_scores_like_the_product_judge(tiny_pipeline: object) -> None:
    from benchmarks.naive import NaiveEntailment
    from cta.pipeline import Pipeline

    assert isinstance(tiny_pipeline, Pipeline)
    judge = NaiveEntailment(tiny_pipeline.settings.resolved_judge_model())
    # Same checkpoint, no batching: the same scores up to float noise.
    premise, hypothesis = "book title (text)", "book author (text)"
    batched = tiny_pipeline.entailment_model.probabilities([premise], [hypothesis])[0]
    single = judge.both(premise, hypothesis)
    assert single[0] == pytest.approx(float(batched[0]), abs=1e-4)
    assert single[1] == pytest.approx(float(batched[1]), abs=1e-4)
    assert judge.pairs == 1


def test_the_speed_benchmark_fails_when_naive_and_ours_differ(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import bench_speed, harness
    from cta.results import ColumnPerturbations, Decision, PerturbationResult

    table = _tiny_tables()[1]
    add = [Decision(name="airline", e1=0.1, e2=0.1, source="retriever")]
    ours = [
        PerturbationResult(
            table_id=table.id,
            primary_entity="flight",
            entity_source="table-name",
            columns=[ColumnPerturbations(column="destination", add=add)],
        )
    ]
    same = ({"destination": ([], ["airline"])}, {})
    other = ({"destination": ([], ["airline", "gate"])}, {"add|destination|gate": (0.1, 0.1)})
    assert bench_speed.decision_mismatches([table], ours, [same]) == []
    assert bench_speed.identical_or_failure(1, [], 1) == ""
    mismatches = bench_speed.decision_mismatches([table], ours, [other])
    assert [m["table"] for m in mismatches] == ["bench:flights"]
    assert mismatches[0]["naive"] == {"destination": ([], ["airline", "gate"])}
    failed = bench_speed.identical_or_failure(1, mismatches, 2)
    assert "decide differently on 1 of 1 tables (bench:flights)" in failed
    # no decision on either side: nothing compared, no speed-up to claim
    assert "nothing was compared" in bench_speed.identical_or_failure(3, [], 0)

    # A failed part makes `cta bench` exit non-zero, saying why on its line.
    monkeypatch.setattr(harness, "run", lambda *a, **k: {"speed": {"failed": failed}})
    assert harness.main(["--only", "speed"]) == 1
    assert f"speed: failed: {failed}" in capsys.readouterr().out


@pytest.mark.slow
def test_raw_forward_is_the_pipeline_s_own_forward_passes(tiny_pipeline: object) -> None:
    import time

    from benchmarks.bench_speed import ForwardRecorder
    from cta.judge.batching import CANONICAL_ROWS
    from cta.judge.nli import BidirectionalJudge, HFEntailmentModel
    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions

    assert isinstance(tiny_pipeline, Pipeline)
    judge = tiny_pipeline.judge_model
    assert isinstance(judge, BidirectionalJudge) and isinstance(judge.model, HFEntailmentModel)
    model = judge.model
    module = model.model
    judge.clear_cache()
    judge.reset_stats()
    with ForwardRecorder(model) as recorder:
        began = time.perf_counter()
        tiny_pipeline.perturb_many(_tiny_tables(), PerturbOptions(seed=0))
        wall = time.perf_counter() - began
    raw = recorder.raw()
    # Every pair the model scored went through the timed forward passes, in the pipeline's
    # own canonical batches (each padded to at least CANONICAL_ROWS rows).
    assert recorder.pairs >= judge.stats.model_pairs > 0
    assert raw["pairs"] == recorder.pairs and raw["batches"] > 0
    assert raw["padded_rows"] >= max(recorder.pairs, raw["batches"] * CANONICAL_ROWS)
    assert 0 < recorder.forward_seconds <= recorder.seconds <= wall
    assert raw["pairs_per_second"] >= recorder.pairs / wall  # efficiency ≤ 1
    # the model is itself again afterwards
    assert model.model is module and "logits" not in vars(model)


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
