"""The ADD rule (docs/method.md §3.4), in one place: which names become a new column beside a
target column. The pipeline calls its stages in order, batching the judge's work across every
table of a call; the thresholds are :class:`~cta.judge.decide.DecisionRule`'s.

1. **Candidates** (:func:`candidates`): the candidate sources' associated names and the
   retrieved ones, first of each name, less any the table already has, any outside the linked
   schema's domain, any whose name already names a column of the table (:func:`add_clash`:
   ``year`` beside ``publication year``, ``wage`` beside ``salary``) or a part of one
   (``first name`` beside ``employee name``), any that is no column
   one adds (:func:`add_name_problem`: a flattened header, a foreign key), and any retrieved
   name that no retrieved table of the query's domain holds (``add_min_shared_columns``).
   A name is kept out before the judge when its *name* settles it: a judge that misses such a
   pair cannot let it through.
2. **Association** (:func:`association_pairs`): with the association rule, a candidate whose
   e1 against its target leaves it a chance is asked, in its target's type, how strongly it
   belongs beside the target (:func:`~cta.judge.decide.association`).
3. **The best few** (:func:`keep_most_associated`): per target, the candidates not equivalent
   to it and associated enough, ordered by the linked schema's rank group, association and
   name; the first ``add_top_k`` go on.
4. **Every column** (:func:`check_every_column`): ``max(e1, e2) ≤ 0.45`` against every column
   of the table, so the gold SQL stays the only answer.
5. **Decisions** (:func:`decisions`): the names that passed, with their scores against the
   target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Literal, NamedTuple, Protocol

from cta.components import Reranker
from cta.judge.decide import DecisionRule, association
from cta.judge.protocol import PairKey
from cta.names import EVENT_TIME_HEADS, KEY_HEADS, MAX_ADD_WORDS, head_index
from cta.pool import first_of_each_name
from cta.results import Candidate, ColumnCandidates, Decision
from cta.table import Column, ColumnType, Table
from cta.words import lemmas, name_key, singular

#: ADD lists: where a name without a rank group goes (after every grouped one)
_GROUP_LAST = 1_000

#: a component's knowledge that two names are one column (the thesaurus, WordNet)
SameMeaning = Callable[[str, str], bool]
#: a component's knowledge that a name holds a part of a column's values (WordNet):
#: ``(part, whole, entity)``
PartOf = Callable[[str, str, str | None], bool]
#: the judge's scores of pairs, in one direction (e1, or e2 with ``reverse``)
Entail = Callable[[Iterable[PairKey], bool], dict[PairKey, float]]


class AddPlan(Protocol):
    """What the ADD rule reads of one table's plan: its table, its primary entity and its ADD
    candidates per target column (which :func:`keep_most_associated` narrows)."""

    table: Table
    entity: str
    add: dict[str, list[Candidate]]


class AddKey(NamedTuple):
    """One ADD candidate of one table (``plan``: its index in the call), checked once however
    many target columns proposed it."""

    plan: int
    name: str
    type: ColumnType


# -- 1. candidates --------------------------------------------------------------------------------


def candidates(
    column: ColumnCandidates,
    table: Table,
    entity: str,
    *,
    fits: Callable[[Candidate], bool],
    same_meaning: Sequence[SameMeaning],
    min_shared_columns: int,
    part_of: Sequence[PartOf] = (),
) -> list[Candidate]:
    """The ADD candidates of one target column (stage 1), in the sources' order: associated
    names first, then the retrieved ones, each new column once however the sources spell it
    (:func:`add_clash`'s ``same_name``). ``fits``: the linked schema's domain check for a new
    column (a name of another kind of row, or only of other domains' tables, does not fit)."""
    own = {name_key(c.name) for c in table.columns}
    names = table.column_names
    kept: list[Candidate] = []
    spelled: set[tuple[str, ...]] = set()
    for c in first_of_each_name(column.associated, column.retrieved):
        # One new column spelled twice (``date of birth`` after ``birth date``, from two
        # sources) is proposed once, as the better-ranked source spells it.
        if _words(c.name) in spelled:
            continue
        # A retrieved name is added only from a table of the query's domain (one sharing at
        # least this many of its columns); names of the other sources carry no such count.
        if (
            name_key(c.name) not in own
            and fits(c)
            and add_name_problem(c.name, c.source == "retriever", names, entity) is None
            and is_new_column(c.name, names, entity, same_meaning, part_of)
            and (c.shared_columns is None or c.shared_columns >= min_shared_columns)
        ):
            kept.append(c)
            spelled.add(_words(c.name))
    return kept


# The lexical guard: a name that already names a column of the table.
AddClash = Literal[
    "same_name", "sub_phrase", "entity_phrase", "restated", "same_time", "same_meaning", "part_of"
]
# A column restated in a unit or per something (``price in pounds``, ``weight per unit``).
_RESTATING = frozenset({"in", "per"})


def add_clash(
    candidate: str,
    column: str,
    entity: str | None = None,
    same_meaning: Sequence[SameMeaning] = (),
    part_of: Sequence[PartOf] = (),
) -> AddClash | None:
    """Why the name of an ADD candidate already names ``column``, or ``None``.

    * ``same_name``: equal up to case, separators and singular/plural (``Years`` / ``year``);
    * ``sub_phrase``: the candidate is a part of the column's name holding its head word —
      a broader name for it (``year`` / ``publication year``, ``date`` / ``date of birth``);
    * ``entity_phrase``: the candidate is the column's name with the table's entity in front
      (``book title`` / ``title`` in a table of books);
    * ``restated``: the candidate is the column's name with a unit or a rate after it
      (``price in pounds`` / ``price``, ``speed per hour`` / ``speed``): the same quantity;
    * ``same_time``: both name when the same thing happened (``publication date`` /
      ``publication year``), or the candidate is a bare ``date`` beside such a column;
    * ``same_meaning``: one of ``same_meaning`` (the thesaurus, WordNet's dominant senses)
      knows the two names as the same column (``wage`` / ``salary``, ``head`` / ``manager``);
    * ``part_of``: one of ``part_of`` (WordNet's meronyms, and the kinds of a thing the row's
      own column names) reads the candidate as holding a part of the column's values: no
      new column, the column already holds it (``first name``, ``surname`` beside ``employee
      name``; ``zip code`` beside ``address``).
    """
    cand, col = _words(candidate), _words(column)
    if not cand or not col:
        return None
    if cand == col:
        return "same_name"
    if len(cand) < len(col) and _holds_head(col, cand):
        return "sub_phrase"
    ent = _words(entity or "")
    if ent and len(cand) > len(col) and cand[len(cand) - len(col) :] == col:
        extra = cand[: len(cand) - len(col)]
        if extra == ent or extra == ent[-len(extra) :]:
            return "entity_phrase"
    if len(cand) > len(col) + 1 and cand[: len(col)] == col and cand[len(col)] in _RESTATING:
        return "restated"
    if _same_event_time(cand, col):
        return "same_time"
    if any(knows(candidate, column) for knows in same_meaning):
        return "same_meaning"
    if any(holds(candidate, column, entity) for holds in part_of):
        return "part_of"
    return None


def is_new_column(
    candidate: str,
    columns: Sequence[str],
    entity: str | None = None,
    same_meaning: Sequence[SameMeaning] = (),
    part_of: Sequence[PartOf] = (),
) -> bool:
    """The lexical half of the ADD rule: the candidate's name clashes with no column of the
    table (:func:`add_clash`); the judge's half is :func:`check_every_column`."""
    return all(add_clash(candidate, c, entity, same_meaning, part_of) is None for c in columns)


AddNameProblem = Literal["fragment", "foreign_id"]


def add_name_problem(
    candidate: str, retrieved: bool, columns: Sequence[str], entity: str | None = None
) -> AddNameProblem | None:
    """Why a name is no column one would add to this table, whatever the judge says, or None.

    * ``fragment``: a retrieved name of more than :data:`~cta.names.MAX_ADD_WORDS` words is a
      flattened multi-row header (``club performance league norway``); names a person wrote
      (the thesaurus) may be longer;
    * ``foreign_id``: an identifier of a thing the table never mentions (``team id`` or
      ``player id`` beside an employee's salary): a key into another domain's table. An
      identifier of something the table names (``department id`` beside ``department``, ``book
      id`` in a table of books) is a column one may add.
    """
    words = _words(candidate)
    if retrieved and len(words) > MAX_ADD_WORDS:
        return "fragment"
    if len(words) >= 2 and words[-1] in KEY_HEADS:
        mentioned = {w for name in [*columns, entity or ""] for w in _words(name)}
        if not set(words[:-1]) & mentioned:
            return "foreign_id"
    return None


def _same_event_time(cand: tuple[str, ...], col: tuple[str, ...]) -> bool:
    """Both name when the same thing happened: event-time heads, the same other words in any
    order and form (``join year`` / ``date joined``); or a bare ``date`` beside one."""
    col_head = head_index(list(col))
    if col[col_head] not in EVENT_TIME_HEADS:
        return False
    if cand == ("date",):
        return True
    cand_head = head_index(list(cand))
    if len(cand) < 2 or len(cand) != len(col) or cand[cand_head] not in EVENT_TIME_HEADS:
        return False
    rest_cand = sorted(_base(w) for i, w in enumerate(cand) if i != cand_head)
    rest_col = sorted(_base(w) for i, w in enumerate(col) if i != col_head)
    return rest_cand == rest_col


@lru_cache(maxsize=20_000)
def _base(word: str) -> str:
    """A word's verb lemma (``joined`` → ``join``), else the word."""
    found = lemmas(word, "VERB") if word.isalpha() else ()
    return found[0].lower() if found else word


def _holds_head(longer: tuple[str, ...], part: tuple[str, ...]) -> bool:
    """``part`` is a run of words of ``longer`` that includes the head word of ``longer``."""
    head = head_index(list(longer))
    n = len(part)
    return any(longer[i : i + n] == part and i <= head < i + n for i in range(len(longer) - n + 1))


@lru_cache(maxsize=50_000)
def _words(name: str) -> tuple[str, ...]:
    """Words of a name for comparison: :func:`name_key` words, nouns made singular, and a
    short ``of`` post-modifier put in front (``date of birth`` → ``birth date``)."""
    out = [singular(w) if w.isalpha() else w for w in name_key(name).split()]
    if out.count("of") == 1 and 0 < out.index("of") < len(out) - 1:
        at = out.index("of")
        head, modifier = out[:at], out[at + 1 :]
        if len(modifier) <= 2 and len(head) <= 2:
            out = [*modifier, *head]
    return tuple(out)


# -- 2. association -------------------------------------------------------------------------------


def association_pairs(
    plans: Sequence[AddPlan],
    rule: DecisionRule,
    forward: Mapping[PairKey, tuple[float, float]],
) -> dict[PairKey, PairKey]:
    """The ADD pairs (candidate against its target) whose association is asked, each mapped to
    the pair it is asked on; empty under the paper's rule.

    Only a candidate whose e1 (``forward``: its (P(entailment), P(neutral)) against its target)
    leaves it a chance. Association is asked of the candidate in its target's type: whether a
    name belongs beside a column is not a question of types (and a judge reads a type change
    alone as "another column"). Both pairs' reverse direction is needed, the asked one's
    forward too.
    """
    if rule.add_association is None:
        return {}
    return {
        key: key._replace(candidate_type=key.column_type)
        for plan in plans
        for target in plan.table.targets()
        for key in (PairKey.of(plan.entity, target, c) for c in plan.add[target.name])
        if rule.add_possible(forward[key][0])
    }


# -- 3. the best few ------------------------------------------------------------------------------


def keep_most_associated(
    plans: Sequence[AddPlan],
    rule: DecisionRule,
    asked: Mapping[PairKey, PairKey],
    forward: Mapping[PairKey, tuple[float, float]],
    backward: dict[PairKey, tuple[float, float]],
    judge_backward: Callable[[Iterable[PairKey]], Mapping[PairKey, tuple[float, float]]]
    | None = None,
) -> dict[PairKey, float]:
    """Keep, per target, the best ``add_top_k`` candidates that are associated with it and not
    equivalent to it (``plan.add`` narrowed in place); the association of every pair asked.

    ``asked``: :func:`association_pairs`; ``forward``/``backward``: the judge's
    (P(entailment), P(neutral)) of those pairs both ways. A candidate's own pair backward
    (its e2 against the target) is asked only once it is associated, where the asked pair is
    another (its type differs): ``judge_backward`` scores those missing from ``backward`` in
    one call across every table and adds them to it. Order: the rank group (the linked
    schema's names first: the target's facet, then the rest), then most associated first
    (unknown association, NaN, last), then by name. Under the paper's rule (nothing asked)
    the lists stay as proposed.
    """
    values: dict[PairKey, float] = {}
    if not asked:
        return values
    associated: list[list[tuple[float, Candidate, PairKey]]] = []
    for plan in plans:
        for target in plan.table.targets():
            found = []
            for cand in plan.add[target.name]:
                key = PairKey.of(plan.entity, target, cand)
                if key not in asked:
                    continue  # e1 alone ruled it out
                typed = asked[key]
                value = association(forward[typed][1], backward[typed][1])
                values[key] = value
                if rule.is_associated(value):
                    found.append((value, cand, key))
            associated.append(found)
    missing = dict.fromkeys(k for found in associated for _, _, k in found if k not in backward)
    if missing:
        if judge_backward is None:
            raise KeyError(f"{len(missing)} ADD pairs without their backward score")
        backward.update(judge_backward(missing))
    lists = iter(associated)
    for plan in plans:
        for target in plan.table.targets():
            kept = [
                (value, cand)
                for value, cand, key in next(lists)
                if rule.is_add_against(forward[key][0], backward[key][0])
            ]
            kept.sort(
                key=lambda vc: (
                    _GROUP_LAST if vc[1].rank_group is None else vc[1].rank_group,
                    -(vc[0] if vc[0] == vc[0] else -1.0),
                    vc[1].name,
                )
            )
            plan.add[target.name] = [c for _, c in kept[: rule.add_top_k]]
    return values


# -- 4. every column ------------------------------------------------------------------------------


def check_every_column(
    plans: Sequence[AddPlan],
    rule: DecisionRule,
    scores: dict[PairKey, tuple[float, float | None]],
    entail: Entail,
    reranker: Reranker | None,
    waves: bool = True,
) -> set[AddKey]:
    """The ADD candidates equivalent to no column of their table (``passes_add``): the
    :class:`AddKey` of each, with every pair it was checked on added to ``scores``.

    A candidate is checked once per table, however many target columns proposed it (the
    rule looks at every column, the proposing ones included). Its columns are ordered
    most-similar-first: the proposing targets, then the others by the reranker's
    similarity to the candidate's name. All e1 come before any e2, in waves over that
    order (1, 1, 2, 4 … columns; ``waves`` off: one wave of all columns), each wave one call
    of ``entail`` across every table, and a candidate leaves at the first score that rules it
    out. Decisions are those of scoring every pair both ways (tests compare); only the number
    of pairs judged changes. ``scores``: the pairs already judged (e2 None where e1 settled
    the pair).
    """
    orders: dict[AddKey, list[Column]] = {}
    cands: dict[AddKey, Candidate] = {}
    for p, plan in enumerate(plans):
        proposers: dict[AddKey, list[Column]] = {}
        for target in plan.table.targets():
            for cand in plan.add[target.name]:
                group = AddKey(p, cand.name, cand.type)
                proposers.setdefault(group, []).append(target)
                cands.setdefault(group, cand)
        if not proposers:
            continue
        by_name = {c.name: c for c in plan.table.columns}
        groups = list(proposers)
        # (a pipeline composed without a reranker checks in table order)
        if waves and reranker is not None:
            ranked = reranker.rank_many([g.name for g in groups], list(by_name), len(by_name))
        else:
            ranked = [[] for _ in groups]
        for group, ranking in zip(groups, ranked, strict=True):
            order = dict.fromkeys(c.name for c in proposers[group])
            order.update(dict.fromkeys(name for name, _ in ranking if name in by_name))
            order.update(dict.fromkeys(by_name))
            orders[group] = [by_name[name] for name in order]

    def key(group: AddKey, column: Column) -> PairKey:
        return PairKey.of(plans[group.plan].entity, column, cands[group])

    known_e1 = {k: e1 for k, (e1, _) in scores.items()}
    # The proposing targets' e1 are known from pass 1.
    alive = {
        g
        for g, order in orders.items()
        if all(rule.add_possible(known_e1[key(g, col)]) for col in order if key(g, col) in known_e1)
    }
    known_e2 = {k: e2 for k, (_, e2) in scores.items() if e2 is not None}
    longest = max((len(o) for o in orders.values()), default=0)
    for reverse in (False, True):
        known = known_e2 if reverse else known_e1
        for lo, hi in _waves(longest, waves):
            wave = [g for g in orders if g in alive]
            needed = dict.fromkeys(
                key(g, col) for g in wave for col in orders[g][lo:hi] if key(g, col) not in known
            )
            known.update(entail(needed, reverse))
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


# -- 5. decisions ---------------------------------------------------------------------------------


def decisions(
    p: int,
    plan: AddPlan,
    target: Column,
    scores: Mapping[PairKey, tuple[float, float | None]],
    new_columns: set[AddKey],
    associations: Mapping[PairKey, float],
) -> list[Decision]:
    """The ADD names of ``target`` in table ``p`` of the call: its candidates that passed
    :func:`check_every_column`, with their scores against the target, in
    :func:`keep_most_associated`'s order (the reranker's under the paper's rule)."""
    out: list[Decision] = []
    for cand in plan.add[target.name]:
        if AddKey(p, cand.name, cand.type) in new_columns:
            key = PairKey.of(plan.entity, target, cand)
            e1, e2 = scores[key]
            if e2 is not None:  # always: every column's pair was scored both ways
                out.append(Decision.of(cand, e1, e2, associations.get(key)))
    return out
