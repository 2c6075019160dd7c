"""Judge pairs as model inputs: token ids with each distinct text tokenised once, and the
canonical batches that make a pair's score independent of its company.

:class:`PairEncoder` joins cached per-text ids with the tokenizer's own pair template
(:class:`PairTemplate`, learnt and checked at load); :func:`canonical_batches` and
:func:`cta.runtimes.pad_arrays` group and pad rows as :class:`cta.judge.nli.HFEntailmentModel`
runs them (the training loop pads with :func:`pad_batch`, the same as torch tensors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cta.lru import LRUCache
from cta.runtimes import pad_arrays

if TYPE_CHECKING:
    import torch

# A pair's score must not depend on what it is batched with (docs/cli.md: same input + seed →
# same bytes, alone, in a batch, after any cache history). CPU kernels pick their blocking
# by shape, and on the default judge's shape the last bits of a row's logits were measured
# to change with the padded length and, below 12 rows, with the batch size. So a row is
# always run at a padded length fixed by its own length (rounded up to a multiple of
# CANONICAL_MULTIPLE: rows are batched only with rows of the same rounded length), in a
# batch of at least CANONICAL_ROWS rows (filler copies, outputs dropped). tests/test_judge.py
# checks the invariance. Measured on 2,000 pipeline-like pairs (mean 16 tokens), against
# plain length-sorted batches: rounding to 4 tokens costs ~10 % more model time, to 8 ~20 %,
# to 16 ~40 % (more padding), to 1–2 more filler rows on small calls.
CANONICAL_MULTIPLE = 4
CANONICAL_ROWS = 16


def canonical_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Row indices grouped into batches of rows that share their canonical padded length,
    shortest first, input order within a length (so the grouping is reproducible)."""
    width = [-(-n // CANONICAL_MULTIPLE) * CANONICAL_MULTIPLE for n in lengths]
    order = sorted(range(len(lengths)), key=lambda i: (width[i], i))
    batches: list[list[int]] = []
    for i in order:
        if batches and width[batches[-1][0]] == width[i] and len(batches[-1]) < batch_size:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def pad_batch(
    features: Mapping[str, Any],
    rows: Sequence[int],
    pad_id: int,
    multiple: int = 1,
    min_rows: int = 0,
    pin: bool = False,
) -> dict[str, torch.Tensor]:
    """:func:`cta.runtimes.pad_arrays` as torch tensors; ``pin``: in page-locked memory, so a copy to a
    GPU can overlap the host's work."""
    import torch

    batch: dict[str, torch.Tensor] = {}
    for key, array in pad_arrays(features, rows, pad_id, multiple, min_rows).items():
        tensor = torch.from_numpy(array)
        batch[key] = tensor.pin_memory() if pin else tensor
    return batch


# -- pairs of texts as token ids ----------------------------------------------------------

#: distinct texts whose token ids a :class:`PairEncoder` keeps
TEXT_CACHE_SIZE = 100_000
_FEATURES = ("input_ids", "token_type_ids", "attention_mask")
# Probe texts the pair template is learnt from and checked on (words, digits, punctuation).
_PROBES = (
    ("alpha beta", "gamma"),
    ("book title (text)", "book name (text)"),
    ("Player 2nd-round pick, no. (number)", "draft #3 (number)"),
)


@dataclass(frozen=True)
class PairTemplate:
    """How a tokenizer joins two segments: the special ids before, between and after them,
    and the token type id of each of those five parts (``None``: no ``token_type_ids``)."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    types: tuple[int, int, int, int, int] | None

    def join(self, a: Sequence[int], b: Sequence[int]) -> dict[str, list[int]]:
        ids = [*self.prefix, *a, *self.middle, *b, *self.suffix]
        out = {"input_ids": ids, "attention_mask": [1] * len(ids)}
        if self.types is not None:
            parts = (self.prefix, a, self.middle, b, self.suffix)
            out["token_type_ids"] = [
                t for t, part in zip(self.types, parts, strict=True) for _ in part
            ]
        return out

    @classmethod
    def learn(cls, tokenizer: Any) -> PairTemplate | None:
        """The template of ``tokenizer``, learnt on one probe pair and checked on all of them
        against the tokenizer's own pair encoding; ``None`` when it does not reproduce it
        (pairs are then tokenised whole)."""

        def alone(text: str) -> list[int]:
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])

        a, b = _PROBES[0]
        full = tokenizer(a, b)
        if not set(full.keys()) <= set(_FEATURES):
            return None
        ids, ia, ib = list(full["input_ids"]), alone(a), alone(b)
        spans = [
            (i, j)
            for i in range(len(ids) - len(ia) + 1)
            if ids[i : i + len(ia)] == ia
            for j in range(i + len(ia), len(ids) - len(ib) + 1)
            if ids[j : j + len(ib)] == ib
        ]
        if len(spans) != 1:
            return None
        i, j = spans[0]
        bounds = [
            (0, i),
            (i, i + len(ia)),
            (i + len(ia), j),
            (j, j + len(ib)),
            (j + len(ib), len(ids)),
        ]
        types = None
        if "token_type_ids" in full:
            found = []
            for lo, hi in bounds:
                part = set(full["token_type_ids"][lo:hi]) or {0}
                if len(part) != 1:
                    return None
                found.append(part.pop())
            types = (found[0], found[1], found[2], found[3], found[4])
        template = cls(
            tuple(ids[:i]), tuple(ids[i + len(ia) : j]), tuple(ids[j + len(ib) :]), types
        )
        for p, h in _PROBES:
            expected = tokenizer(p, h)
            if template.join(alone(p), alone(h)) != {k: list(v) for k, v in expected.items()}:
                return None
        return template


class PairEncoder:
    """Token ids of (premise, hypothesis) pairs as the tokenizer would make them, with each
    distinct text tokenised once: the same column texts recur across pairs, columns and
    tables. Pairs longer than ``max_length`` are tokenised whole (the tokenizer's own
    truncation), and so is everything when the tokenizer's pair template cannot be learnt
    (:meth:`PairTemplate.learn`). Thread-safe; at most ``cache_size`` texts are kept."""

    def __init__(self, tokenizer: Any, max_length: int, cache_size: int = TEXT_CACHE_SIZE) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.cache_size = cache_size
        self.template = PairTemplate.learn(tokenizer)
        self._ids: LRUCache[str, tuple[int, ...]] = LRUCache(cache_size)

    def encode(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> dict[str, list[list[int]]]:
        """``{"input_ids": [...], "attention_mask": [...], ("token_type_ids")}``, one list
        of ids per pair, in the order of the inputs."""
        if self.template is None:
            return self._whole(premises, hypotheses)
        ids = self._text_ids([*premises, *hypotheses])
        rows = [
            self.template.join(ids[p], ids[h]) for p, h in zip(premises, hypotheses, strict=True)
        ]
        long = [i for i, row in enumerate(rows) if len(row["input_ids"]) > self.max_length]
        if long:
            whole = self._whole([premises[i] for i in long], [hypotheses[i] for i in long])
            for n, i in enumerate(long):
                rows[i] = {key: values[n] for key, values in whole.items()}
        return {key: [row[key] for row in rows] for key in rows[0]} if rows else {}

    def _whole(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> dict[str, list[list[int]]]:
        encoded = self.tokenizer(
            list(premises), list(hypotheses), truncation=True, max_length=self.max_length
        )
        return {key: [list(v) for v in encoded[key]] for key in encoded}

    def _text_ids(self, texts: Sequence[str]) -> dict[str, tuple[int, ...]]:
        distinct = list(dict.fromkeys(texts))
        found = self._ids.get_many(distinct)
        missing = [t for t in distinct if t not in found]
        if missing:
            encoded = self.tokenizer(missing, add_special_tokens=False)["input_ids"]
            fresh = {text: tuple(ids) for text, ids in zip(missing, encoded, strict=True)}
            self._ids.put_many(fresh.items())
            found.update(fresh)
        return found
