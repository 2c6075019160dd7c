"""The CTA pipeline: context → retrieve → rerank → dictionary → judge → decide → apply.

:class:`Pipeline` is the one public surface the CLI, the HTTP service and the batch jobs use.
It owns no model code itself: each stage is a component picked by name in
:class:`~cta.settings.Settings` and reached through the contracts of :mod:`cta.components`.
Judge work is batched across all columns of all tables of a call, so the pipeline spends its
time in model forward passes rather than in Python. The ADD rule's stages are
:mod:`cta.judge.add_rule`, called here in order with the judge's batched work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from cta import collector, registry
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
    NamePart,
    Reranker,
    Retriever,
    TableLink,
)
from cta.context import primary_entity as find_primary_entity
from cta.judge import add_rule
from cta.judge.add_rule import PartOf, SameMeaning
from cta.judge.decide import DecisionRule
from cta.judge.protocol import Judge, PairKey
from cta.names import (
    NameStyle,
    is_natural_name,
    name_type,
    names_key_of,
    restyle,
    table_style,
)
from cta.pool import first_of_each_name, natural_pool, shared_columns
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
        with collector.paused():  # millions of acyclic objects: rescanning them costs seconds
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
    def part_of(self) -> list[PartOf]:
        """The components that know a name holding a part of a column's values (the ADD guard
        asks them)."""
        components: list[object] = [*self.sources, self.dictionary]
        return [c.part_of for c in components if isinstance(c, NamePart)]

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
                    equivalent=[
                        c for c in first_of_each_name(equivalent) if name_key(c.name) not in own
                    ],
                    associated=[
                        c for c in first_of_each_name(associated) if name_key(c.name) not in own
                    ],
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
        backward_needed = dict.fromkeys(
            key
            for plan in plans
            for target in plan.table.targets()
            for key in (PairKey.of(plan.entity, target, c) for c in plan.rpl[target.name])
            if rule.rpl_possible(forward[key][0])
        )
        # The ADD rule's association pairs join pass 1 where e1 leaves the candidate a chance.
        asked = add_rule.association_pairs(plans, rule, forward)
        forward.update(
            self._probabilities(
                dict.fromkeys(k for k in asked.values() if k not in forward),
                should_stop=should_stop,
            )
        )
        # Association needs the asked pairs both ways; a candidate's own pair backward (its
        # e2, when the asked pair is another) only once it is associated.
        backward_needed.update(dict.fromkeys(asked.values()))
        backward = self._probabilities(backward_needed, reverse=True, should_stop=should_stop)

        def judge_backward(pairs: Iterable[PairKey]) -> dict[PairKey, tuple[float, float]]:
            return self._probabilities(pairs, reverse=True, should_stop=should_stop)

        # Association first: per target, the best add_top_k associated candidates not
        # equivalent to it; only those meet the check against every column (pass 2).
        association = add_rule.keep_most_associated(
            plans, rule, asked, forward, backward, judge_backward
        )
        scores: dict[PairKey, tuple[float, float | None]] = {
            key: (forward[key][0], backward[key][0] if key in backward else None) for key in first
        }

        def entail(pairs: Iterable[PairKey], reverse: bool) -> dict[PairKey, float]:
            return self._entail(pairs, reverse=reverse, should_stop=should_stop)

        # Pass 2: the ADD check, every candidate against every column of its table.
        new_columns = add_rule.check_every_column(
            plans, rule, scores, entail, self.reranker, self.settings.judge_add_waves
        )
        return [
            self._decide(p, plan, options, rule, scores, new_columns, association)
            for p, plan in enumerate(plans)
        ]

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
        same_meaning = self.same_meaning
        part_of = self.part_of
        linker = self.linker if link.schema_ is not None else None

        for col in report.columns:
            # A rename needs no domain support: the judge's entailment decides it.
            rpl = first_of_each_name(col.equivalent, col.retrieved, col.dictionary)
            target = table.column(col.column)
            plan.rpl[col.column] = [
                c for c in rpl if name_key(c.name) not in own and renames(link, linker, target, c)
            ]
            plan.add[col.column] = add_rule.candidates(
                col,
                table,
                entity,
                fits=lambda c: fits_link(link, linker, c, new_column=True),
                same_meaning=same_meaning,
                min_shared_columns=self.settings.add_min_shared_columns,
                part_of=part_of,
            )
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
        new_columns: set[add_rule.AddKey],
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
                    replace.append(Decision.of(cand, e1, e2))
            add = add_rule.decisions(p, plan, target, scores, new_columns, association)
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


def fits_link(
    link: TableLink, linker: EntityLinker | None, cand: Candidate, new_column: bool = False
) -> bool:
    """Whether a candidate fits the table's entity link (always, unlinked: ``linker`` None).

    A name of another kind of row than the linked one does not fit, nor, as a new column, one
    that only tables of other domains have, or that the linked schema holds as a header of a
    column some table column aligns with (that column under another name: ``date of birth``
    beside a ``birth date``). The linked schema's own names always fit."""
    if linker is None or link.schema_ is None or cand.source == _SCHEMA_SOURCE:
        return True
    if linker.contradicts(link, cand.name):
        return False
    return not new_column or not (
        linker.belongs_elsewhere(link, cand.name) or link.names_aligned_column(cand.name)
    )


def renames(link: TableLink, linker: EntityLinker | None, target: Column, cand: Candidate) -> bool:
    """Whether a rename candidate of ``target`` may go to the judge. The linked schema's own
    headers always may (they hold the same values); any other name fits the link
    (:func:`fits_link`), names no key of a column that holds no numbers (``department id``
    for a ``department`` of names: :func:`cta.names.names_key_of`), and is no header the
    linked schema holds for another column than the one ``target`` aligns with
    (:meth:`TableLink.names_other_column`)."""
    if cand.source == _SCHEMA_SOURCE:
        return True
    if target.type != ColumnType.NUMBER and names_key_of(cand.name, target.name):
        return False
    if not fits_link(link, linker, cand):
        return False
    return linker is None or not link.names_other_column(target.name, cand.name)


def _check_stop(should_stop: StopCheck | None) -> None:
    if should_stop is not None and should_stop():
        raise Cancelled("stopped: every request of this call was cancelled")
