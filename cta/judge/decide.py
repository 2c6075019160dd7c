"""The RPL/ADD decision rule (docs/method.md §3.4) — the one place thresholds meet scores.

Paper defaults: RPL if ``min(e1, e2) ≥ 0.65``; ADD if ``max(e1, e2) ≤ 0.45`` against *every*
original column of the table. The released notebook used 0.50/0.70 for RPL and, through a bug,
``min(e1, e2) ≤ 0.40`` for ADD; both thresholds and both aggregations are settings.

Before the judge, :func:`add_clash` drops ADD candidates whose *name* already says they are
an existing column (``year`` beside ``publication year``, ``wage`` beside ``salary``): the
judge's scores are then not needed, and a judge that misses such a pair cannot let it through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from cta.names import EVENT_TIME_HEADS, MAX_ADD_WORDS, head_index
from cta.results import JudgeScore, Verdict
from cta.settings import Settings
from cta.words import lemmas, name_key, singular

Aggregation = Literal["min", "max", "mean"]


def aggregate(e1: float, e2: float, how: Aggregation) -> float:
    """Combine the two entailment directions into one score."""
    if how == "min":
        return min(e1, e2)
    if how == "max":
        return max(e1, e2)
    if how == "mean":
        return (e1 + e2) / 2.0
    raise ValueError(f"unknown aggregation {how!r} (min, max, mean)")


def association(forward_neutral: float, backward_neutral: float) -> float:
    """How strongly a candidate belongs beside its target: the mean of the judge's P(neutral)
    in both directions (NaN for a judge without a neutral class)."""
    return (forward_neutral + backward_neutral) / 2


def is_rpl(e1: float, e2: float, rpl_threshold: float, aggregation: Aggregation = "min") -> bool:
    """Equivalent in context: the candidate may replace the target (``min(e1,e2) ≥ thr``)."""
    return aggregate(e1, e2, aggregation) >= rpl_threshold


def is_add_against(
    e1: float, e2: float, add_threshold: float, aggregation: Aggregation = "max"
) -> bool:
    """Not equivalent to this one column (``max(e1,e2) ≤ thr``)."""
    return aggregate(e1, e2, aggregation) <= add_threshold


def rpl_possible(e1: float, rpl_threshold: float, aggregation: Aggregation = "min") -> bool:
    """Whether some ``e2`` in [0, 1] could still make the pair RPL, knowing only ``e1``.

    Every aggregation is monotone, so the best case is ``e2 = 1``; when even that fails, the
    pair's reverse direction need not be scored (``min``: ``e1 < thr`` settles it).
    """
    return aggregate(e1, 1.0, aggregation) >= rpl_threshold


def add_possible(e1: float, add_threshold: float, aggregation: Aggregation = "max") -> bool:
    """Whether some ``e2`` in [0, 1] could still pass the ADD check against this column (best
    case ``e2 = 0``; ``max``: ``e1 > thr`` already fails it)."""
    return aggregate(e1, 0.0, aggregation) <= add_threshold


def passes_add(
    scores_vs_every_column: Sequence[tuple[float, float]],
    add_threshold: float,
    aggregation: Aggregation = "max",
) -> bool:
    """The ADD rule: the candidate is equivalent to *no* original column of the table.

    ``scores_vs_every_column`` holds ``(e1, e2)`` of the candidate against each original
    column; an empty sequence is an error (a table always has columns to check against).
    """
    if not scores_vs_every_column:
        raise ValueError("the ADD rule needs the scores against every original column; got none")
    return all(
        is_add_against(e1, e2, add_threshold, aggregation) for e1, e2 in scores_vs_every_column
    )


def verdict(
    e1: float,
    e2: float,
    rpl_threshold: float,
    add_threshold: float,
    rpl_aggregation: Aggregation = "min",
    add_aggregation: Aggregation = "max",
) -> Verdict:
    """Single-pair verdict: ``"RPL"``, ``"ADD"`` (against this column only) or ``"NONE"``.

    RPL is tested first, so overlapping custom thresholds can never yield both.
    """
    if is_rpl(e1, e2, rpl_threshold, rpl_aggregation):
        return "RPL"
    if is_add_against(e1, e2, add_threshold, add_aggregation):
        return "ADD"
    return "NONE"


@dataclass(frozen=True)
class DecisionRule:
    """The RPL/ADD rule with its thresholds and aggregations bound: what the pipeline, the
    service and any test double apply (build with :meth:`from_settings`)."""

    rpl_threshold: float = 0.65
    add_threshold: float = 0.45
    rpl_aggregation: Aggregation = "min"
    add_aggregation: Aggregation = "max"
    # ADD also needs association with its target ≥ this (None: the paper's rule alone) …
    add_association: float | None = None
    # … and keeps the best this many per target column before the check against every column.
    add_top_k: int | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        rpl_threshold: float | None = None,
        add_threshold: float | None = None,
    ) -> DecisionRule:
        """The settings' rule; a threshold given here (a request's override) wins."""
        return cls(
            rpl_threshold=settings.rpl_threshold if rpl_threshold is None else rpl_threshold,
            add_threshold=settings.add_threshold if add_threshold is None else add_threshold,
            rpl_aggregation=settings.rpl_aggregation,
            add_aggregation=settings.add_aggregation,
            add_association=settings.add_association,
            add_top_k=settings.add_association_top_k
            if settings.add_association is not None
            else None,
        )

    def is_associated(self, association: float) -> bool:
        """The ADD rule's second condition: the candidate belongs beside its target.

        Always true under the paper's rule (``add_association`` None) and for a judge without
        a neutral class (NaN: association unknown, so the paper's rule decides)."""
        if self.add_association is None or association != association:
            return True
        return association >= self.add_association

    def is_rpl(self, e1: float, e2: float) -> bool:
        return is_rpl(e1, e2, self.rpl_threshold, self.rpl_aggregation)

    def is_add_against(self, e1: float, e2: float) -> bool:
        return is_add_against(e1, e2, self.add_threshold, self.add_aggregation)

    def rpl_possible(self, e1: float) -> bool:
        return rpl_possible(e1, self.rpl_threshold, self.rpl_aggregation)

    def add_possible(self, e1: float) -> bool:
        return add_possible(e1, self.add_threshold, self.add_aggregation)

    def passes_add(self, scores_vs_every_column: Sequence[tuple[float, float]]) -> bool:
        return passes_add(scores_vs_every_column, self.add_threshold, self.add_aggregation)

    def verdict(self, e1: float, e2: float, association: float = float("nan")) -> Verdict:
        """The single-pair verdict; ADD also needs :meth:`is_associated` (unknown: NaN)."""
        found = verdict(
            e1,
            e2,
            self.rpl_threshold,
            self.add_threshold,
            self.rpl_aggregation,
            self.add_aggregation,
        )
        if found == "ADD" and not self.is_associated(association):
            return "NONE"
        return found

    def scores(
        self,
        forward: Sequence[tuple[float, float]],
        backward: Sequence[tuple[float, float]],
    ) -> list[JudgeScore]:
        """Each pair's e1, e2, association and single-pair verdict, from the judge's
        (P(entailment), P(neutral)) in both directions (``cta judge``, ``/v1/judge``)."""
        out = []
        for (e1, n1), (e2, n2) in zip(forward, backward, strict=True):
            value = association(n1, n2)
            out.append(
                JudgeScore(  # printed rounded, decided on the exact scores
                    e1=round(e1, 6),
                    e2=round(e2, 6),
                    association=None if value != value else round(value, 6),
                    verdict=self.verdict(e1, e2, value),
                )
            )
        return out


# -- the lexical ADD guard -----------------------------------------------------------------------
SameMeaning = Callable[[str, str], bool]
AddClash = Literal[
    "same_name", "sub_phrase", "entity_phrase", "restated", "same_time", "same_meaning"
]
# A column restated in a unit or per something (``price in pounds``, ``weight per unit``).
_RESTATING = frozenset({"in", "per"})


def add_clash(
    candidate: str,
    column: str,
    entity: str | None = None,
    same_meaning: Sequence[SameMeaning] = (),
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
      knows the two names as the same column (``wage`` / ``salary``, ``head`` / ``manager``).
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
    return None


def is_new_column(
    candidate: str,
    columns: Sequence[str],
    entity: str | None = None,
    same_meaning: Sequence[SameMeaning] = (),
) -> bool:
    """The lexical half of the ADD rule: the candidate's name clashes with no column of the
    table (:func:`add_clash`); the judge's half is :func:`passes_add`."""
    return all(add_clash(candidate, c, entity, same_meaning) is None for c in columns)


AddNameProblem = Literal["fragment", "foreign_id"]
# Heads of identifier columns: a key into some table.
_IDENTIFIER_HEADS = frozenset({"id", "code", "key"})


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
    if len(words) >= 2 and words[-1] in _IDENTIFIER_HEADS:
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
