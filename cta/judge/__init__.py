"""The judge stage (METHOD.md §3.4): NLI scoring, the RPL/ADD decision rule, the offline judge.

* :mod:`cta.judge.nli` — :class:`HFEntailmentModel` (any HF NLI checkpoint) and
  :class:`BidirectionalJudge` (template texts, e1/e2, dedup, LRU cache);
* :mod:`cta.judge.decide` — the decision rule, in one place;
* :mod:`cta.judge.supervision` and :mod:`cta.judge.train` — ``cta judge train``.

Heavy libraries (torch, transformers) load only when a model is built or trained.
"""

from cta.judge.decide import is_add_against, is_rpl, passes_add, verdict
from cta.judge.nli import (
    DEFAULT_TEMPLATE,
    BidirectionalJudge,
    HFEntailmentModel,
    JudgeColumn,
    JudgeError,
    JudgePair,
    JudgeStats,
    load_judge,
    render,
)
from cta.judge.train import train_judge

__all__ = [
    "DEFAULT_TEMPLATE",
    "BidirectionalJudge",
    "HFEntailmentModel",
    "JudgeColumn",
    "JudgeError",
    "JudgePair",
    "JudgeStats",
    "is_add_against",
    "is_rpl",
    "load_judge",
    "passes_add",
    "render",
    "train_judge",
    "verdict",
]
