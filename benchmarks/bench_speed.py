"""Speed of the full pipeline on WTQ tables.

On a seeded choice of WTQ tables with 3–10 columns, warm (a few tables run first):

* ours: tables/second through :meth:`Pipeline.perturb_many`, judge pairs per table, share of
  wall time inside the judge model (tokenise + forward) and inside retrieval, peak RSS;
* raw: the judge model's forward passes alone, timed inside that same run — the pipeline's
  own batches, batch size, canonical padding and torch threads (:class:`ForwardRecorder`):
  the limit on this machine if nothing but the model ran;
* naive: :mod:`benchmarks.naive` on a subset of the same tables, which must reach the same
  decisions (the run fails when they differ, or when there is none to compare); speedup =
  naive time / ours time on that subset.

efficiency = (model pairs ours sent / ours wall time) / raw pairs per second = forward
seconds / wall seconds, at most 1.

Two more comparisons, on the same tables and the same process:

* ``add_waves``: the ADD check most-similar-first in waves (the default) against every
  column at once — byte-identical outputs, model pairs and seconds of each;
* ``precisions``: the judge at bf16 (autocast) and int8 (dynamic quantisation) against the
  fp32 run — speed ratio, and how many of the fp32 pipeline's verdicts stay identical: of
  every (table, column, candidate, RPL/ADD) the pipeline judged, the share whose verdict
  is the same, and the agreement of the proposals themselves (|A ∩ B| / |A ∪ B|).
"""

from __future__ import annotations

import dataclasses
import os
import random
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_quality import CheckedRetriever
from benchmarks.naive import Decisions, NaiveEntailment, NaivePipeline, decisions_of
from cta.judge.nli import (
    BidirectionalJudge,
    HFEntailmentModel,
    RecheckedEntailment,
    entailment_model,
)
from cta.pipeline import Pipeline
from cta.results import PerturbationResult, PerturbOptions
from cta.table import Table

SEED = 0
WARM_TABLES = 2
RAW_SAMPLE = 5000
#: CPU options compared with fp32: (precision, fp32 re-check margin near the thresholds)
PRECISIONS: tuple[tuple[str, float], ...] = (("bf16", 0.0), ("int8", 0.0), ("int8", 0.1))


class ForwardRecorder:
    """Records the judge model's work while the pipeline runs, as it runs it.

    Every pair the model scores goes through :meth:`HFEntailmentModel.logits` (the judge's
    pairs and the zero-shot entity prediction's alike): its calls give the pairs the model
    was sent and the time in the model (tokenise + forward). Its forward pass (torch or ONNX
    Runtime, :mod:`cta.runtimes`) is wrapped too,
    so each forward pass of the run's own batches — the pipeline's threads, batch size and
    canonical padding — is timed alone: the raw forward figure. Forward time is a part of
    the run's wall time, so ours ÷ raw (efficiency) cannot exceed 1.
    """

    def __init__(self, model: HFEntailmentModel) -> None:
        self.model = model
        self.pairs = 0
        self.calls = 0
        self.seconds = 0.0
        self.batches = 0
        self.padded_rows = 0
        self.forward_seconds = 0.0
        self.threads = 0
        self._forward: Any = None

    def __enter__(self) -> ForwardRecorder:
        model = self.model
        forward = self._forward = model.forward
        logits = model.logits
        self.threads = _threads(model)

        def recorded_logits(premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
            began = time.perf_counter()
            out = logits(premises, hypotheses)
            self.seconds += time.perf_counter() - began
            self.pairs += len(premises)
            self.calls += 1
            return out

        def timed_forward(batch: dict[str, np.ndarray]) -> np.ndarray:
            # the logits come back as a host array, so a GPU's work is finished here
            began = time.perf_counter()
            out = forward(batch)
            self.forward_seconds += time.perf_counter() - began
            self.batches += 1
            self.padded_rows += int(batch["input_ids"].shape[0])
            return out

        model.logits = recorded_logits  # type: ignore[method-assign]
        model.forward = timed_forward
        return self

    def __exit__(self, *exc: object) -> None:
        del self.model.logits  # the class's method again
        self.model.forward = self._forward
        if _threads(self.model) != self.threads:
            raise RuntimeError("the model's threads changed during the timed run")

    def raw(self) -> dict[str, Any]:
        """The raw forward figure: pairs per second of forward passes alone."""
        return {
            "pairs": self.pairs,
            "batches": self.batches,
            "padded_rows": self.padded_rows,
            "batch_size": self.model.batch_size,
            "runtime": self.model.runtime,
            "threads": self.threads,
            "forward_seconds": round(self.forward_seconds, 3),
            "pairs_per_second": (
                round(self.pairs / self.forward_seconds, 1) if self.forward_seconds else None
            ),
        }


def _threads(model: HFEntailmentModel) -> int:
    """The threads the model's forward passes use: torch's, or ONNX Runtime's session's
    (0 there = one per core, reported as the core count)."""
    if model.runtime == "torch":
        import torch

        return int(torch.get_num_threads())
    return int(model.model.threads or os.cpu_count() or 1)


def wtq_tables(data_dir: Path, count: int, seed: int = SEED) -> list[Table]:
    """A seeded choice of ``count`` WTQ tables with 3–10 columns, with their corpus ids."""
    from retriever.corpus import Corpus, CorpusSpec

    tables = [
        t
        for t in Corpus(CorpusSpec.parse(f"csv-dir:{data_dir / 'wtq' / 'csv'}"))
        if 3 <= len(t.columns) <= 10
    ]
    tables.sort(key=lambda t: t.id or "")
    return random.Random(seed).sample(tables, min(count, len(tables)))


def raw_forward(
    model: Any, premises: Sequence[str], hypotheses: Sequence[str], sample: int = RAW_SAMPLE
) -> dict[str, Any]:
    """Batched forward throughput of the judge's model on these pairs (tokenised first,
    length-sorted batches padded to their longest), in the model's runtime: the judge
    benchmark's figure. The speed benchmark times the pipeline's own forward passes instead
    (:class:`ForwardRecorder`).

    A seeded sample of at most ``sample`` pairs is timed: throughput, not a total, is wanted.
    """
    from cta.judge.batching import pad_arrays

    if len(premises) > sample:
        rows = sorted(random.Random(SEED).sample(range(len(premises)), sample))
        premises = [premises[i] for i in rows]
        hypotheses = [hypotheses[i] for i in rows]

    encoded = model.tokenizer(
        list(premises), list(hypotheses), truncation=True, max_length=model.max_length
    )
    ids = encoded["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
    pad_id = model.tokenizer.pad_token_id or 0
    batches = [
        pad_arrays(encoded, order[start : start + model.batch_size], pad_id)
        for start in range(0, len(order), model.batch_size)
    ]
    seconds = 0.0
    for batch in batches:
        began = time.perf_counter()
        model.forward(batch)
        seconds += time.perf_counter() - began
    return {
        "pairs": len(ids),
        "batch_size": model.batch_size,
        "runtime": model.runtime,
        "forward_seconds": round(seconds, 3),
        "pairs_per_second": round(len(ids) / seconds, 1) if seconds else None,
    }


def device_info(judge: BidirectionalJudge) -> dict[str, Any]:
    """The device the judge runs on, in words (GPU name on CUDA)."""
    model = judge.model
    device = str(getattr(model, "device_type", "cpu"))
    info: dict[str, Any] = {
        "device": device,
        "runtime": getattr(model, "runtime", None),
        "precision": getattr(model, "precision", "fp32"),
        "batch_size": getattr(model, "batch_size", None),
    }
    if device.startswith("cuda"):
        import torch

        info["gpu"] = torch.cuda.get_device_name(0)
    else:
        from cta.devices import cpu_features

        info["cpu"] = _cpu_model()
        info["cpu_features"] = cpu_features()
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="ignore") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


Verdict = tuple[str, str, str, str]


def verdicts(
    pipeline: Pipeline, tables: Sequence[Table], results: Sequence[PerturbationResult]
) -> tuple[set[Verdict], set[Verdict]]:
    """Every (table, column, kind, candidate) the pipeline judged, and those it proposed."""
    judged: set[Verdict] = set()
    proposed: set[Verdict] = set()
    for i, (table, result) in enumerate(zip(tables, results, strict=True)):
        plan = pipeline._plan(table, SEED)
        tid = table.id or str(i)
        for column in plan.rpl:
            judged |= {(tid, column, "rpl", c.name) for c in plan.rpl[column]}
            judged |= {(tid, column, "add", c.name) for c in plan.add[column]}
        for col in result.columns:
            proposed |= {(tid, col.column, "rpl", d.name) for d in col.replace}
            proposed |= {(tid, col.column, "add", d.name) for d in col.add}
    return judged, proposed


def compare_precisions(
    pipeline: Pipeline,
    tables: Sequence[Table],
    fp32_results: Sequence[PerturbationResult],
    fp32_seconds: float,
    precisions: Sequence[tuple[str, float]] = PRECISIONS,
) -> dict[str, Any]:
    """The judge at other CPU precisions against fp32 on the same tables (see the module
    docstring): speed ratio and identical verdicts."""
    judge = pipeline.judge_model
    assert isinstance(judge, BidirectionalJudge)
    base = judge.model
    if not isinstance(base, HFEntailmentModel):
        raise TypeError("precisions are compared on the shipped judge model (HFEntailmentModel)")
    judged, fp32_proposed = verdicts(pipeline, tables, fp32_results)
    out: dict[str, Any] = {"tables": len(tables), "fp32_seconds": round(fp32_seconds, 3)}
    for precision, margin in precisions:
        settings = pipeline.settings.model_copy(
            update={
                "device": "cpu",
                "judge_precision": precision,
                "judge_recheck_margin": margin,
                "judge_batch_size": base.batch_size,
                "judge_max_length": base.max_length,
            }
        )
        model = entailment_model(settings, str(base.name_or_path))
        other = BidirectionalJudge(model, template=judge.template, cache_size=judge.cache_size)
        variant = dataclasses.replace(pipeline, judge_model=other)
        variant.perturb_many(tables[:WARM_TABLES], PerturbOptions(seed=SEED))
        other.clear_cache()
        if isinstance(model, RecheckedEntailment):
            model.scored = model.rechecked = 0
        began = time.perf_counter()
        results = variant.perturb_many(tables, PerturbOptions(seed=SEED))
        seconds = time.perf_counter() - began
        _, proposed = verdicts(variant, tables, results)
        flipped = proposed ^ fp32_proposed
        name = f"{precision} + fp32 re-check ±{margin}" if margin else precision
        out[name] = {
            "rechecked_share": (
                round(model.rechecked / max(1, model.scored), 4)
                if isinstance(model, RecheckedEntailment)
                else None
            ),
            "seconds": round(seconds, 3),
            "speedup_vs_fp32": round(fp32_seconds / seconds, 2),
            "verdicts_judged": len(judged),
            "verdicts_identical": round(1 - len(flipped) / max(1, len(judged)), 4),
            "proposals_fp32": len(fp32_proposed),
            "proposals": len(proposed),
            "proposals_agreement": round(
                len(proposed & fp32_proposed) / max(1, len(proposed | fp32_proposed)), 4
            ),
            "lost": sorted(fp32_proposed - proposed)[:10],
            "gained": sorted(proposed - fp32_proposed)[:10],
        }
    return out


def compare_waves(pipeline: Pipeline, tables: Sequence[Table]) -> dict[str, Any]:
    """The ADD check in waves (default) against every column at once, cold judge cache."""
    judge = pipeline.judge_model
    assert isinstance(judge, BidirectionalJudge)
    out: dict[str, Any] = {"tables": len(tables)}
    dumps = {}
    for waves in (False, True):
        settings = pipeline.settings.model_copy(update={"judge_add_waves": waves})
        variant = dataclasses.replace(pipeline, settings=settings)
        judge.clear_cache()
        judge.reset_stats()
        began = time.perf_counter()
        results = variant.perturb_many(tables, PerturbOptions(seed=SEED))
        seconds = time.perf_counter() - began
        dumps[waves] = [r.model_dump_json() for r in results]
        out["waves" if waves else "all_at_once"] = {
            "seconds": round(seconds, 3),
            "model_pairs": judge.stats.model_pairs,
            "model_calls": judge.stats.model_calls,
        }
    out["identical_outputs"] = dumps[True] == dumps[False]
    out["pairs_saved"] = round(
        1 - out["waves"]["model_pairs"] / max(1, out["all_at_once"]["model_pairs"]), 4
    )
    return out


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run(
    pipeline: Pipeline,
    data_dir: Path,
    tables: int = 100,
    subset: int = 10,
    precision_tables: int = 30,
) -> dict[str, Any]:
    """Ours vs raw forward vs naive; see the module docstring."""
    import torch

    load_before = os.getloadavg()
    chosen = wtq_tables(data_dir, tables + WARM_TABLES)
    warm, timed = chosen[:WARM_TABLES], chosen[WARM_TABLES:]
    judge = pipeline.judge_model
    if not isinstance(judge, BidirectionalJudge):
        raise TypeError("the speed benchmark measures the shipped judge (BidirectionalJudge)")
    checked = CheckedRetriever(pipeline.retriever) if pipeline.retriever is not None else None
    pipeline.retriever = checked
    options = PerturbOptions(seed=SEED)

    pipeline.perturb_many(warm, options)  # warm: models loaded, first-call costs paid

    # -- ours, all tables, with the raw forward passes timed inside the same run ---------------
    model = judge.model
    if not isinstance(model, HFEntailmentModel):
        raise TypeError("the speed benchmark measures the shipped judge model (HFEntailmentModel)")
    judge.clear_cache()
    judge.reset_stats()
    retrieval_before = checked.seconds if checked else 0.0
    with ForwardRecorder(model) as recorder:
        began = time.perf_counter()
        results = pipeline.perturb_many(timed, options)
        wall = time.perf_counter() - began
    stats = judge.stats.as_dict()
    retrieval = (checked.seconds if checked else 0.0) - retrieval_before
    # Model work = the judge's pairs + the zero-shot entity predictions' (tables whose name
    # is a title, not an entity): every pair the model scored.
    entity_pairs = recorder.pairs - stats["model_pairs"]
    ours = {
        "tables": len(timed),
        "columns": sum(len(t.columns) for t in timed),
        "wall_seconds": round(wall, 3),
        "tables_per_second": round(len(timed) / wall, 3),
        "pairs_requested_per_table": round(stats["pairs_requested"] / len(timed), 1),
        "model_pairs_per_table": round(recorder.pairs / len(timed), 1),
        "entity_prediction_pairs_per_table": round(entity_pairs / len(timed), 1),
        "judged_pairs_per_second": round(recorder.pairs / wall, 1),
        "model_share": round(recorder.seconds / wall, 4),
        "retrieval_share": round(retrieval / wall, 4),
        "rpl_per_table": round(
            sum(len(c.replace) for r in results for c in r.columns) / len(timed), 2
        ),
        "add_per_table": round(sum(len(c.add) for r in results for c in r.columns) / len(timed), 2),
        "judge_stats": stats,
        "peak_rss_mb": _peak_rss_mb(),
    }

    # -- raw forward: the same run's forward passes alone --------------------------------------
    raw = recorder.raw()
    efficiency = round(recorder.forward_seconds / wall, 3) if recorder.forward_seconds else None

    # -- naive vs ours on the subset -----------------------------------------------------------
    sub = timed[:subset]
    judge.clear_cache()
    judge.reset_stats()
    began = time.perf_counter()
    ours_sub = pipeline.perturb_many(sub, options)
    ours_sub_seconds = time.perf_counter() - began
    ours_sub_pairs = judge.stats.model_pairs

    naive_judge = NaiveEntailment(
        str(getattr(judge.model, "name_or_path", pipeline.settings.resolved_judge_model())),
        max_length=pipeline.settings.judge_max_length,
    )
    naive = NaivePipeline(pipeline, naive_judge)
    naive.perturb(warm[0], SEED)  # warm the HF pipeline too
    naive_judge.pairs = 0
    began = time.perf_counter()
    naive_out = [naive.perturb(t, SEED) for t in sub]
    naive_seconds = time.perf_counter() - began

    mismatches = decision_mismatches(sub, ours_sub, naive_out)
    compared = sum(
        len(rpl) + len(add) for decisions, _ in naive_out for rpl, add in decisions.values()
    )
    waves = compare_waves(pipeline, sub)
    device = device_info(judge)
    precisions = (
        compare_precisions(
            pipeline,
            timed[:precision_tables],
            results[:precision_tables],
            _seconds_for(pipeline, timed[:precision_tables]),
        )
        if device["device"] == "cpu"
        else {"skipped": "int8 and CPU bf16 are CPU options"}
    )
    pipeline.retriever = checked.inner if checked else None
    failed = identical_or_failure(len(sub), mismatches, compared)
    return {
        **({"failed": failed} if failed else {}),
        "device": device,
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "judge_model": str(getattr(judge.model, "name_or_path", "")),
        "ours": ours,
        "raw_forward": raw,
        "efficiency": efficiency,
        "subset": {
            "tables": len(sub),
            "ours_seconds": round(ours_sub_seconds, 3),
            "ours_model_pairs": ours_sub_pairs,
            "naive_seconds": round(naive_seconds, 3),
            "naive_model_pairs": naive_judge.pairs,
            "speedup": round(naive_seconds / ours_sub_seconds, 2),
            "decisions_compared": compared,
            "identical_decisions": not mismatches,
            "mismatches": mismatches,
        },
        "add_waves": waves,
        "precisions": precisions,
    }


def decision_mismatches(
    tables: Sequence[Table],
    ours: Sequence[PerturbationResult],
    naive: Sequence[tuple[Decisions, dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The tables on which the naive reference and the pipeline decide differently: the
    differing columns of each, and the naive scores of the names in question."""
    mismatches = []
    for table, result, (decisions, scores) in zip(tables, ours, naive, strict=True):
        mine = decisions_of(result)
        if mine == decisions:
            continue
        mismatches.append(
            {
                "table": table.id,
                "ours": {c: mine[c] for c in sorted(mine) if mine[c] != decisions.get(c)},
                "naive": {
                    c: decisions[c] for c in sorted(decisions) if mine.get(c) != decisions[c]
                },
                "naive_scores": {
                    k: v
                    for k, v in scores.items()
                    if any(n in k for c in mine for n in _diff(mine.get(c), decisions.get(c)))
                },
            }
        )
    return mismatches


def identical_or_failure(tables: int, mismatches: Sequence[dict[str, Any]], compared: int) -> str:
    """Why the speed-up cannot stand (one line), or "" when naive and ours made the same,
    non-empty, decisions: a speed-up between different algorithms compares nothing."""
    if mismatches:
        names = ", ".join(str(m["table"]) for m in mismatches)
        return (
            f"naive and ours decide differently on {len(mismatches)} of {tables} tables "
            f"({names}); the speed-up compares different algorithms"
        )
    if not compared:
        return f"naive and ours proposed no name on {tables} tables: nothing was compared"
    return ""


def _seconds_for(pipeline: Pipeline, tables: Sequence[Table]) -> float:
    """Wall seconds of the (fp32) pipeline on ``tables`` with a cold judge cache."""
    judge = pipeline.judge_model
    assert isinstance(judge, BidirectionalJudge)
    judge.clear_cache()
    began = time.perf_counter()
    pipeline.perturb_many(tables, PerturbOptions(seed=SEED))
    return time.perf_counter() - began


def _diff(a: Any, b: Any) -> list[str]:
    names_a = set((a or ([], []))[0]) | set((a or ([], []))[1])
    names_b = set((b or ([], []))[0]) | set((b or ([], []))[1])
    return sorted(names_a ^ names_b)
