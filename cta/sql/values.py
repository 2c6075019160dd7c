"""Plausible cell values for ADD columns and synthesised databases, by column type.

Values only have to *look* like a column of their type (the gold SQL never reads an added
column, and a synthesised database only has to make queries execute and sometimes match),
so generation is deliberately simple and fully seeded:

- ``number``: integers 1–100, or floats with two decimals when the pattern calls for it;
- ``text``: one or two capitalised pseudo-words built from syllables (``Velan Tormi``);
- ``time``: ISO dates between 1990 and 2020 (``2004-07-19``), compared as strings by SQLite;
- ``boolean``: ``0`` / ``1``, SQLite's own convention for truth values;
- ``others``: short upper-case codes (``K7Q2``).

Cells of an *added* column (:func:`added_column_values`: ADD tables, inserted columns of
perturbed databases) must fit the new column's name, which these generators cannot know: a
number is drawn within the range of the column it stands beside (an added "sales" next to
"profits" has profit-like magnitudes, never the other column's cells copied), a date within
its dates, a flag 0/1; a text column is left empty (NULL) rather than filled with another
column's values or invented words — the honest cell when no plausible value can be made.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from typing import Any

from cta.table import ColumnType

__all__ = ["added_column_values", "generate_value"]

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea")
_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_FIRST_DAY = dt.date(1990, 1, 1).toordinal()
_LAST_DAY = dt.date(2020, 12, 31).toordinal()


def _pseudo_word(rng: random.Random) -> str:
    syllables = rng.randint(2, 3)
    word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    if rng.random() < 0.5:
        word += rng.choice("nlrs")
    return word.capitalize()


def generate_value(column_type: ColumnType, rng: random.Random, *, decimals: bool = False) -> Any:
    """One plausible value of ``column_type`` drawn from ``rng``."""
    if column_type is ColumnType.NUMBER:
        if decimals:
            return round(rng.uniform(1, 100), 2)
        return rng.randint(1, 100)
    if column_type is ColumnType.TIME:
        return dt.date.fromordinal(rng.randint(_FIRST_DAY, _LAST_DAY)).isoformat()
    if column_type is ColumnType.BOOLEAN:
        return rng.randint(0, 1)
    if column_type is ColumnType.OTHERS:
        return "".join(rng.choice(_CODE_CHARS) for _ in range(4))
    words = 1 if rng.random() < 0.6 else 2
    return " ".join(_pseudo_word(rng) for _ in range(words))


def added_column_values(
    column_type: ColumnType,
    n: int,
    rng: random.Random,
    template: Sequence[Any] = (),
) -> list[Any]:
    """``n`` cells for a new column of ``column_type`` (see the module docstring).

    ``template`` is the column the new one stands next to (only pass it when its type
    matches): numbers and dates are drawn within its range, never copied from it.
    """
    if column_type is ColumnType.TEXT:
        return [None] * n
    pool = [v for v in template if v is not None and v != ""]
    if column_type is ColumnType.NUMBER:
        numbers = [v for v in pool if isinstance(v, int | float) and not isinstance(v, bool)]
        if numbers:
            low, high = min(numbers), max(numbers)
            if all(isinstance(v, int) for v in numbers):
                return [rng.randint(int(low), int(high)) for _ in range(n)]
            return [round(rng.uniform(low, high), 2) for _ in range(n)]
    if column_type is ColumnType.TIME:
        days = sorted(d for d in (_iso_day(v) for v in pool) if d is not None)
        if days:
            return [dt.date.fromordinal(rng.randint(days[0], days[-1])).isoformat() for _ in range(n)]
    return [generate_value(column_type, rng) for _ in range(n)]


def _iso_day(value: Any) -> int | None:
    try:
        return dt.date.fromisoformat(str(value)[:10]).toordinal()
    except ValueError:
        return None
