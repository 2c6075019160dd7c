"""Training the offline judge (``cta judge train``, docs/method.md §6) — apart from inference.

* :mod:`cta.training.relations` — the supervision's relations, their labels and examples;
* :mod:`cta.training.lexicon` — WordNet relations of column words (:class:`Lexicon`);
* :mod:`cta.training.sources` — the real tables and question files supervision is drawn from;
* :mod:`cta.training.supervision` — lexical-semantic supervision: the relation generators;
* :mod:`cta.training.annotated` — supervision from the human annotations;
* :mod:`cta.training.fit` — the fine-tuning loop;
* :mod:`cta.training.train` — :func:`train_judge`, all of it put together;
* :mod:`cta.training.settings` — :class:`TrainingSettings`, the engine's settings plus the
  ``judge_train_*`` recipe (the serving settings carry no training knob).

This package sits above the judge (:mod:`cta.judge`) and the candidate sources
(:mod:`retriever`): it may import them, while nothing that serves requests imports it (the
server and the pipeline never load training code). Heavy libraries (torch, transformers)
load only when a judge is trained.
"""

from cta.training.settings import TrainingSettings
from cta.training.train import train_judge

__all__ = ["TrainingSettings", "train_judge"]
