"""The components that ship: importing this module registers every one of them.

Each module below registers its components where they are implemented
(``@register(stage, name)`` beside the factory, :mod:`cta.registry`); this list is what the code
that builds components by name imports first (:meth:`cta.pipeline.Pipeline.from_settings`,
``cta serve``, ``cta judge``, ``cta index build``, ``cta setup``). It sits above the providers and
below the pipeline in the import contract, so every edge to a provider is one the contract sees.

=============  ==========================================  =============================
stage          names                                       module
=============  ==========================================  =============================
retriever      dense                                       :mod:`retriever.dense`
encoder        minilm, sentence-transformers, tapas        :mod:`retriever.encoders`
vectors        glove-retrofit, glove, numberbatch,         :mod:`retriever.rerank`
               keyedvectors
lexicon        wordnet                                     :mod:`retriever.lexicon`
source         thesaurus, entity-schema                    :mod:`retriever.sources`
linker         entity-schemas                              :mod:`retriever.entity_linker`
judge          hf-nli                                      :mod:`cta.judge.nli`
=============  ==========================================  =============================

Importing it loads gensim (the reranker's vectors) and numpy, not torch or transformers,
which load when a model is built.
"""

from __future__ import annotations

import cta.judge.nli
import retriever.dense
import retriever.encoders
import retriever.entity_linker
import retriever.lexicon
import retriever.rerank
import retriever.sources

__all__ = ["cta", "retriever"]
