"""The NLI judge (docs/method.md §3.4): bidirectional entailment between contextualised columns.

:class:`HFEntailmentModel` runs any Hugging Face sequence-classification NLI checkpoint — the
paper's ``roberta-large-mnli`` or the offline judge built by ``cta judge train`` — through one
code path. :class:`BidirectionalJudge` turns (entity, target, candidate) pairs into the
premise/hypothesis texts of the template, scores both directions, deduplicates and caches.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cta.components import EntailmentModel
from cta.devices import Precision, autocast, resolve_device, resolve_precision
from cta.judge.batching import (
    CANONICAL_MULTIPLE,
    CANONICAL_ROWS,
    PairEncoder,
    canonical_batches,
)
from cta.judge.decide import association
from cta.lru import LRUCache
from cta.registry import register
from cta.results import JudgeColumn, JudgePair
from cta.runtimes import (
    FastTokenizer,
    OnnxModel,
    Runtime,
    exported,
    pad_arrays,
    read_config,
    resolve_runtime,
)
from cta.settings import Settings
from cta.words import column_words

if TYPE_CHECKING:
    import torch

DEFAULT_TEMPLATE = "{entity} {column} ({type})"


class JudgeError(RuntimeError):
    """The judge cannot be loaded or used (missing checkpoint, labels without entailment…)."""


def render(template: str, entity: str | None, column: str, type_: str) -> str:
    """The contextualised column text, e.g. ``"singer song name (text)"``.

    Without an entity the ``{entity}`` slot is dropped and the spaces it leaves collapse.
    """
    text = template.format(entity=entity or "", column=column_words(column), type=type_)
    return " ".join(text.split())


# -- the model ------------------------------------------------------------------------------

#: (premise, hypothesis) pairs whose entailment logit :class:`HFEntailmentModel` keeps
LOGIT_CACHE_SIZE = 20_000


def quantise_int8(
    model: torch.nn.Module,
    layers: Callable[[str], bool] | None = None,
    per_channel: bool = True,
) -> torch.nn.Module:
    """A copy of ``model`` with linear layers dynamically quantised to int8 (weights int8,
    per output channel unless told, activations quantised per batch): those whose names
    ``layers`` accepts, by default the transformer blocks' (the classifier head stays fp32).
    torch's eager ``quantize_dynamic`` warns that it is deprecated: the warning is silenced
    here, docs/design.md names the replacement (torchao) for when it goes."""
    import torch

    keep = layers or _quantised_layer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import (
            default_dynamic_qconfig,
            per_channel_dynamic_qconfig,
            quantize_dynamic,
        )

        qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
        names = {
            name
            for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and keep(name)
        }
        quantised: torch.nn.Module = quantize_dynamic(
            model, {name: qconfig for name in names}, dtype=torch.qint8
        )
    return quantised


def _quantised_layer(name: str) -> bool:
    """Which linear layers int8 covers: the transformer blocks', not the classifier head."""
    return ".layer." in name and "classifier" not in name


class HFEntailmentModel:
    """P(entailment) from a Hugging Face sequence-classification NLI checkpoint.

    ``name_or_path`` is a local directory or a hub name. The entailment class is looked up in
    the checkpoint's ``config.id2label`` (case-insensitive ``"entailment"``), never assumed;
    probabilities are the softmax over all its labels. Pairs become token ids through a
    :class:`PairEncoder` (each distinct text tokenised once), are grouped by length and run
    in batches of ``batch_size`` (``gpu_batch_size`` on CUDA), on CUDA when present and
    ``device="auto"``, at ``precision`` (:mod:`cta.devices`: bf16 autocast on CUDA, fp32 on
    the CPU unless asked; int8 = :func:`quantise_int8`). ``runtime`` (:mod:`cta.runtimes`):
    on the CPU at fp32, ``auto`` runs the checkpoint exported to ONNX in ONNX Runtime
    (kept under ``onnx_cache``), without importing torch or transformers; otherwise torch,
    under ``torch.inference_mode``, with batches copied from pinned memory on CUDA.
    """

    def __init__(
        self,
        name_or_path: str,
        device: str = "auto",
        max_length: int = 64,
        batch_size: int = 64,
        precision: str = "auto",
        gpu_batch_size: int = 1024,
        runtime: str = "auto",
        onnx_cache: Path | None = None,
    ) -> None:
        if batch_size < 1 or gpu_batch_size < 1 or max_length < 8:
            raise ValueError("batch sizes must be ≥ 1 and max_length ≥ 8")
        device_type = resolve_device(device)
        self.precision: Precision = resolve_precision(precision, device_type)
        folder = Path(name_or_path) if Path(name_or_path).is_dir() else None
        self.runtime: Runtime = resolve_runtime(runtime, device_type, self.precision, folder)
        self.name_or_path = name_or_path
        self.device_type = device_type
        self.model: Any = None
        if self.runtime == "onnx" and folder is not None:
            id2label = self._load_onnx(folder, onnx_cache or Settings().onnx_dir())
        else:
            id2label = self._load_torch(name_or_path, device_type)
        matches = [i for i, label in id2label.items() if label.strip().lower() == "entailment"]
        if len(matches) != 1:
            raise JudgeError(
                f"checkpoint {name_or_path!r} has no single 'entailment' label in id2label "
                f"{id2label}; an NLI (MNLI-style) checkpoint is needed"
            )
        self.labels: tuple[str, ...] = tuple(id2label[i] for i in sorted(id2label))
        self.entailment_index: int = matches[0]
        # The neutral class: association (an ADD beside its target) for a three-way judge.
        neutral = [i for i, label in id2label.items() if label.strip().lower() == "neutral"]
        self.neutral_index: int | None = neutral[0] if len(neutral) == 1 else None
        self.max_length = max_length
        self.batch_size = gpu_batch_size if device_type == "cuda" else batch_size
        self.pairs = PairEncoder(self.tokenizer, max_length)
        # One forward at a time: concurrent callers would only fight for the same cores.
        self._lock = threading.Lock()
        self._logits: LRUCache[tuple[str, str], float] = LRUCache(LOGIT_CACHE_SIZE)

    def _load_torch(self, name_or_path: str, device_type: str) -> dict[int, str]:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            self.tokenizer: Any = AutoTokenizer.from_pretrained(name_or_path)
            # fp16-stored checkpoints (the shipped judge) are computed in fp32, exactly upcast
            model = AutoModelForSequenceClassification.from_pretrained(name_or_path).float()
        except OSError as exc:
            raise JudgeError(f"cannot load NLI checkpoint {name_or_path!r}: {exc}") from exc
        self.device: torch.device = torch.device(device_type)
        model = model.eval()
        if self.precision == "int8":
            model = quantise_int8(model)
        self.model = model.to(self.device)
        self.forward = self._torch_forward
        return {int(i): str(label) for i, label in model.config.id2label.items()}

    def _load_onnx(self, folder: Path, cache: Path) -> dict[int, str]:
        config = read_config(folder)
        if not config:
            raise JudgeError(f"cannot load NLI checkpoint {str(folder)!r}: no config.json")
        # transformers leaves its default labels (LABEL_0 …) out of config.json
        labels = config.get("id2label") or {
            i: f"LABEL_{i}" for i in range(int(config.get("num_labels", 2)))
        }
        try:
            self.tokenizer = FastTokenizer(folder)
            self.model = OnnxModel(exported(folder, "sequence-classification", cache))
        except (OSError, ValueError) as exc:
            raise JudgeError(f"cannot load NLI checkpoint {str(folder)!r}: {exc}") from exc
        self.forward = self.model
        return {int(i): str(label) for i, label in labels.items()}

    def _torch_forward(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """One padded batch's logits in torch, on the model's device and precision."""
        import torch

        cuda = self.device.type == "cuda"
        with torch.inference_mode(), autocast(self.device.type, self.precision):
            inputs = {}
            for key, array in batch.items():
                tensor = torch.from_numpy(array)
                tensor = tensor.pin_memory() if cuda else tensor
                inputs[key] = tensor.to(self.device, non_blocking=cuda)
            logits: np.ndarray = self.model(**inputs).logits.float().cpu().numpy()
        return logits

    def logits(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """Raw classifier logits ``(n, n_labels)``, in the order of the inputs."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        n = len(premises)
        out = np.zeros((n, len(self.labels)), dtype=np.float32)
        if n == 0:
            return out
        features = self.pairs.encode(premises, hypotheses)
        ids: list[list[int]] = features["input_ids"]
        pad_id = self.tokenizer.pad_token_id or 0
        with self._lock:
            for rows in canonical_batches([len(x) for x in ids], self.batch_size):
                batch = pad_arrays(features, rows, pad_id, CANONICAL_MULTIPLE, CANONICAL_ROWS)
                logits = self.forward(batch)
                out[rows] = logits[: len(rows)]
        return out

    def entailment_logits(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """The raw entailment logit of each pair (zero-shot classification softmaxes these).

        Kept in a bounded LRU cache (:data:`LOGIT_CACHE_SIZE` pairs): the zero-shot entity
        prediction asks the same 48 pairs for a table each time it is sent, and the judge's
        own cache holds probabilities, not logits. A pair's logits do not depend on its
        batch (canonical shapes), so a cached value is the bytes a new run would give."""
        keys = list(zip(premises, hypotheses, strict=True))
        known = self._logits.get_many(dict.fromkeys(keys))
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        if missing:
            fresh = self.logits([p for p, _ in missing], [h for _, h in missing])
            rows = fresh[:, self.entailment_index]
            new = {k: float(row) for k, row in zip(missing, rows, strict=True)}
            self._logits.put_many(new.items())
            known.update(new)
        return np.array([known[k] for k in keys], dtype=np.float32)

    def clear_cache(self) -> None:
        """Forget the cached entailment logits."""
        self._logits.clear()

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(entailment | premise ⇒ hypothesis), softmax over all labels; shape ``(n,)``."""
        return self.probabilities(premises, hypotheses)[:, 0]

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """P(entailment) and P(neutral) of each pair, softmax over all labels; ``(n, 2)``.

        P(neutral) is NaN for a checkpoint without a ``neutral`` label."""
        logits = self.logits(premises, hypotheses).astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        neutral = (
            probs[:, self.neutral_index]
            if self.neutral_index is not None
            else np.full(len(probs), np.nan)
        )
        return np.stack([probs[:, self.entailment_index], neutral], axis=1)

    def torch_model(self) -> torch.nn.Module:
        """The underlying torch module (benchmarks time its raw forward pass); the torch
        runtime only."""
        if self.runtime != "torch":
            raise JudgeError(f"the judge runs in {self.runtime}, not torch (CTA_RUNTIME=torch)")
        module: torch.nn.Module = self.model
        return module


class RecheckedEntailment:
    """A fast model's P(entailment), re-scored by an exact one where it lies within
    ``margin`` of a decision threshold: the fast model's error only matters near a
    threshold, so decisions stay those of the exact model unless the fast score is off by
    more than ``margin`` (``benchmarks/judge_precision.py`` measures the error; the speed
    benchmark, the verdicts that change). The zero-shot entity prediction
    (:meth:`entailment_logits`) always uses the exact model. Thresholds are the
    configured ones: a request that overrides them gets the fast model's accuracy there."""

    def __init__(
        self,
        fast: HFEntailmentModel,
        exact: HFEntailmentModel,
        thresholds: Sequence[float],
        margin: float,
        association_thresholds: Sequence[float] = (),
    ) -> None:
        if margin <= 0:
            raise ValueError("the re-check margin must be > 0")
        self.fast = fast
        self.exact = exact
        self.thresholds = tuple(sorted(set(thresholds)))
        self.association_thresholds = tuple(sorted(set(association_thresholds)))
        self.margin = margin
        self.name_or_path = exact.name_or_path
        self.device_type = exact.device_type
        self.precision = f"{fast.precision} (fp32 within {margin} of {self.thresholds})"
        self.scored = 0
        self.rechecked = 0
        self._lock = threading.Lock()

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return self.probabilities(premises, hypotheses)[:, 0]

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """The fast model's (entailment, neutral), exact where either is near its thresholds."""
        probs = np.array(self.fast.probabilities(premises, hypotheses), dtype=np.float64)
        near = np.zeros(len(probs), dtype=bool)
        for threshold in self.thresholds:
            near |= np.abs(probs[:, 0] - threshold) <= self.margin
        for threshold in self.association_thresholds:
            near |= np.abs(probs[:, 1] - threshold) <= self.margin
        rows = [int(i) for i in np.flatnonzero(near)]
        if len(rows):
            probs[rows] = self.exact.probabilities(
                [premises[i] for i in rows], [hypotheses[i] for i in rows]
            )
        with self._lock:
            self.scored += len(probs)
            self.rechecked += len(rows)
        return probs

    def entailment_logits(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return self.exact.entailment_logits(premises, hypotheses)

    def clear_cache(self) -> None:
        self.exact.clear_cache()


def entailment_model(
    settings: Settings, name_or_path: str
) -> HFEntailmentModel | RecheckedEntailment:
    """The judge's model as ``settings`` configure it: at ``judge_precision``, and, at int8
    with ``judge_recheck_margin`` > 0, re-checked in fp32 near the thresholds (bf16 is close
    enough to fp32 not to need it: ``benchmarks/results/speed.json``)."""

    def load(precision: str) -> HFEntailmentModel:
        return HFEntailmentModel(
            name_or_path,
            device=settings.device,
            max_length=settings.judge_max_length,
            batch_size=settings.judge_batch_size,
            precision=precision,
            gpu_batch_size=settings.judge_gpu_batch_size,
            runtime=settings.runtime,
            onnx_cache=settings.onnx_dir(),
        )

    model = load(settings.judge_precision)
    if model.precision != "int8" or settings.judge_recheck_margin <= 0:
        return model
    exact = load("fp32")
    thresholds = (settings.rpl_threshold, settings.add_threshold)
    association = () if settings.add_association is None else (settings.add_association,)
    return RecheckedEntailment(model, exact, thresholds, settings.judge_recheck_margin, association)


# -- the bidirectional judge ----------------------------------------------------------------


@dataclass
class JudgeStats:
    """Counters of a :class:`BidirectionalJudge` (benchmarks read them)."""

    pairs_requested: int = 0  # pairs asked of score() (both directions) or entail() (one)
    unique_directed: int = 0
    cache_hits: int = 0
    model_pairs: int = 0
    model_calls: int = 0
    model_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class BidirectionalJudge:
    """e1 = P(entail | target ⇒ candidate), e2 = P(entail | candidate ⇒ target).

    Identical directed (premise, hypothesis) texts are scored once per call, results are kept
    in a bounded, thread-safe LRU cache, and only missing texts reach the model — in calls of
    at most ``batch_size`` directed pairs (the model batches further), which bounds memory on
    very large requests.
    """

    def __init__(
        self,
        model: EntailmentModel,
        template: str = DEFAULT_TEMPLATE,
        cache_size: int = 200_000,
        batch_size: int = 4096,
    ) -> None:
        if "{column}" not in template:
            raise ValueError(f"judge template {template!r} has no {{column}} slot")
        if cache_size < 0 or batch_size < 1:
            raise ValueError("cache_size must be ≥ 0 and batch_size ≥ 1")
        self.model = model
        self.template = template
        self.cache_size = cache_size
        self.batch_size = batch_size
        self.stats = JudgeStats()
        # directed texts → (P(entailment), P(neutral)); one forward pass gives both
        self._cache: LRUCache[tuple[str, str], tuple[float, float]] = LRUCache(cache_size)
        self._lock = threading.Lock()

    def text(self, entity: str | None, column: JudgeColumn) -> str:
        """The contextualised text of one column under this judge's template."""
        return render(self.template, entity, column.name, column.type.value)

    def score(self, pairs: Sequence[JudgePair]) -> list[tuple[float, float]]:
        """``(e1, e2)`` for every pair, in order."""
        directed: list[tuple[tuple[str, str], tuple[str, str]]] = []
        for pair in pairs:
            target = self.text(pair.entity, pair.target)
            candidate = self.text(pair.entity, pair.candidate)
            directed.append(((target, candidate), (candidate, target)))
        scores = self._directed([key for both in directed for key in both], len(pairs))
        return [(scores[forward][0], scores[backward][0]) for forward, backward in directed]

    def association(self, pairs: Sequence[JudgePair]) -> list[float]:
        """How strongly each candidate belongs *beside* its target: the mean of P(neutral)
        in both directions (a three-way judge learns neutral = associated, see
        :func:`cta.training.relations.scheme_label`); NaN for a judge without a neutral
        class. Same cache and batching as :meth:`score`: its forward passes give both."""
        return [
            association(n1, n2)
            for (_, n1), (_, n2) in zip(
                self.probabilities(pairs), self.probabilities(pairs, reverse=True), strict=True
            )
        ]

    def entail(self, pairs: Sequence[JudgePair], reverse: bool = False) -> list[float]:
        """One direction per pair: e1 = P(entail | target ⇒ candidate), or with ``reverse``
        e2 = P(entail | candidate ⇒ target) — same cache and batching as :meth:`score`.

        The pipeline scores e1 first and asks for e2 only where it can still change a
        decision (:meth:`~cta.judge.decide.DecisionRule.rpl_possible`, ``add_possible``).
        """
        return [entail for entail, _ in self.probabilities(pairs, reverse)]

    def probabilities(
        self, pairs: Sequence[JudgePair], reverse: bool = False
    ) -> list[tuple[float, float]]:
        """:meth:`entail`'s direction with P(neutral) beside P(entailment), per pair."""
        keys = []
        for pair in pairs:
            target = self.text(pair.entity, pair.target)
            candidate = self.text(pair.entity, pair.candidate)
            keys.append((candidate, target) if reverse else (target, candidate))
        scores = self._directed(keys, len(pairs))
        return [scores[key] for key in keys]

    def _directed(
        self, keys: Sequence[tuple[str, str]], requested: int
    ) -> dict[tuple[str, str], tuple[float, float]]:
        """(P(entailment), P(neutral)) of directed (premise, hypothesis) texts: cached ones,
        the rest from the model (NaN neutral for a model that only gives entailment)."""
        # Unique directed texts in first-seen order, so model calls are reproducible.
        unique = list(dict.fromkeys(keys))
        scores = self._cache.get_many(unique)
        with self._lock:
            self.stats.pairs_requested += requested
            self.stats.unique_directed += len(unique)
            self.stats.cache_hits += len(scores)
        missing = [key for key in unique if key not in scores]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            began = time.perf_counter()
            premises, hypotheses = [p for p, _ in chunk], [h for _, h in chunk]
            both = getattr(self.model, "probabilities", None)
            if callable(both):
                probs = np.asarray(both(premises, hypotheses), dtype=np.float64).reshape(-1, 2)
            else:
                entail = np.asarray(self.model.entailment(premises, hypotheses), dtype=np.float64)
                entail = entail.reshape(-1)
                probs = np.stack([entail, np.full(len(entail), np.nan)], axis=1)
            elapsed = time.perf_counter() - began
            values = [(float(e), float(n)) for e, n in probs]
            if len(values) != len(chunk):
                raise JudgeError(f"model returned {len(values)} scores for {len(chunk)} pairs")
            with self._lock:
                self.stats.model_pairs += len(chunk)
                self.stats.model_calls += 1
                self.stats.model_seconds += elapsed
            fresh = dict(zip(chunk, values, strict=True))
            self._cache.put_many(fresh.items())
            scores.update(fresh)
        return scores

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = JudgeStats()

    def clear_cache(self) -> None:
        """Forget every cached score, the model's own caches (entity-prediction logits)
        included, so the next call is measured cold."""
        self._cache.clear()
        clear = getattr(self.model, "clear_cache", None)
        if callable(clear):
            clear()


# -- registry -------------------------------------------------------------------------------


def load_judge(settings: Settings, model_path: str | None = None) -> BidirectionalJudge:
    """The configured judge over :class:`HFEntailmentModel` (``model_path`` overrides settings)."""
    name_or_path = model_path or settings.resolved_judge_model()
    if model_path is None and settings.judge_model is None and not Path(name_or_path).is_dir():
        raise JudgeError(
            f"no judge model at {name_or_path}: the shipped judge (models/judge) is part of the "
            "repository; retrain it with `cta judge train --recipe models/judge.recipe.json "
            f"--out {name_or_path}`, or set CTA_JUDGE_MODEL to an NLI checkpoint path or hub name"
        )
    model = entailment_model(settings, name_or_path)
    return BidirectionalJudge(
        model, template=settings.judge_template, cache_size=settings.judge_cache_size
    )


@register("judge", "hf-nli")
def _hf_nli(settings: Settings) -> BidirectionalJudge:
    return load_judge(settings)
