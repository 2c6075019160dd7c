"""The judge stage (docs/method.md §3.4): NLI scoring and the RPL/ADD decision rule.

* :mod:`cta.judge.nli` — :class:`HFEntailmentModel` (any HF NLI checkpoint) and
  :class:`BidirectionalJudge` (template texts, e1/e2, dedup, LRU cache);
* :mod:`cta.judge.decide` — the decision rule, in one place.

Inference only: how the offline judge is trained (``cta judge train``) lives in
:mod:`cta.training`, which imports this package and is never imported by it.
Heavy libraries (torch, transformers) load only when a model is built.
"""

from cta.judge.decide import is_add_against, is_rpl, passes_add, verdict
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
    "HFEntailmentModel",
    "JudgeError",
    "JudgeStats",
    "is_add_against",
    "is_rpl",
    "load_judge",
    "passes_add",
    "render",
    "verdict",
]
