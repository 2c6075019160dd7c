"""The judge stage (docs/method.md §3.4): NLI scoring and the RPL/ADD decision rule.

* :mod:`cta.judge.nli` — :class:`HFEntailmentModel` (any HF NLI checkpoint) and
  :class:`BidirectionalJudge` (template texts, e1/e2, dedup, LRU cache);
* :mod:`cta.judge.decide` — the decision rule's thresholds (:class:`DecisionRule`);
* :mod:`cta.judge.add_rule` — the ADD rule, in one place: candidates, association, the best
  few, the check against every column.

Inference only: how the offline judge is trained (``cta judge train``) lives in
:mod:`cta.training`, which imports this package and is never imported by it.
Heavy libraries (torch, transformers) load only when a model is built.
"""

from cta.judge.decide import DecisionRule
from cta.judge.nli import (
    DEFAULT_TEMPLATE,
    BidirectionalJudge,
    HFEntailmentModel,
    JudgeError,
    JudgeStats,
    load_judge,
    render,
)

__all__ = [
    "DEFAULT_TEMPLATE",
    "BidirectionalJudge",
    "DecisionRule",
    "HFEntailmentModel",
    "JudgeError",
    "JudgeStats",
    "load_judge",
    "render",
]
