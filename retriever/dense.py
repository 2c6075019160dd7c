"""Dense retrieval (docs/method.md §3.1): the query table itself finds domain-related tables.

The paper retrieves the top 100 tables of a web-table corpus with a TAPAS dense retriever
and takes their columns, minus the input table's own, as the candidate pool. Our service
receives a table, so the table (name, columns, a few values and, when given, questions) is
the query: the released code's question-only path is a special case.
"""

from __future__ import annotations

from cta import registry
from cta.components import RetrievedTable, TableEncoder
from cta.pool import is_machine_named
from cta.settings import Settings
from cta.table import Table
from cta.words import name_key
from retriever.index import (
    IndexNotFoundError,
    TableIndex,
    fingerprint,
)

__all__ = [
    "DenseRetriever",
    "encoder_for_index",
    "retriever_from_settings",
]

# Entries searched beyond k, so that excluding the query's own entry (or copies of it)
# still leaves k tables; the search widens further when that is not enough.
EXTRA_HITS = 16
# Scores are rounded before ranking so that float noise cannot reorder ties; ties then
# go by table id.
SCORE_DECIMALS = 6
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


@registry.register("retriever", "dense")
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
