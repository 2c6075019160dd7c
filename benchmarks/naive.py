"""A naive implementation of the same CTA pipeline: the speed benchmark's reference.

Same stages, components and rules as :class:`cta.pipeline.Pipeline`: the primary entity, the
table's entity link, the product's candidate pools (retriever and reranker, dictionary,
candidate sources), the product's filters of the link and of renames
(:func:`cta.pipeline.fits_link`, :func:`cta.pipeline.renames`), the lexical ADD guards
and the domain support of retrieved names, the same NLI checkpoint and :class:`DecisionRule` — with
the association rule, each target keeps its ``add_top_k`` associated candidates by rank group,
then association, then name, before the check against every column. It is written the obvious
way: the judge is a ``transformers`` text-classification pipeline called one pair at a time,
both directions of every pair, with no deduplication, no cache and no batching, and every kept
ADD candidate is checked against every column of the table. It must reach the same decisions
(the speed benchmark fails when it does not); it exists to show how much the product's
batching, deduplication and caching buy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from cta.context import primary_entity
from cta.judge.add_rule import add_name_problem, is_new_column
from cta.judge.decide import DecisionRule
from cta.judge.nli import render
from cta.pipeline import Pipeline, fits_link, renames
from cta.results import Candidate
from cta.table import Column, Table
from cta.words import name_key

# A decision as compared between implementations: per column, RPL names and ADD names.
Decisions = dict[str, tuple[list[str], list[str]]]


class SinglePairJudge(Protocol):
    """What the naive pipeline asks of its judge: one directed pair at a time."""

    pairs: int

    def both(self, premise: str, hypothesis: str) -> tuple[float, float]: ...

    def one(self, premise: str, hypothesis: str) -> float: ...

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray: ...

    def entailment_logits(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> np.ndarray: ...


class NaiveEntailment:
    """P(entailment) and P(neutral) of one pair at a time through ``transformers.pipeline``."""

    def __init__(self, model_path: str, max_length: int = 64) -> None:
        from transformers import pipeline

        self.classifier: Any = pipeline(
            "text-classification", model=model_path, top_k=None, device=-1
        )
        labels = [str(label) for label in (self.classifier.model.config.id2label or {}).values()]
        self.entailment_label = next(lb for lb in labels if lb.strip().lower() == "entailment")
        self.neutral_label = next((lb for lb in labels if lb.strip().lower() == "neutral"), None)
        self.max_length = max_length
        self.pairs = 0

    def _rows(self, premise: str, hypothesis: str, function: str) -> dict[str, float]:
        self.pairs += 1
        out = self.classifier(
            {"text": premise, "text_pair": hypothesis},
            function_to_apply=function,
            truncation=True,
            max_length=self.max_length,
        )
        rows = out[0] if out and isinstance(out[0], list) else out
        return {str(r["label"]): float(r["score"]) for r in rows}

    def both(self, premise: str, hypothesis: str) -> tuple[float, float]:
        """(P(entailment), P(neutral)) of a single pair (NaN neutral without that class)."""
        rows = self._rows(premise, hypothesis, "softmax")
        neutral = rows[self.neutral_label] if self.neutral_label is not None else float("nan")
        return rows[self.entailment_label], neutral

    def one(self, premise: str, hypothesis: str) -> float:
        """P(entailment | premise ⇒ hypothesis) of a single pair."""
        return self.both(premise, hypothesis)[0]

    # The EntailmentModel protocol, for the zero-shot entity of unnamed tables.
    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return np.array([self.one(p, h) for p, h in zip(premises, hypotheses, strict=True)])

    def entailment_logits(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return np.array(
            [
                self._rows(p, h, "none")[self.entailment_label]
                for p, h in zip(premises, hypotheses, strict=True)
            ]
        )


class NaivePipeline:
    """CTA decisions one table, one column, one pair at a time."""

    def __init__(self, pipeline: Pipeline, judge: SinglePairJudge) -> None:
        self.pipeline = pipeline
        self.settings = pipeline.settings
        self.judge = judge

    def perturb(
        self, table: Table, seed: int = 0, max_candidates: int | None = None
    ) -> tuple[Decisions, dict[str, Any]]:
        """Decisions of every target column, and the scores behind them (for diffs)."""
        settings = self.settings
        rule = DecisionRule.from_settings(settings)
        entity, _ = primary_entity(
            table,
            self.judge,
            use_name=settings.entity_from_name,
            hypothesis_template=settings.entity_hypothesis,
            max_name_words=settings.entity_name_max_words,
        )
        # The link and the pools are the product's (the judge's work is what this baseline
        # measures); the table is linked once, as the product does.
        link = self.pipeline.link(table, entity)
        report = self.pipeline._candidates(table, entity, seed, link)
        pools = {col.column: col for col in report.columns}
        own = {name_key(c.name) for c in table.columns}
        names = table.column_names
        same_meaning = self.pipeline.same_meaning
        part_of = self.pipeline.part_of
        linker = self.pipeline.linker if link.schema_ is not None else None

        def text(name: str, type_: str) -> str:
            return render(settings.judge_template, entity, name, type_)

        decisions: Decisions = {}
        scores: dict[str, Any] = {}
        for target in table.targets():
            pool = pools[target.name]
            rpl_cands = [
                c
                for c in _union(pool.equivalent, pool.retrieved, pool.dictionary, own=own)
                if renames(link, linker, target, c)
            ]
            add_cands = [
                c
                for c in _union(pool.associated, pool.retrieved, own=own)
                if fits_link(link, linker, c, new_column=True)
                and add_name_problem(c.name, c.source == "retriever", names, entity) is None
                and is_new_column(c.name, names, entity, same_meaning, part_of)
                # domain support: a retrieved name from a table of the query's domain only
                and (
                    c.shared_columns is None or c.shared_columns >= settings.add_min_shared_columns
                )
            ]
            if self.pipeline.add_source is not None:
                add_cands = self.pipeline.add_source.add_candidates(
                    table, target, settings.rerank_top_k
                )
            t_text = text(target.name, target.type.value)

            replace: list[tuple[float, str]] = []
            for cand in rpl_cands:
                c_text = text(cand.name, cand.type.value)
                e1, e2 = self.judge.one(t_text, c_text), self.judge.one(c_text, t_text)
                scores[f"rpl|{target.name}|{cand.name}"] = (e1, e2)
                if rule.is_rpl(e1, e2):
                    # the product rounds scores to 6 decimals before ordering RPL names
                    replace.append((-min(round(e1, 6), round(e2, 6)), cand.name))

            kept = add_cands
            if rule.add_association is not None:
                kept = self._associated(target, add_cands, rule, text, scores)
            add = [
                cand.name
                for cand in kept
                if self._new_against_every_column(table.columns, cand, rule, text, scores)
            ]
            rpl = [name for _, name in sorted(replace)]
            if max_candidates:
                rpl, add = rpl[:max_candidates], add[:max_candidates]
            decisions[target.name] = (rpl, add)
        return decisions, scores

    def _associated(
        self,
        target: Column,
        cands: Sequence[Candidate],
        rule: DecisionRule,
        text: Any,
        scores: dict[str, Any],
    ) -> list[Candidate]:
        """The association rule: the candidates not equivalent to their target and associated
        with it (P(neutral) both ways, the candidate read in the target's type), by rank group
        (none: last), then most associated first (unknown: last), then by name; the best
        ``add_top_k``."""
        t_text = text(target.name, target.type.value)
        kept: list[tuple[tuple[int, int, float, str], Candidate]] = []
        for cand in cands:
            c_text = text(cand.name, cand.type.value)
            e1, e2 = self.judge.one(t_text, c_text), self.judge.one(c_text, t_text)
            as_target = text(cand.name, target.type.value)
            n1, n2 = self.judge.both(t_text, as_target)[1], self.judge.both(as_target, t_text)[1]
            value = (n1 + n2) / 2
            scores[f"association|{target.name}|{cand.name}"] = (e1, e2, value)
            if not (rule.is_add_against(e1, e2) and rule.is_associated(value)):
                continue
            group = cand.rank_group if cand.rank_group is not None else 1 << 30
            order = (0, -value) if value == value else (1, 0.0)
            kept.append(((group, order[0], order[1], cand.name), cand))
        kept.sort(key=lambda item: item[0])
        return [cand for _, cand in kept[: rule.add_top_k]]

    def _new_against_every_column(
        self,
        columns: Sequence[Column],
        cand: Candidate,
        rule: DecisionRule,
        text: Any,
        scores: dict[str, Any],
    ) -> bool:
        """The ADD rule: equivalent to no column of the table, both directions of each."""
        c_text = text(cand.name, cand.type.value)
        ok = True
        for column in columns:
            o_text = text(column.name, column.type.value)
            e1, e2 = self.judge.one(o_text, c_text), self.judge.one(c_text, o_text)
            scores[f"add|{column.name}|{cand.name}"] = (e1, e2)
            ok = ok and rule.is_add_against(e1, e2)
        return ok


def _union(*lists: Sequence[Candidate], own: set[str]) -> list[Candidate]:
    """The candidates of all lists, first of each normalised name, none the table has."""
    seen: set[str] = set()
    out = []
    for cand in (c for candidates in lists for c in candidates):
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
