"""The text ``cta perturb`` prints on a terminal: proposals per column, then sampled tables.

:func:`render_summary` is a pure function of a :class:`~cta.results.PerturbationResult`
(and, optionally, the input :class:`~cta.table.Table` for its title, size and the columns
that were not targets). The layout, for a person reading it::

    books · 6 columns, 3 rows · primary entity: book (from the table name)

    RPL = rename to a name that means the same here · ADD = add a related, non-equivalent column

    title
      RPL  headline, book title
      ADD  course title, year, release year, … (+12 more)
    author
      RPL  writer
      ADD  —

    RPL sample 1 (seed 0)
      title → headline · author → writer · …
      left as is: price (no candidates)

      headline           | writer         | …
      -------------------+----------------+--
      The Silent Orchard | Mara Lindqvist | …

Names are listed best first, at most ``max_names`` per kind and column; sampled tables show
``max_rows`` rows, cells cut to ``max_cell`` characters, and are split into several blocks of
columns when wider than ``width``. Added columns are marked ``+`` in a sample's header. Scores
(``e1``, ``e2``) and sources are left to the JSON output.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from cta.results import ColumnPerturbations, PerturbationResult, PerturbedTable
from cta.table import Table

NONE_MARK = "—"
ADDED_MARK = "+"
ELLIPSIS = "…"
_NBSP = "\u00a0"  # textwrap never breaks a line on it
# A sample's grid: ASCII only (it reads the same in a terminal and in a copied log), no outer
# edge, `` | `` between columns and ``-+-`` under the header.
GRID_BOX = box.ASCII
COLUMN_GAP = " | "

_ENTITY_SOURCES = {
    "given": "given",
    "table-name": "from the table name",
    "predicted": "predicted from the columns",
}
_REASONS = {"no_candidates": "no candidates", "name_collision": "name collision"}
_KINDS = {"rpl": "RPL", "add": "ADD"}
LEGEND = (
    "RPL = rename to a name that means the same here",
    "ADD = add a related, non-equivalent column",
)


def render_summary(
    result: PerturbationResult,
    table: Table | None = None,
    *,
    max_names: int | None = 8,
    max_rows: int = 3,
    max_cell: int = 24,
    width: int = 100,
) -> str:
    """The whole summary as text (ends with a newline)."""
    width = max(width, 40)
    blocks = [
        _wrap_items("", _heading(result, table), " · ", width),
        _wrap_items("", LEGEND, " · ", width),
        "\n".join(
            line
            for column in result.columns
            for line in render_column(column, max_names=max_names, width=width)
        ),
    ]
    if table is not None:
        targets = {c.column.casefold() for c in result.columns}
        others = [n for n in table.column_names if n.casefold() not in targets]
        if others:
            blocks.append(_wrap_items("not perturbed (not targets): ", others, ", ", width))
    counts: dict[str, int] = {}
    for sample in result.samples:
        counts[sample.kind] = counts.get(sample.kind, 0) + 1
        blocks.append(
            render_sample(
                sample,
                counts[sample.kind],
                max_rows=max_rows,
                max_cell=max_cell,
                width=width,
            )
        )
    return "\n\n".join(blocks) + "\n"


def render_column(
    column: ColumnPerturbations, *, max_names: int | None = 8, width: int = 100
) -> list[str]:
    """Lines of one target column: its name, then its RPL and ADD names."""
    lines = [column.column]
    for label, decisions in (("RPL", column.replace), ("ADD", column.add)):
        items = name_items([d.name for d in decisions], max_names)
        lines.append(_wrap_items(f"  {label}  ", items, ", ", width))
    return lines


def name_items(names: Sequence[str], max_names: int | None = 8) -> list[str]:
    """The names to list: all, or the first ``max_names`` and ``… (+N more)``; ``—`` if none."""
    if not names:
        return [NONE_MARK]
    if max_names is None or len(names) <= max_names:
        return list(names)
    return [*names[:max_names], f"{ELLIPSIS} (+{len(names) - max_names} more)"]


def render_sample(
    sample: PerturbedTable,
    number: int,
    *,
    max_rows: int = 3,
    max_cell: int = 24,
    width: int = 100,
) -> str:
    """One sampled perturbed table: title, old → new mapping, then a few rows of the table."""
    kind = _KINDS[sample.kind]
    lines = [f"{kind} sample {number} (seed {sample.seed})"]
    if not sample.mapping:  # the input table as it was: nothing to show but why
        lines.append(f"  unchanged: no target column has a usable {kind} name")
        return "\n".join(lines)
    if sample.kind == "rpl":
        pairs = [f"{old} → {new}" for old, new in sample.mapping.items()]
        lines.append(_wrap_items("  renamed: ", pairs, " · ", width))
    else:
        pairs = [f"{ADDED_MARK}{new} (beside {old})" for old, new in sample.mapping.items()]
        lines.append(_wrap_items("  added: ", pairs, " · ", width))
    if sample.unperturbed:
        left = [f"{name} ({_REASONS.get(why, why)})" for name, why in sample.unperturbed.items()]
        lines.append(_wrap_items("  left as is: ", left, ", ", width))
    added = set(sample.mapping.values()) if sample.kind == "add" else set()
    headers = [
        f"{ADDED_MARK}{name}" if name in added else name for name in sample.table.column_names
    ]
    grid = text_table(
        headers, sample.table.rows, max_rows=max_rows, max_cell=max_cell, width=width - 2
    )
    return "\n".join(lines) + "\n\n" + textwrap.indent(grid, "  ")


def text_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    max_rows: int = 3,
    max_cell: int = 24,
    width: int = 100,
) -> str:
    """A plain-text grid (header, rule, rows), in blocks of columns no wider than ``width``.

    rich lays each block out (:data:`GRID_BOX`, no outer edge, plain text whatever the
    terminal); this function picks the blocks, the rows and the cells. Headers are never cut;
    cells longer than ``max_cell`` are, with ``…``. Numbers are right-aligned. More rows than
    ``max_rows`` (two or more past it) end with a ``(N more rows)`` line.
    """
    if len(rows) == max_rows + 1:  # "(1 more row)" takes the line the row would
        max_rows += 1
    shown = [[_cell(v, max_cell) for v in row] for row in rows[:max_rows]]
    numeric = [
        bool(rows) and all(_is_number(row[i]) or row[i] is None for row in rows[:max_rows])
        for i in range(len(headers))
    ]
    titles = [Text(h, justify="left") for h in headers]  # left-aligned even over numbers
    widths = [max([t.cell_len, *(r[i].cell_len for r in shown)]) for i, t in enumerate(titles)]
    blocks = []
    for chunk in _chunks(widths, width):
        grid = RichTable(
            box=GRID_BOX,
            show_edge=False,
            pad_edge=False,
            header_style="",
            highlight=False,
        )
        for i in chunk:
            grid.add_column(titles[i], justify="right" if numeric[i] else "left", no_wrap=True)
        for r in shown:
            grid.add_row(*(r[i] for i in chunk))
        blocks.append(_plain(grid, max(width, _span(widths, chunk[0], chunk[-1] + 1))))
    text = "\n\n".join(blocks)
    if len(rows) > max_rows:
        more = len(rows) - max_rows
        text += f"\n({more} more row{'s' if more != 1 else ''})"
    return text


def _plain(renderable: RenderableType, width: int) -> str:
    """``renderable`` as plain text at ``width`` cells: no colour or other escape codes, the
    same bytes whatever the terminal, ``COLUMNS`` or ``NO_COLOR``; no trailing spaces."""
    console = Console(
        file=io.StringIO(),
        width=width,
        color_system=None,
        no_color=True,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        legacy_windows=False,
        markup=False,
        emoji=False,
        highlight=False,
    )
    with console.capture() as capture:
        console.print(renderable, crop=False, soft_wrap=False)
    return "\n".join(line.rstrip() for line in capture.get().splitlines())


def _span(widths: Sequence[int], i: int, j: int) -> int:
    """The width of columns ``i`` … ``j-1`` on one line, `` | `` between them."""
    return sum(widths[i:j]) + len(COLUMN_GAP) * (j - i - 1)


def _chunks(widths: Sequence[int], width: int) -> list[list[int]]:
    """Consecutive column indices in as few blocks as fit in ``width`` (`` | `` between
    columns), balanced: the widest block as narrow as it can be, so a table splits into
    halves rather than into a full block and one stray column."""
    n = len(widths)
    if n == 0:
        return []
    gap = len(COLUMN_GAP)
    greedy = 1
    used = widths[0]
    for w in widths[1:]:
        if used + gap + w > width:
            greedy, used = greedy + 1, w
        else:
            used += gap + w
    # best[k][j]: the narrowest widest block splitting columns 0 … j-1 into k blocks.
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(greedy + 1)]
    cut = [[0] * (n + 1) for _ in range(greedy + 1)]
    best[0][0] = 0
    for k in range(1, greedy + 1):
        for j in range(1, n + 1):
            for i in range(k - 1, j):
                cost = max(best[k - 1][i], _span(widths, i, j))
                if cost < best[k][j]:
                    best[k][j], cut[k][j] = cost, i
    chunks: list[list[int]] = []
    j = n
    for k in range(greedy, 0, -1):
        i = cut[k][j]
        chunks.append(list(range(i, j)))
        j = i
    return chunks[::-1]


def _heading(result: PerturbationResult, table: Table | None) -> list[str]:
    title = (table.title if table is not None else "") or result.table_id or "table"
    parts = [title]
    if table is not None:
        parts.append(f"{_count(len(table.columns), 'column')}, {_count(len(table.rows), 'row')}")
    source = _ENTITY_SOURCES.get(result.entity_source, result.entity_source)
    parts.append(f"primary entity: {result.primary_entity} ({source})")
    if result.entity_links:
        best = result.entity_links[0]
        aligned = f"{best.aligned_columns} of {_count(best.columns, 'column')} named"
        if result.linked_entity is not None:
            parts.append(f"schema: {result.linked_entity} ({best.score:.2f}; {aligned})")
        else:
            parts.append(f"no schema (best: {best.entity}, {best.score:.2f}, below the threshold)")
    return parts


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _wrap(prefix: str, text: str, width: int) -> str:
    return textwrap.fill(
        text,
        width=width,
        initial_indent=prefix,
        subsequent_indent=" " * len(prefix),
        break_long_words=False,
        break_on_hyphens=False,
    )


def _wrap_items(prefix: str, items: Sequence[str], sep: str, width: int) -> str:
    """``items`` joined by ``sep`` and wrapped, never breaking a line inside an item."""
    glued = [item.replace(" ", _NBSP) for item in items]
    joint = sep.rstrip().replace(" ", _NBSP) + " " if sep.endswith(" ") else sep
    return _wrap(prefix, joint.join(glued), width).replace(_NBSP, " ")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: Any, max_cell: int) -> Text:
    if value is None:
        text = "NULL"  # a missing cell, or an added column no plausible value could fill
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = " ".join(str(value).split())
    cell = Text(text)
    cell.truncate(max(max_cell, 2), overflow="ellipsis")  # at least one character, then "…"
    return cell
