"""Seeded random streams — the one place a seed and a few names become a ``random.Random``.

A stream depends only on what it is keyed by, never on ``hash()`` (salted per process) or on
the order other streams were drawn: the SHA-256 digest of the key seeds it. Same key, same
stream, in every process on every machine.
"""

from __future__ import annotations

import hashlib
import json
import random

__all__ = ["rng_for_key", "seeded_rng"]


def rng_for_key(key: str) -> random.Random:
    """The stream of one key: ``random.Random`` seeded by the first 8 bytes of its SHA-256."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def seeded_rng(*parts: str | int) -> random.Random:
    """The stream of ``parts`` (a seed and the names it is for), keyed by their JSON list."""
    return rng_for_key(json.dumps(list(parts), ensure_ascii=False))
