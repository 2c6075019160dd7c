"""Which layers int8 quantises, and at what cost in verdicts (issue 15, the CPU option).

On judge pairs built from WTQ tables (each column against the other columns of its table
and against columns of other tables, in the judge's template: the kinds of pairs the
pipeline sends), the fp32 judge is compared with variants:

* int8 dynamic quantisation (weights per tensor or per output channel) of all the
  transformer blocks' linear layers, of the feed-forward layers only, or of all but the
  last block;
* bf16 autocast on the CPU.

For each: forward-only pairs/s (batch 64, length-sorted), mean |Δp|, and the share of pairs
whose side of each threshold changes (RPL: p ≥ 0.65, ADD: p ≤ 0.45) — a verdict uses two
such scores, so a pair's verdict changes at most with the sum. Writes
``benchmarks/results/judge_precision.json``::

    .venv/bin/python -m benchmarks.judge_precision [--pairs 6000]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cta.judge.nli import DEFAULT_TEMPLATE, HFEntailmentModel, quantise_int8, render
from cta.settings import get_settings
from cta.table import Table

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "benchmarks" / "results" / "judge_precision.json"
DATA = ROOT.parent / "shared" / "data"
RPL, ADD = 0.65, 0.45


def judge_pairs(count: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``count`` directed pairs: half within a table, half across two tables."""
    from retriever.corpus import Corpus, CorpusSpec

    tables: list[Table] = [
        t
        for t in Corpus(CorpusSpec.parse(f"csv-dir:{DATA / 'wtq' / 'csv'}"))
        if 3 <= len(t.columns) <= 12
    ]
    tables.sort(key=lambda t: t.id or "")
    rng = random.Random(seed)
    premises, hypotheses = [], []
    while len(premises) < count:
        table = rng.choice(tables)
        entity = (table.name or "").split("/")[-1].removesuffix(".csv")
        entity = entity if any(ch.isalpha() for ch in entity) else "item"
        a = rng.choice(table.columns)
        b = rng.choice(rng.choice(tables).columns if rng.random() < 0.5 else table.columns)
        if a.name == b.name:
            continue
        premises.append(render(DEFAULT_TEMPLATE, entity, a.name, a.type.value))
        hypotheses.append(render(DEFAULT_TEMPLATE, entity, b.name, b.type.value))
    return premises, hypotheses


def _quantised(model: Any, keep: Callable[[str], bool], per_channel: bool) -> Any:
    """A quantised copy of ``model`` (the product's :func:`quantise_int8`, other layers)."""
    return quantise_int8(model, keep, per_channel)


def _time_forward(judge: HFEntailmentModel, premises: list[str], hypotheses: list[str]) -> float:
    began = time.perf_counter()
    judge.entailment(premises, hypotheses)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=6000)
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)

    settings = get_settings()
    path = settings.resolved_judge_model()
    premises, hypotheses = judge_pairs(args.pairs)
    fp32 = HFEntailmentModel(
        path, device="cpu", max_length=settings.judge_max_length, runtime="torch"
    )  # torch: the int8 variants below quantise its module
    base = fp32.model
    _time_forward(fp32, premises[:256], hypotheses[:256])  # warm
    fp32_seconds = _time_forward(fp32, premises, hypotheses)
    exact = fp32.entailment(premises, hypotheses)
    depth = int(base.config.num_hidden_layers)

    variants: dict[str, Callable[[], Any]] = {
        "int8 blocks, per tensor": lambda: _quantised(base, lambda n: ".layer." in n, False),
        "int8 blocks, per channel": lambda: _quantised(base, lambda n: ".layer." in n, True),
        "int8 feed-forward only, per channel": lambda: _quantised(
            base,
            lambda n: (
                ".layer." in n
                and ("intermediate" in n or n.endswith("output.dense"))
                and "attention" not in n
            ),
            True,
        ),
        "int8 all but the last block, per channel": lambda: _quantised(
            base, lambda n: ".layer." in n and f".layer.{depth - 1}." not in n, True
        ),
        "int8 q, k, v and feed-forward up-projection, per channel": lambda: _quantised(
            base,
            lambda n: ".layer." in n and not n.endswith(".output.dense"),
            True,
        ),
        "int8 all but the feed-forward down-projection, per channel": lambda: _quantised(
            base, lambda n: ".layer." in n and ("attention" in n or "intermediate" in n), True
        ),
    }
    rows: dict[str, Any] = {}

    def bf16_weights() -> Any:
        import copy

        return copy.deepcopy(base).to(torch.bfloat16)

    for name, build in [
        *variants.items(),
        ("bf16 autocast", lambda: base),
        ("bf16 weights", bf16_weights),
    ]:
        fp32.model = build()
        fp32.precision = "bf16" if name == "bf16 autocast" else "fp32"
        _time_forward(fp32, premises[:256], hypotheses[:256])
        seconds = _time_forward(fp32, premises, hypotheses)
        approx = fp32.entailment(premises, hypotheses)
        rows[name] = {
            "speedup_vs_fp32": round(fp32_seconds / seconds, 2),
            "mean_abs_delta": round(float(np.mean(np.abs(approx - exact))), 5),
            "rpl_side_changed": round(float(np.mean((approx >= RPL) != (exact >= RPL))), 5),
            "add_side_changed": round(float(np.mean((approx <= ADD) != (exact <= ADD))), 5),
        }
        print(name, rows[name], flush=True)
    fp32.model, fp32.precision = base, "fp32"
    result = {
        "judge": path,
        "pairs": len(premises),
        "torch_threads": torch.get_num_threads(),
        "fp32_pairs_per_second": round(len(premises) / fp32_seconds, 1),
        "variants": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
