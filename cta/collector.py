"""Python's cyclic garbage collector, paused while large read-only structures load.

Loading the components (the thesaurus, WordNet's lemma index, the entity schemas, an index's
entries…) allocates millions of small objects that hold no reference cycles. The collector,
triggered by the allocations alone, rescans the growing heap over and over while they load:
about a second of a 3.5 s ``cta perturb`` on 2 cores. :func:`paused` switches it off for the
duration (nested uses keep it off until the outermost ends) and back on afterwards, exactly as
it was; nothing else about memory changes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (thread-safe, nestable)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
