"""The candidate sources (``CTA_CANDIDATE_SOURCES``): importing this module registers each.

* ``thesaurus`` — :mod:`retriever.thesaurus`, the column-header thesaurus;
* ``entity-schema`` — :mod:`retriever.entity_linker`, the linked entity schema's columns.
"""

from __future__ import annotations

import retriever.entity_linker
import retriever.thesaurus

__all__ = ["retriever"]
