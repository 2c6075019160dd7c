"""What runs a transformer model's forward pass: torch (eager) or ONNX Runtime.

The judge and the table encoder are Hugging Face BERT-style checkpoints. On a GPU, or at any
precision other than fp32, they run in torch. On the CPU at fp32 — the reference every golden
output is measured with — ``runtime="auto"`` runs them in ONNX Runtime instead: the same
weights, exported once to ONNX (:func:`exported`), scored with the same canonical batches. It
answers the same as torch (logits within ~1e-5, far inside the goldens' 1e-4 and the margin of
the nearest decision: 0.0013 over their 691 scores, ``docs/cli.md``), about twice as fast on
two cores, and a command that uses it never imports torch or transformers: they cost ~2–4 s of
imports, which dominated a first result (``benchmarks/results/first_result.md``).
``runtime="torch"`` keeps the eager path on the CPU too; ``runtime="onnx"`` insists on ONNX
Runtime.

An exported model lives under ``<home>/onnx/`` (``cta setup`` writes the shipped judge's and
MiniLM's), keyed by the checkpoint's files (name, size, mtime) and the export format; a missing
or stale one is exported again on first use, which needs torch, transformers and onnx once.
Tokenisation goes through the checkpoint's ``tokenizer.json`` with the ``tokenizers`` library
(:class:`FastTokenizer`), as transformers' fast tokenizers do, without importing transformers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from cta.devices import DeviceError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

Runtime = Literal["torch", "onnx"]
Task = Literal["sequence-classification", "feature-extraction"]

#: Bumped when the exported graph changes (opset, inputs, outputs): older files are re-exported.
EXPORT_FORMAT = 1
OPSET = 17
# The files of a checkpoint whose change makes an export stale.
_KEYED_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json")
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_export_lock = threading.Lock()


def onnx_installed() -> bool:
    """Whether ONNX Runtime can be imported (it is a dependency; a trimmed install may lack it)."""
    return importlib.util.find_spec("onnxruntime") is not None


def resolve_runtime(setting: str, device: str, precision: str, model_dir: Path | None) -> Runtime:
    """The runtime a model runs in (see the module docstring). ``device`` and ``precision`` are
    the resolved ones; ``model_dir`` is the checkpoint's folder (``None``: a hub name, which
    only torch loads). ``onnx`` asked for where it cannot run is an error, not a fallback."""
    if setting == "torch":
        return "torch"
    if setting not in ("auto", "onnx"):
        raise DeviceError(f"unknown runtime {setting!r} (auto, torch, onnx)")
    problem = None
    if device != "cpu" or precision != "fp32":
        problem = f"runs fp32 on the CPU only (asked: {precision} on {device})"
    elif model_dir is None or not (model_dir / "tokenizer.json").is_file():
        problem = "needs a local checkpoint folder with a tokenizer.json"
    elif not onnx_installed():
        problem = "needs onnxruntime installed"
    if problem is None:
        return "onnx"
    if setting == "onnx":
        raise DeviceError(f"runtime 'onnx' {problem}")
    return "torch"


# -- export ---------------------------------------------------------------------------------


def export_key(model_dir: Path, task: Task) -> str:
    """A digest of what an export depends on: the checkpoint's files (name, size, mtime),
    the task and :data:`EXPORT_FORMAT`."""
    parts: list[Any] = [EXPORT_FORMAT, OPSET, task, str(model_dir.resolve())]
    for name in _KEYED_FILES:
        path = model_dir / name
        if path.is_file():
            stat = path.stat()
            parts.append([name, stat.st_size, stat.st_mtime_ns])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def exported(model_dir: Path, task: Task, cache_dir: Path) -> Path:
    """The ONNX file of the checkpoint at ``model_dir`` for ``task``, exported now (and kept
    under ``cache_dir``) if it is missing or stale. Written atomically."""
    target = cache_dir / f"{model_dir.resolve().name}-{task}-{export_key(model_dir, task)}.onnx"
    with _export_lock:
        if target.is_file():
            return target
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        try:
            _export(model_dir, task, partial)
            os.replace(partial, target)
        except Exception as exc:  # torch's exporter raises many kinds; say which model failed
            raise DeviceError(
                f"cannot export {model_dir} to ONNX ({type(exc).__name__}: {exc}); "
                "CTA_RUNTIME=torch runs it in torch instead"
            ) from exc
        finally:
            partial.unlink(missing_ok=True)
    return target


def _export(model_dir: Path, task: Task, out: Path) -> None:
    """Trace the checkpoint in torch and write it as one ONNX file (weights inside, fp32)."""
    import warnings

    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    loader = AutoModelForSequenceClassification if task == "sequence-classification" else AutoModel
    model = loader.from_pretrained(str(model_dir), local_files_only=True).float().eval()
    names = [n for n in _INPUTS if n in _forward_inputs(model)]
    example = {n: torch.ones((2, 8), dtype=torch.int64) for n in names}
    example["input_ids"] = torch.full((2, 8), 5, dtype=torch.int64)
    output = "logits" if task == "sequence-classification" else "last_hidden_state"
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "tokens"} for n in names}
    axes[output] = {0: "batch"} if task == "sequence-classification" else {0: "batch", 1: "tokens"}

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            result = self.inner(**dict(zip(names, inputs, strict=True)))
            tensor: torch.Tensor = getattr(result, output)
            return tensor

    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Wrapped(),
            tuple(example[n] for n in names),
            str(out),
            input_names=names,
            output_names=[output],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


def _forward_inputs(model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)


# -- running --------------------------------------------------------------------------------


class OnnxModel:
    """An exported model in an ONNX Runtime CPU session: int64 token arrays in, the first
    output (float32) out. Sessions are thread-safe; one run at a time is the caller's rule."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or 0  # 0 = ONNX Runtime's default (the cores)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.path = path
        self.session: onnxruntime.InferenceSession = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = tuple(i.name for i in self.session.get_inputs())
        self.threads = threads or 0

    def __call__(self, batch: Mapping[str, np.ndarray]) -> np.ndarray:
        feeds = {name: np.ascontiguousarray(batch[name], dtype=np.int64) for name in self.inputs}
        out = self.session.run(None, feeds)[0]
        return np.asarray(out, dtype=np.float32)


# -- tokenisation ---------------------------------------------------------------------------


class FastTokenizer:
    """A checkpoint's ``tokenizer.json`` through the ``tokenizers`` library, called as a
    transformers tokenizer is for what the judge and the encoder ask: ``tok(text)``,
    ``tok(texts)``, ``tok(premises, hypotheses)``, ``add_special_tokens``, and
    ``truncation``/``max_length`` (longest first, as transformers truncates pairs).
    Returns ``{"input_ids", "token_type_ids", "attention_mask"}`` lists, no padding."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self._base: Tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._base.no_padding()
        self._base.no_truncation()
        config = _read_json(model_dir / "tokenizer_config.json")
        pad = config.get("pad_token")
        if isinstance(pad, dict):
            pad = pad.get("content")
        pad_id = self._base.token_to_id(pad) if isinstance(pad, str) else None
        self.pad_token_id: int | None = pad_id
        self._truncating: dict[int, Tokenizer] = {}
        self._lock = threading.Lock()

    def _with_truncation(self, max_length: int) -> Tokenizer:
        from tokenizers import Tokenizer

        with self._lock:
            tok = self._truncating.get(max_length)
            if tok is None:
                tok = Tokenizer.from_str(self._base.to_str())
                tok.no_padding()
                tok.enable_truncation(max_length, strategy="longest_first")
                self._truncating[max_length] = tok
            return tok

    def __call__(
        self,
        text: str | Sequence[str],
        text_pair: str | Sequence[str] | None = None,
        *,
        add_special_tokens: bool = True,
        truncation: bool = False,
        max_length: int | None = None,
    ) -> dict[str, Any]:
        single = isinstance(text, str)
        firsts = [text] if isinstance(text, str) else list(text)
        if text_pair is None:
            inputs: list[Any] = firsts
        else:
            seconds = [text_pair] if isinstance(text_pair, str) else list(text_pair)
            if len(seconds) != len(firsts):
                raise ValueError(f"{len(firsts)} texts but {len(seconds)} text pairs")
            inputs = list(zip(firsts, seconds, strict=True))
        tok = self._with_truncation(max_length) if truncation and max_length else self._base
        encodings = tok.encode_batch(inputs, add_special_tokens=add_special_tokens)
        out: dict[str, Any] = {
            "input_ids": [e.ids for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
        }
        if single:
            return {key: values[0] for key, values in out.items()}
        return out


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}


def read_config(model_dir: Path) -> dict[str, Any]:
    """A checkpoint's ``config.json`` (what the ONNX path reads instead of transformers'
    config classes: labels, the model type)."""
    return _read_json(model_dir / "config.json")


def pad_arrays(
    features: Mapping[str, Any],
    rows: Sequence[int],
    pad_id: int,
    multiple: int = 1,
    min_rows: int = 0,
) -> dict[str, np.ndarray]:
    """Right-padded int64 arrays of the selected rows of tokenised texts or pairs
    (``input_ids``, ``attention_mask`` …), as ``tokenizer.pad`` would make them without its
    per-example Python overhead; ``features[key][i]`` is row ``i``'s list of ids. The width
    is rounded up to ``multiple``; with ``min_rows``, copies of the first row fill the batch
    up to that many rows (their outputs are to be dropped)."""
    width = max(len(features["input_ids"][i]) for i in rows)
    width = -(-width // multiple) * multiple
    filled = list(rows) + [rows[0]] * max(0, min_rows - len(rows))
    batch: dict[str, np.ndarray] = {}
    for key, values in features.items():
        fill = pad_id if key == "input_ids" else 0
        array = np.full((len(filled), width), fill, dtype=np.int64)
        for r, i in enumerate(filled):
            array[r, : len(values[i])] = values[i]
        batch[key] = array
    return batch
