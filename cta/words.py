"""How a name splits into words — the one place (every other module imports from here).

One camelCase rule (:data:`CAMEL`: a lower-case letter or digit before a capital, or the
last capital of an acronym before a capitalised word of at least three letters:
``HTTPServer`` → ``HTTP Server``, while a plural or brand acronym — ``IDs``, ``URLs``,
``IMDb`` — stays one word) and
three granularities, each for one use:

* :func:`name_key` — comparing names: case, camelCase, ``_``/``-`` and spacing ignored,
  punctuation kept (``No.`` ≠ ``No``); the identity of a column name everywhere.
* :func:`split_name` — the words of a schema or table name (punctuation separates too).
* :func:`column_words` — a column name as the judge reads it: only case, ``_`` and camelCase
  change, punctuation stays, so corpus headers, user columns and training texts look alike.
* :func:`name_words` / :func:`word_spans` — words to look up (word vectors, WordNet,
  frequencies): every run of letters or of digits is a word (``ISBN10`` → isbn, 10).
"""

from __future__ import annotations

import re

__all__ = [
    "CAMEL",
    "camel_parts",
    "column_words",
    "name_key",
    "name_words",
    "split_name",
    "word_spans",
]

CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]{2})")
_KEY_SEPARATORS = re.compile(r"[\s_\-]+")
_NAME_SEPARATORS = re.compile(r"[_\s./\\|:;,]+")
_ALNUM_RUN = re.compile(r"[^\W_]+")
_LETTERS_OR_DIGITS = re.compile(r"\d+|[^\W\d_]+")


def name_key(name: str) -> str:
    """Comparison key of a column name: case, camelCase, ``_``/``-`` and spacing ignored
    (``HTTPServer``, ``http_server`` and ``Http Server`` are one name)."""
    return " ".join(_KEY_SEPARATORS.split(CAMEL.sub(" ", name).casefold())).strip()


def split_name(name: str) -> list[str]:
    """Words of a schema or table name: snake_case, camelCase, dots and spaces → lower-case words.

    ``"concert_singer"`` → ``["concert", "singer"]``, ``"BatterNumber"`` → ``["batter", "number"]``.
    """
    return [w.lower() for w in _NAME_SEPARATORS.split(CAMEL.sub(" ", name.strip())) if w]


def column_words(name: str) -> str:
    """A column name as the judge reads it: ``first_name``, ``FirstName`` → ``first name``.

    Unlike :func:`split_name`, only case and underscores/camelCase change (punctuation such as
    ``#`` or ``no.`` stays), so the judge sees corpus headers, user columns and its training
    texts written the same way.
    """
    return " ".join(CAMEL.sub(" ", name).replace("_", " ").split()).lower()


def camel_parts(run: str) -> list[tuple[int, int]]:
    """Spans of the camelCase parts of a run of letters (``"HTTPServer"`` → HTTP, Server),
    split where :data:`CAMEL` splits."""
    cuts = [m.start() for m in CAMEL.finditer(run)]
    bounds = [0, *cuts, len(run)]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def word_spans(name: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each word of a column name, split on separators and camelCase.

    Anything that is not a letter or digit separates words (space, ``_``, ``-``,
    punctuation); runs of letters split at camelCase and letter/digit boundaries.
    """
    spans: list[tuple[int, int]] = []
    for run in _ALNUM_RUN.finditer(name):
        for piece in _LETTERS_OR_DIGITS.finditer(run.group()):
            offset = run.start() + piece.start()
            text = piece.group()
            if text[0].isdigit():
                spans.append((offset, offset + len(text)))
            else:
                spans.extend((offset + a, offset + b) for a, b in camel_parts(text))
    return spans


def name_words(name: str) -> list[str]:
    """Lowercase words of a column name: ``"firstName"``, ``"first_name"`` → ``["first", "name"]``."""
    return [name[a:b].lower() for a, b in word_spans(name)]
