"""The CTA pipeline: context → retrieve → rerank → dictionary → judge → decide → apply.

:class:`Pipeline` is the one public surface the CLI, the HTTP service and the batch jobs use.
It owns no model code itself: each stage is a component picked by name in
:class:`~cta.settings.Settings` and reached through the contracts of :mod:`cta.components`.
Judge work is batched across all columns of all tables of a call, so the pipeline spends its
time in model forward passes rather than in Python. It is one file because the stages, the
judge's two passes and the decision share one private plan per table (``_TablePlan``,
``PairKey``): split, each part would reach into the others' internals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from cta import registry
from cta.apply.sample import sample_perturbations
from cta.components import (
    AddCandidates,
    CandidateSource,
    ColumnContext,
    DictionaryReplacer,
    EntailmentModel,
    EntityLinker,
    KnownNames,
    NameEquivalence,
    Reranker,
    Retriever,
    TableLink,
)
from cta.context import primary_entity as find_primary_entity
from cta.judge.decide import DecisionRule, SameMeaning, add_name_problem, is_new_column
from cta.judge.decide import association as association_of
from cta.judge.protocol import Judge
from cta.names import NameStyle, is_natural_name, name_type, restyle, table_style
from cta.pool import natural_pool, shared_columns
from cta.results import (
    Candidate,
    CandidateReport,
    ColumnCandidates,
    ColumnPerturbations,
    Decision,
    EntitySource,
    JudgePair,
    JudgeScore,
    PerturbationResult,
    PerturbOptions,
)
from cta.settings import Settings, get_settings
from cta.table import Column, ColumnType, Table
from cta.words import name_key

log = logging.getLogger(__name__)

#: ADD lists: where a name without a rank group goes (after every grouped one)
_GROUP_LAST = 1_000
#: the candidate source of the linked entity schema (:mod:`retriever.entity_linker`)
_SCHEMA_SOURCE = "entity-schema"

#: directed pairs judged between two ``should_stop`` checks (a multiple of the judge's batch)
_STOP_CHUNK_BATCHES = 16


#: asked between chunks of work; True stops :meth:`Pipeline.perturb_many` with :class:`Cancelled`
StopCheck = Callable[[], bool]


class Cancelled(RuntimeError):
    """:meth:`Pipeline.perturb_many` stopped early because its ``should_stop`` said so."""


def estimate_pairs(table: Table, settings: Settings) -> int:
    """An upper-bound estimate of the directed judge pairs :meth:`Pipeline.perturb_many`
    may score for ``table``, from its shape and the settings alone (no model, no retrieval).

    With ``k = rerank_top_k`` as the bound of candidates per column and kind, ``T`` target
    columns and ``C`` columns: pass 1 judges each target's RPL and ADD candidates (``2k``)
    in both directions, ``T · 2k · 2``; pass 2 judges each ADD candidate against every other
    column, ``T · k · (C − 1)`` — with the association rule only the ``add_association_top_k``
    best of them, ``T · min(k, K) · (C − 1)`` — (its reverse direction only runs for the few candidates no
    other column ruled out, which this forward bound already over-counts by far). The real
    count is usually well below (e1 settles most pairs, the judge's cache answers repeats),
    so the service measures its drain rate in these estimated pairs.
    """
    k = settings.rerank_top_k
    checked = k if settings.add_association is None else min(k, settings.add_association_top_k)
    targets = len(table.targets())
    columns = len(table.columns)
    return targets * 2 * k * 2 + targets * checked * max(0, columns - 1)


@dataclass
class _TablePlan:
    """Everything judged for one table: its entity, its pools and its judge pairs."""

    table: Table
    entity: str
    entity_source: EntitySource
    report: CandidateReport
    link: TableLink
    # per target column: RPL candidates (sources' equivalents ∪ retrieved ∪ dictionary,
    # deduplicated) and ADD ones (sources' associated names ∪ retrieved, lexically new)
    rpl: dict[str, list[Candidate]] = field(default_factory=dict)
    add: dict[str, list[Candidate]] = field(default_factory=dict)


@dataclass
class Pipeline:
    """CTA over one set of components (build with :meth:`from_settings`, or compose one as
    :mod:`cta.recipes` does).

    ``add_source``, when set, replaces the ADD candidates of every target column (an
    ablation: :func:`cta.recipes.without_retriever`)."""

    settings: Settings
    retriever: Retriever | None
    reranker: Reranker
    dictionary: DictionaryReplacer | None
    judge_model: Judge
    sources: Sequence[CandidateSource] = ()
    add_source: AddCandidates | None = None
    linker: EntityLinker | None = None
    _known_names: tuple[frozenset[str] | None] | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Pipeline:
        """Load every component named in ``settings`` (retriever, vectors, lexicon, judge,
        sources, linker); an unknown name fails first (:class:`cta.registry.UnknownNameError`),
        before any component loads."""
        # deferred: the shipped components register on import, and some load gensim
        import cta.providers  # noqa: F401

        settings = settings or get_settings()
        registry.check(settings)
        return cls(
            settings=settings,
            retriever=registry.create("retriever", settings.retriever, settings),
            reranker=registry.create("vectors", settings.vectors, settings),
            dictionary=registry.create("lexicon", settings.lexicon, settings),
            judge_model=registry.create("judge", settings.judge, settings),
            sources=tuple(
                registry.create("source", name, settings) for name in settings.candidate_sources
            ),
            linker=registry.create("linker", settings.entity_linker, settings),
        )

    def estimate_pairs(self, table: Table) -> int:
        """An upper-bound estimate of the judge pairs :meth:`perturb` costs for ``table``
        (see :func:`estimate_pairs`; a pure function of its shape and the settings)."""
        return estimate_pairs(table, self.settings)

    def known_names(self) -> frozenset[str] | None:
        """Names people write, as the retriever's human-named tables and the candidate sources
        know them (None when no component knows any)."""
        if self._known_names is None:
            components: list[object] = [self.retriever, *self.sources]
            known = [c.known_names() for c in components if isinstance(c, KnownNames)]
            self._known_names = (frozenset().union(*known),) if known else (None,)
        return self._known_names[0]

    @property
    def same_meaning(self) -> list[SameMeaning]:
        """The components that know names of the same column (the ADD guard asks them)."""
        components: list[object] = [*self.sources, self.dictionary]
        return [c.same_meaning for c in components if isinstance(c, NameEquivalence)]

    @property
    def entailment_model(self) -> EntailmentModel:
        return self.judge_model.model

    # -- stage 0: context ------------------------------------------------------------------
    def primary_entity(self, table: Table) -> tuple[str, EntitySource]:
        """The table's primary entity and where it came from (given / table-name / predicted)."""
        entity, source = find_primary_entity(
            table,
            self.entailment_model,
            use_name=self.settings.entity_from_name,
            hypothesis_template=self.settings.entity_hypothesis,
            max_name_words=self.settings.entity_name_max_words,
        )
        return entity, source

    def link(self, table: Table, entity: str | None) -> TableLink:
        """The table's entity link (an empty one without a linker)."""
        if self.linker is None:
            return TableLink()
        return self.linker.link(table, entity)

    # -- stages 1–3: candidates --------------------------------------------------------------
    def candidates(self, table: Table, seed: int = 0, entity: str | None = None) -> CandidateReport:
        """The candidates of every target column, before the judge: retrieved and reranked,
        dictionary, and the candidate sources' equivalent and associated names. ``entity``:
        the table's primary entity when already known (else found as :meth:`perturb` does)."""
        if entity is None:
            entity, _ = self.primary_entity(table)
        return self._candidates(table, entity, seed, self.link(table, entity))

    def _candidates(
        self, table: Table, entity: str | None, seed: int, link: TableLink
    ) -> CandidateReport:
        targets = table.targets()
        retrieved_ids: list[str] = []
        retrieved_by_target: list[list[Candidate]] = [[] for _ in targets]
        # What the retrieved tables say a name's type is (for names that do not tell).
        corpus_types: dict[str, ColumnType] = {}
        if self.retriever is not None:
            retrieved = self.retriever.retrieve(table, self.settings.retrieve_top_k)
            retrieved_ids = [r.table_id for r in retrieved]
            pool = natural_pool(
                table,
                retrieved,
                self.settings.pool_min_zipf,
                self.settings.pool_humanise,
                self.known_names(),
            )
            corpus_types = {name_key(col.name): col.type for col, _ in pool}
            support = shared_columns(table, retrieved)
            if pool:
                names = [col.name for col, _ in pool]
                by_name = {col.name: (col, ids) for col, ids in pool}
                ranked = self.reranker.rank_many(
                    [t.name for t in targets], names, self.settings.rerank_top_k
                )
                for i, ranking in enumerate(ranked):
                    for name, score in ranking:
                        col, ids = by_name[name]
                        retrieved_by_target[i].append(
                            Candidate(
                                name=col.name,
                                type=col.type,
                                score=round(float(score), 6),
                                source="retriever",
                                provenance=",".join(ids[:3]),
                                shared_columns=max(support.get(i, 0) for i in ids),
                            )
                        )
        style = table_style(table.column_names)
        own = {name_key(c.name) for c in table.columns}
        columns = []
        for i, target in enumerate(targets):
            context = ColumnContext.of(table, target, entity, link)
            dictionary = (
                self.dictionary.candidates(target.name, seed, context)
                if self.dictionary is not None
                else []
            )
            equivalent: list[Candidate] = []
            associated: list[Candidate] = []
            for source in self.sources:
                proposal = source.propose(context)
                equivalent += self._tidy(proposal.equivalent, style, like=target)
                associated += self._tidy(
                    proposal.associated, style, types=None if proposal.typed else corpus_types
                )
            columns.append(
                ColumnCandidates(
                    column=target.name,
                    aligned_to=link.alignment.get(target.name),
                    retrieved=retrieved_by_target[i],
                    dictionary=[
                        c.model_copy(update={"type": target.type})
                        for c in dictionary
                        if is_natural_name(c.name, self.settings.dictionary_min_zipf, target.name)
                    ],
                    equivalent=[c for c in _union(equivalent) if name_key(c.name) not in own],
                    associated=[c for c in _union(associated) if name_key(c.name) not in own],
                )
            )
        return CandidateReport(
            table_id=table.id,
            primary_entity=entity,
            entity_links=list(link.links),
            linked_entity=link.entity,
            retrieved_tables=retrieved_ids,
            columns=columns,
        )

    def _tidy(
        self,
        candidates: Sequence[Candidate],
        style: NameStyle,
        like: Column | None = None,
        types: dict[str, ColumnType] | None = None,
    ) -> list[Candidate]:
        """A source's names as the table would write them: natural ones only (see
        :func:`cta.names.is_natural_name`; a rename may keep what ``like`` has), in the
        table's style. A rename keeps its column's type; a new column is typed by its name
        where it tells, else as the retrieved tables hold it (``types``), else as proposed;
        with ``types`` None (a source that types its names), as proposed."""
        out = []
        like_name = like.name if like is not None else None
        for cand in candidates:
            if not is_natural_name(cand.name, self.settings.pool_min_zipf, like_name):
                continue
            update: dict[str, object] = {"name": restyle(cand.name, style)}
            if like is None and types is not None:
                update["type"] = name_type(cand.name) or types.get(name_key(cand.name)) or cand.type
            out.append(cand.model_copy(update=update))
        return out

    # -- stages 4–5: judge and decide ---------------------------------------------------------
    def perturb(self, table: Table, options: PerturbOptions | None = None) -> PerturbationResult:
        """Judged RPL and ADD names for every target column of one table."""
        return self.perturb_many([table], options)[0]

    def perturb_many(
        self,
        tables: Sequence[Table],
        options: PerturbOptions | None = None,
        should_stop: StopCheck | None = None,
    ) -> list[PerturbationResult]:
        """:meth:`perturb` for many tables, with the judge's work batched across all of them.

        ``should_stop``: asked between tables while planning and between chunks of judge
        work; when it answers True the call raises :class:`Cancelled` (the service stops
        the work of clients that left)."""

        options = options or PerturbOptions()
        rule = DecisionRule.from_settings(
            self.settings, options.rpl_threshold, options.add_threshold
        )
        plans = []
        for table in tables:
            _check_stop(should_stop)
            plans.append(self._plan(table, options.seed))

        # Pass 1: every candidate's e1 against its own target column (RPL, and the first
        # column of the ADD check), batched over all tables; e2 only where it can still make
        # the pair RPL (min: e1 ≥ 0.65) or, with the association rule, where it can still
        # pass ADD against its target. Dicts as ordered sets: the judge's batches follow
        # the order pairs were first met. A name may be both a rename and a new column (as a
        # rename it has the column's type, as a new column its own): the pair's types tell.
        # One forward pass gives P(entailment) and P(neutral) (association) together.
        first = dict.fromkeys(
            PairKey.of(plan.entity, target, cand)
            for plan in plans
            for target in plan.table.targets()
            for cand in [*plan.rpl[target.name], *plan.add[target.name]]
        )
        forward = self._probabilities(first, should_stop=should_stop)
        associating = rule.add_association is not None
        backward_needed = dict.fromkeys(
            key
            for plan in plans
            for target in plan.table.targets()
            for key in (PairKey.of(plan.entity, target, c) for c in plan.rpl[target.name])
            if rule.rpl_possible(forward[key][0])
        )
        # Association is asked of the candidate in its target's type: whether a name belongs
        # beside a column is not a question of types (and a judge reads a type change alone as
        # "another column"). Its pairs join pass 1 where e1 leaves the candidate a chance.
        add_keys: dict[PairKey, PairKey] = {}
        if associating:
            add_keys = {
                key: key._replace(candidate_type=key.column_type)
                for plan in plans
                for target in plan.table.targets()
                for key in (PairKey.of(plan.entity, target, c) for c in plan.add[target.name])
                if rule.add_possible(forward[key][0])
            }
            forward.update(
                self._probabilities(
                    dict.fromkeys(k for k in add_keys.values() if k not in forward),
                    should_stop=should_stop,
                )
            )
            backward_needed.update(dict.fromkeys(add_keys))
            backward_needed.update(dict.fromkeys(add_keys.values()))
        backward = self._probabilities(backward_needed, reverse=True, should_stop=should_stop)
        scores: dict[PairKey, tuple[float, float | None]] = {
            key: (forward[key][0], backward[key][0] if key in backward else None) for key in first
        }
        association: dict[PairKey, float] = {}
        if associating:
            # Association first: keep, per target, the best add_top_k associated candidates
            # that are not equivalent to it; only those meet the check against every column.
            for plan in plans:
                for target in plan.table.targets():
                    kept: list[tuple[float, Candidate]] = []
                    for cand in plan.add[target.name]:
                        key = PairKey.of(plan.entity, target, cand)
                        if key not in add_keys:
                            continue  # e1 alone ruled it out
                        typed = add_keys[key]
                        value = association_of(forward[typed][1], backward[typed][1])
                        association[key] = value
                        if rule.is_add_against(forward[key][0], backward[key][0]) and (
                            rule.is_associated(value)
                        ):
                            kept.append((value, cand))
                    # by rank group (the linked schema's names first: the target's facet, then
                    # the rest), then most associated first (unknown association, NaN, last),
                    # then by name
                    kept.sort(
                        key=lambda vc: (
                            _GROUP_LAST if vc[1].rank_group is None else vc[1].rank_group,
                            -(vc[0] if vc[0] == vc[0] else -1.0),
                            vc[1].name,
                        )
                    )
                    plan.add[target.name] = [c for _, c in kept[: rule.add_top_k]]
        # Pass 2: the ADD check, every candidate against every column of its table.
        new_columns = self._check_adds(plans, rule, scores, should_stop)
        return [
            self._decide(p, plan, options, rule, scores, new_columns, association)
            for p, plan in enumerate(plans)
        ]

    def _check_adds(
        self,
        plans: Sequence[_TablePlan],
        rule: DecisionRule,
        scores: dict[PairKey, tuple[float, float | None]],
        should_stop: StopCheck | None,
    ) -> set[_AddKey]:
        """The ADD candidates equivalent to no column of their table (``passes_add``): the
        :class:`_AddKey` of each, with every pair it was checked on added to ``scores``.

        A candidate is checked once per table, however many target columns proposed it (the
        rule looks at every column, the proposing ones included). Its columns are ordered
        most-similar-first: the proposing targets, then the others by the reranker's
        similarity to the candidate's name. All e1 come before any e2, in waves over that
        order (1, 1, 2, 4 … columns; with ``judge_add_waves`` off, one wave of all
        columns), each wave one batched judge call across every table, and a candidate
        leaves at the first score that rules it out. Decisions are those of scoring every
        pair both ways (tests compare); only the number of pairs judged changes.
        """
        orders: dict[_AddKey, list[Column]] = {}
        cands: dict[_AddKey, Candidate] = {}
        for p, plan in enumerate(plans):
            proposers: dict[_AddKey, list[Column]] = {}
            for target in plan.table.targets():
                for cand in plan.add[target.name]:
                    group = _AddKey(p, cand.name, cand.type)
                    proposers.setdefault(group, []).append(target)
                    cands.setdefault(group, cand)
            if not proposers:
                continue
            by_name = {c.name: c for c in plan.table.columns}
            groups = list(proposers)
            # (a pipeline composed without a reranker checks in table order)
            if self.settings.judge_add_waves and self.reranker is not None:
                ranked = self.reranker.rank_many(
                    [g.name for g in groups], list(by_name), len(by_name)
                )
            else:
                ranked = [[] for _ in groups]
            for group, ranking in zip(groups, ranked, strict=True):
                order = dict.fromkeys(c.name for c in proposers[group])
                order.update(dict.fromkeys(name for name, _ in ranking if name in by_name))
                order.update(dict.fromkeys(by_name))
                orders[group] = [by_name[name] for name in order]

        def key(group: _AddKey, column: Column) -> PairKey:
            return PairKey.of(plans[group.plan].entity, column, cands[group])

        known_e1 = {k: e1 for k, (e1, _) in scores.items()}
        # The proposing targets' e1 are known from pass 1.
        alive = {
            g
            for g, order in orders.items()
            if all(
                rule.add_possible(known_e1[key(g, col)]) for col in order if key(g, col) in known_e1
            )
        }
        known_e2 = {k: e2 for k, (_, e2) in scores.items() if e2 is not None}
        longest = max((len(o) for o in orders.values()), default=0)
        for reverse in (False, True):
            known = known_e2 if reverse else known_e1
            for lo, hi in _waves(longest, self.settings.judge_add_waves):
                wave = [g for g in orders if g in alive]
                needed = dict.fromkeys(
                    key(g, col)
                    for g in wave
                    for col in orders[g][lo:hi]
                    if key(g, col) not in known
                )
                known.update(self._entail(needed, reverse=reverse, should_stop=should_stop))
                for g in wave:
                    for col in orders[g][lo:hi]:
                        k = key(g, col)
                        ok = (
                            rule.is_add_against(known_e1[k], known_e2[k])
                            if reverse
                            else rule.add_possible(known_e1[k])
                        )
                        if not ok:
                            alive.discard(g)
                            break
        for group in alive:
            for col in orders[group]:
                k = key(group, col)
                scores[k] = (known_e1[k], known_e2[k])
        return alive

    def _probabilities(
        self,
        pairs: Iterable[PairKey],
        reverse: bool = False,
        should_stop: StopCheck | None = None,
    ) -> dict[PairKey, tuple[float, float]]:
        """(P(entailment), P(neutral)) in one direction for every (column, candidate) pair, in
        one batched call: column ⇒ candidate (e1), or candidate ⇒ column with ``reverse``
        (e2). With ``should_stop``, in chunks of whole judge batches with a check before each
        (scores do not depend on the chunking: the judge pads its batches to a canonical shape
        and caches)."""
        keys = list(pairs)
        if not keys:
            return {}
        judged = [key.judge_pair() for key in keys]
        chunk = len(judged)
        if should_stop is not None:
            chunk = max(1, self.settings.judge_batch_size) * _STOP_CHUNK_BATCHES
        scores: list[tuple[float, float]] = []
        for start in range(0, len(judged), chunk):
            _check_stop(should_stop)
            scores += self.judge_model.probabilities(judged[start : start + chunk], reverse=reverse)
        return dict(zip(keys, scores, strict=True))

    def _entail(
        self,
        pairs: Iterable[PairKey],
        reverse: bool = False,
        should_stop: StopCheck | None = None,
    ) -> dict[PairKey, float]:
        """:meth:`_probabilities`' entailment alone (e1, or e2 with ``reverse``)."""
        both = self._probabilities(pairs, reverse=reverse, should_stop=should_stop)
        return {key: entail for key, (entail, _) in both.items()}

    def _plan(self, table: Table, seed: int) -> _TablePlan:
        entity, source = self.primary_entity(table)
        link = self.link(table, entity)
        report = self._candidates(table, entity, seed, link)
        plan = _TablePlan(
            table=table, entity=entity, entity_source=source, report=report, link=link
        )
        own = {name_key(c.name) for c in table.columns}
        names = table.column_names
        same_meaning = self.same_meaning
        # A retrieved name is added only from a table of the query's domain (one sharing at
        # least this many of its columns); a rename needs no such support (the judge's
        # entailment decides it).
        min_shared = self.settings.add_min_shared_columns
        linker = self.linker if link.schema_ is not None else None

        def fits(cand: Candidate, new_column: bool = False) -> bool:
            """A name of another kind of row than the linked one does not belong, nor, as a new
            column, one that only tables of other domains have (the linked schema's own names
            always belong)."""
            return (
                linker is None
                or cand.source == _SCHEMA_SOURCE
                or not (
                    linker.contradicts(link, cand.name)
                    or (new_column and linker.belongs_elsewhere(link, cand.name))
                )
            )

        for col in report.columns:
            rpl = _union(col.equivalent, col.retrieved, col.dictionary)
            plan.rpl[col.column] = [c for c in rpl if name_key(c.name) not in own and fits(c)]
            plan.add[col.column] = [
                c
                for c in _union(col.associated, col.retrieved)
                if name_key(c.name) not in own
                and fits(c, new_column=True)
                and add_name_problem(c.name, c.source == "retriever", names, entity) is None
                and is_new_column(c.name, names, entity, same_meaning)
                and (c.shared_columns is None or c.shared_columns >= min_shared)
            ]
        if self.add_source is not None:
            for target in table.targets():
                plan.add[target.name] = self.add_source.add_candidates(
                    table, target, self.settings.rerank_top_k
                )
        return plan

    def _decide(
        self,
        p: int,
        plan: _TablePlan,
        options: PerturbOptions,
        rule: DecisionRule,
        scores: dict[PairKey, tuple[float, float | None]],
        new_columns: set[_AddKey],
        association: dict[PairKey, float],
    ) -> PerturbationResult:
        columns = []
        limit = options.max_candidates
        for target in plan.table.targets():
            replace: list[Decision] = []
            # e2 is None where e1 alone settled the pair (see perturb_many): not RPL.
            for cand in plan.rpl[target.name]:
                e1, e2 = scores[PairKey.of(plan.entity, target, cand)]
                if e2 is not None and rule.is_rpl(e1, e2):
                    replace.append(_decision(cand, e1, e2))
            add: list[Decision] = []
            for cand in plan.add[target.name]:
                if _AddKey(p, cand.name, cand.type) in new_columns:
                    key = PairKey.of(plan.entity, target, cand)
                    e1, e2 = scores[key]
                    if e2 is not None:  # always: every column's pair was scored both ways
                        add.append(_decision(cand, e1, e2, association.get(key)))
            # RPL: most mutually entailed first; ADD: most associated first (pass 1 sorted
            # them), or the reranker's order under the paper's rule.
            replace.sort(key=lambda d: (-min(d.e1, d.e2), d.name))
            columns.append(
                ColumnPerturbations(
                    column=target.name,
                    aligned_to=plan.link.alignment.get(target.name),
                    replace=replace[:limit] if limit else replace,
                    add=add[:limit] if limit else add,
                )
            )
        result = PerturbationResult(
            table_id=plan.table.id,
            primary_entity=plan.entity,
            entity_source=plan.entity_source,
            entity_links=list(plan.link.links),
            linked_entity=plan.link.entity,
            columns=columns,
        )
        if options.samples:
            result.samples = [
                *sample_perturbations(plan.table, result, "rpl", options.samples, options.seed),
                *sample_perturbations(plan.table, result, "add", options.samples, options.seed),
            ]
        return result

    # -- the judge on its own ---------------------------------------------------------------
    def judge(
        self,
        pairs: Sequence[JudgePair],
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> list[JudgeScore]:
        """Score pairs both ways; the verdict applies both thresholds to each single pair
        (and, for ADD, the association threshold: the candidate belongs beside the target)."""
        rule = DecisionRule.from_settings(self.settings, rpl_threshold, add_threshold)
        return rule.scores(
            self.judge_model.probabilities(pairs),
            self.judge_model.probabilities(pairs, reverse=True),
        )

    def equivalent(self, pairs: Sequence[tuple[str | None, str, str]]) -> list[bool]:
        """Is each (entity, name, other name) pair an RPL pair (both directions, RPL rule)?

        The families' judge (:data:`cta.families.naming.EquivalenceJudge`): abbreviations are
        kept only when this holds.
        """
        judged = [
            JudgePair.model_validate(
                {"entity": entity, "target": {"name": a}, "candidate": {"name": b}}
            )
            for entity, a, b in pairs
        ]
        return [score.verdict == "RPL" for score in self.judge(judged)] if judged else []


def _check_stop(should_stop: StopCheck | None) -> None:
    if should_stop is not None and should_stop():
        raise Cancelled("stopped: every request of this call was cancelled")


def _union(*lists: Sequence[Candidate]) -> list[Candidate]:
    """Candidates of all lists, first occurrence of each normalised name wins."""
    seen: set[str] = set()
    out = []
    for cand in (c for candidates in lists for c in candidates):
        key = name_key(cand.name)
        if key not in seen:
            seen.add(key)
            out.append(cand)
    return out


class PairKey(NamedTuple):
    """One directed (column ⇒ candidate) pair in a table's context: the judge's unit of work
    and the key its scores are kept under (everything the judge's texts are made of)."""

    entity: str
    column: str
    column_type: ColumnType
    candidate: str
    candidate_type: ColumnType

    @classmethod
    def of(cls, entity: str, column: Column, cand: Candidate) -> PairKey:
        return cls(entity, column.name, column.type, cand.name, cand.type)

    def judge_pair(self) -> JudgePair:
        return JudgePair.model_validate(
            {
                "entity": self.entity,
                "target": {"name": self.column, "type": self.column_type},
                "candidate": {"name": self.candidate, "type": self.candidate_type},
            }
        )


def _decision(cand: Candidate, e1: float, e2: float, association: float | None = None) -> Decision:
    return Decision(
        name=cand.name,
        type=cand.type,
        e1=round(float(e1), 6),
        e2=round(float(e2), 6),
        association=None if association is None else round(float(association), 6),
        source=cand.source,
        provenance=cand.provenance,
    )


class _AddKey(NamedTuple):
    """One ADD candidate of one table (``plan``: its index in the call), checked once however
    many target columns proposed it."""

    plan: int
    name: str
    type: ColumnType


def _waves(columns: int, waves: bool) -> list[tuple[int, int]]:
    """Position ranges of the ADD check's waves over ``columns`` ordered columns: the
    proposing target first, then 1, 2, 4 … columns (``waves`` off: one range)."""
    if not waves:
        return [(0, columns)] if columns else []
    out, lo, size = [], 0, 1
    while lo < columns:
        out.append((lo, min(columns, lo + size)))
        lo, size = lo + size, (size * 2 if lo else 1)
    return out
