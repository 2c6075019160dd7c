"""A naive implementation of the same CTA pipeline: the speed benchmark's reference.

Same stages and components as :class:`cta.pipeline.Pipeline` (context, the product's candidate
pools — retriever and reranker, dictionary, candidate sources —, the same NLI checkpoint and
decision rule, the lexical ADD guard), written the obvious way: the judge is
a ``transformers`` text-classification pipeline called one pair at a time, with no
deduplication, no cache and no batching, and every ADD candidate is checked against every
column of the table. It must reach the same decisions; it exists to show how much the
product's batching, deduplication and caching buy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cta.context import primary_entity
from cta.judge.decide import is_add_against, is_new_column, is_rpl
from cta.judge.nli import render
from cta.pipeline import Pipeline
from cta.results import Candidate
from cta.table import Table
from cta.words import name_key

# A decision as compared between implementations: per column, RPL names and ADD names.
Decisions = dict[str, tuple[list[str], list[str]]]


class NaiveEntailment:
    """P(entailment) of one pair at a time through ``transformers.pipeline``."""

    def __init__(self, model_path: str, max_length: int = 64) -> None:
        from transformers import pipeline

        self.classifier: Any = pipeline(
            "text-classification", model=model_path, top_k=None, device=-1
        )
        labels = (self.classifier.model.config.id2label or {}).values()
        self.entailment_label = next(
            str(label) for label in labels if str(label).strip().lower() == "entailment"
        )
        self.max_length = max_length
        self.pairs = 0

    def _scores(self, premise: str, hypothesis: str, function: str) -> float:
        self.pairs += 1
        out = self.classifier(
            {"text": premise, "text_pair": hypothesis},
            function_to_apply=function,
            truncation=True,
            max_length=self.max_length,
        )
        rows = out[0] if out and isinstance(out[0], list) else out
        return float(next(r["score"] for r in rows if r["label"] == self.entailment_label))

    def one(self, premise: str, hypothesis: str) -> float:
        """P(entailment | premise ⇒ hypothesis) of a single pair."""
        return self._scores(premise, hypothesis, "softmax")

    # The EntailmentModel protocol, for the zero-shot entity of unnamed tables.
    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return np.array([self.one(p, h) for p, h in zip(premises, hypotheses, strict=True)])

    def entailment_logits(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return np.array(
            [self._scores(p, h, "none") for p, h in zip(premises, hypotheses, strict=True)]
        )


class NaivePipeline:
    """CTA decisions one table, one column, one pair at a time."""

    def __init__(self, pipeline: Pipeline, judge: NaiveEntailment) -> None:
        self.pipeline = pipeline
        self.settings = pipeline.settings
        self.judge = judge

    def perturb(self, table: Table, seed: int = 0) -> tuple[Decisions, dict[str, Any]]:
        """Decisions of every target column, and the scores behind them (for diffs)."""
        settings = self.settings
        entity, _ = primary_entity(
            table,
            self.judge,
            use_name=settings.entity_from_name,
            hypothesis_template=settings.entity_hypothesis,
            max_name_words=settings.entity_name_max_words,
        )
        # The pools are the product's (the judge's work is what this baseline measures).
        report = self.pipeline.candidates(table, seed, entity=entity)
        pools = {col.column: col for col in report.columns}
        own = {name_key(c.name) for c in table.columns}
        same_meaning = self.pipeline.same_meaning

        def text(name: str, type_: str) -> str:
            return render(settings.judge_template, entity, name, type_)

        decisions: Decisions = {}
        scores: dict[str, Any] = {}
        for target in table.targets():
            pool = pools[target.name]
            rpl_cands = _union([*pool.equivalent, *pool.retrieved], pool.dictionary, own)
            add_cands = [
                c
                for c in _union(pool.associated, pool.retrieved, own)
                if is_new_column(c.name, table.column_names, entity, same_meaning)
                # domain support: a retrieved name from a table of the query's domain only
                and (
                    c.source != "retriever"
                    or (c.shared_columns or 0) >= settings.add_min_shared_columns
                )
            ]
            t_text = text(target.name, target.type.value)

            replace: list[tuple[float, str]] = []
            for cand in rpl_cands:
                c_text = text(cand.name, cand.type.value)
                e1, e2 = self.judge.one(t_text, c_text), self.judge.one(c_text, t_text)
                scores[f"rpl|{target.name}|{cand.name}"] = (e1, e2)
                if is_rpl(e1, e2, settings.rpl_threshold):
                    # the product rounds scores to 6 decimals before ordering RPL names
                    replace.append((-round(min(e1, e2), 6), cand.name))
            add: list[str] = []
            for cand in add_cands:
                c_text = text(cand.name, cand.type.value)
                ok = True
                for column in table.columns:
                    o_text = text(column.name, column.type.value)
                    e1, e2 = self.judge.one(o_text, c_text), self.judge.one(c_text, o_text)
                    scores[f"add|{column.name}|{cand.name}"] = (e1, e2)
                    ok = ok and is_add_against(e1, e2, settings.add_threshold)
                if ok:
                    add.append(cand.name)
            decisions[target.name] = ([name for _, name in sorted(replace)], add)
        return decisions, scores


def _union(
    first: Sequence[Candidate], second: Sequence[Candidate], own: set[str]
) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for cand in [*first, *second]:
        key = name_key(cand.name)
        if key not in seen and key not in own:
            seen.add(key)
            out.append(cand)
    return out


def decisions_of(result: Any) -> Decisions:
    """The comparable decisions of a :class:`cta.results.PerturbationResult`."""
    return {
        c.column: ([d.name for d in c.replace], [d.name for d in c.add]) for c in result.columns
    }
