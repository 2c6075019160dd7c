"""Entity linking and the entity-schema candidate source (``CTA_ENTITY_LINKER=entity-schemas``).

A table is linked to the entity schema (:mod:`cta.entity_schemas`) that best says what one of
its rows is about, and each of its columns to the schema column it names:

* **score** of a schema = the table encoder's cosine of the table (name and columns, no cells)
  and the schema (entity and columns) + ½ · the word-vector cosine of the table's primary
  entity and the schema's entity names + ½ · the share of the table's columns that one of the
  schema's headers names (through :func:`retriever.thesaurus.name_variants`: case, plurals and
  the entity's words in front ignored). The table links to the best schema when its score
  reaches ``entity_link_threshold``; else it is not linked and the other sources alone propose.
* **alignment**: a column that a header of the linked schema names aligns with that column
  (score 1); a column none names aligns with the schema column whose header is most similar
  by word vectors, when at least ``entity_align_min_similarity``. Either way the types must
  agree (:func:`compatible`: a text column never aligns with a number one).

:class:`EntitySchemaSource` proposes, for an aligned column, the schema column's same-meaning
headers as RPL names and the schema's columns that no column of the table aligns with as ADD
names — its own facet first, then the nearest by word vectors, ``entity_schema_add_candidates``
in all. A column that aligns with nothing gets no schema names: beside it, a schema's columns
were not what readers would add. The judge decides every name as for every other source.

The schemas' encoder vectors are computed once per schema file and encoder and kept in the
cache (``$CTA_HOME/entity-schemas``; ``cta setup`` builds them).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import retriever.encoders  # noqa: F401 — registers the encoders asked for by name here
import retriever.rerank  # noqa: F401 — registers the word vectors asked for by name here
from cta import registry
from cta.components import (
    ColumnContext,
    Reranker,
    SourceProposal,
    TableEncoder,
    TableLink,
)
from cta.entity_schemas import EntitySchema, EntitySchemas, load_entity_schemas, sha256_of
from cta.results import Candidate, ColumnAlignment, EntityLink
from cta.settings import Settings
from cta.table import Column, ColumnType, Table
from cta.words import name_key
from retriever.thesaurus import name_variants

log = logging.getLogger(__name__)

__all__ = ["EntitySchemaLinker", "EntitySchemaSource", "schema_table"]

#: links shown per table
SHOWN_LINKS = 3
#: schemas scored in full (alignment, name similarity) after the encoder's first cut
SHORTLIST = 40
NAME_WEIGHT = 0.5
ALIGNED_WEIGHT = 0.5
SOURCE = "entity-schema"
#: a header that schemas of this many domains hold is a column word of every kind of table
GENERIC_DOMAINS = 4


def schema_table(schema: EntitySchema) -> Table:
    """An entity schema read as a table (its entity as the name, its columns as headers): what
    the table encoder compares a query table with."""
    return Table.parse(
        {
            "name": schema.entity,
            "columns": [{"name": c.name, "type": c.type.value} for c in schema.columns],
        }
    )


def _query_table(table: Table, entity: str | None) -> Table:
    """The query as the encoder reads it for linking: its name (or entity) and columns, no cells."""
    return Table.parse(
        {
            "name": table.name or table.caption or entity or None,
            "columns": [{"name": c.name, "type": c.type.value} for c in table.columns],
        }
    )


class EntitySchemaLinker:
    """Links tables to entity schemas (a :class:`cta.components.EntityLinker`)."""

    name = "entity-schemas"

    def __init__(
        self,
        schemas: EntitySchemas,
        encoder: TableEncoder,
        reranker: Reranker,
        *,
        threshold: float,
        align_min_similarity: float,
        cache_dir: Path | None = None,
    ) -> None:
        self.schemas = schemas
        self.encoder = encoder
        self.reranker = reranker
        self.threshold = threshold
        self.align_min_similarity = align_min_similarity
        self.cache_dir = cache_dir
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()
        self._words: dict[str, tuple[str, frozenset[str]]] = {}
        self._entity_names = [n for s in schemas for n in s.names()]
        self._entity_of_name = [i for i, s in enumerate(schemas) for _ in s.names()]

    # -- the schemas' vectors ------------------------------------------------------------
    def _cache_path(self) -> Path | None:
        if self.cache_dir is None or not self.schemas.origin:
            return None
        digest = sha256_of(Path(self.schemas.origin))[:16]
        return self.cache_dir / f"{digest}-{self.encoder.name}-{self.encoder.dim}.npy"

    def vectors(self, progress: bool = False) -> np.ndarray:
        """The encoder's vector of every schema ``(len(schemas), dim)``, from the cache when
        built before (else computed, and cached)."""
        with self._lock:
            if self._vectors is not None:
                return self._vectors
            path = self._cache_path()
            if path is not None and path.is_file():
                vectors = np.load(path)
                if vectors.shape == (len(self.schemas), self.encoder.dim):
                    self._vectors = vectors
                    return vectors
            vectors = self._encode(progress)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp.npy")
                np.save(tmp, vectors)
                tmp.replace(path)
            self._vectors = vectors
            return vectors

    def _encode(self, progress: bool) -> np.ndarray:
        tables = [schema_table(s) for s in self.schemas]
        step = 128
        chunks = range(0, len(tables), step)
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(tables), desc="entity schemas", unit="schema")
        parts = []
        for start in chunks:
            parts.append(self.encoder.encode(tables[start : start + step]))
            if progress:
                bar.update(len(tables[start : start + step]))
        if progress:
            bar.close()
        return np.vstack(parts).astype(np.float32)

    # -- linking -------------------------------------------------------------------------
    def _header_alignment(self, table: Table, entity: str | None) -> dict[int, dict[str, int]]:
        """schema index → {table column name → schema column index} for every column that a
        header of the schema names (the column's own name before its variants)."""
        found: dict[int, dict[str, int]] = {}
        for column in table.columns:
            for key in name_variants(column.name, entity):
                for s, c in self.schemas.columns_with_header(key):
                    if compatible(column.type, self.schemas[s].columns[c].type):
                        found.setdefault(s, {}).setdefault(column.name, c)
        return found

    def link(self, table: Table, entity: str | None) -> TableLink:
        """The table's best entity schemas (up to three, best first) and, when the best reaches
        the threshold, its columns' alignment with it."""
        if not table.columns:
            return TableLink()
        query = self.encoder.encode([_query_table(table, entity)])[0]
        table_sim = self.vectors() @ query
        headers = self._header_alignment(table, entity)
        aligned = np.zeros(len(self.schemas))
        for s, columns in headers.items():
            aligned[s] = len(columns) / len(table.columns)
        # First cut by the encoder and the headers, then the entity names for the shortlist.
        first = table_sim + ALIGNED_WEIGHT * aligned
        order = np.argsort(-first, kind="stable")[:SHORTLIST]
        name_sim = np.zeros(len(self.schemas))
        if entity:
            shortlisted = {int(s) for s in order}
            names = [
                n
                for n, s in zip(self._entity_names, self._entity_of_name, strict=True)
                if s in shortlisted
            ]
            owners = [s for s in self._entity_of_name if s in shortlisted]
            ranking = self.reranker.rank_many([entity], names, len(names))[0]
            best: dict[str, float] = dict(ranking)
            for n, s in zip(names, owners, strict=True):
                name_sim[s] = max(name_sim[s], best.get(n, 0.0))
        score = first + NAME_WEIGHT * name_sim
        ranked = sorted((int(s) for s in order), key=lambda s: (-round(float(score[s]), 6), s))
        links = tuple(
            EntityLink(
                entity=self.schemas[s].entity,
                domain=self.schemas[s].domain,
                score=round(float(score[s]), 4),
                table_similarity=round(float(table_sim[s]), 4),
                name_similarity=round(float(name_sim[s]), 4),
                aligned_columns=len(headers.get(s, {})),
                columns=len(table.columns),
            )
            for s in ranked[:SHOWN_LINKS]
        )
        if not ranked or score[ranked[0]] < self.threshold:
            return TableLink(links=links)
        best_schema = ranked[0]
        schema = self.schemas[best_schema]
        return TableLink(
            links=links,
            schema=schema,
            alignment=self._align(table, schema, headers.get(best_schema, {})),
            names=tuple(name_key(n) for n in (table.name, *table.column_names) if n),
        )

    def _align(
        self, table: Table, schema: EntitySchema, by_header: dict[str, int]
    ) -> dict[str, ColumnAlignment]:
        out: dict[str, ColumnAlignment] = {}
        for name, c in by_header.items():
            col = schema.columns[c]
            out[name] = ColumnAlignment(
                entity=schema.entity,
                column=col.name,
                facet=col.facet,
                type=col.type,
                score=1.0,
                via="header",
            )
        taken = {out[n].column for n in out}
        rest = [c.name for c in table.columns if c.name not in out]
        if not rest:
            return out
        headers = [h for col in schema.columns if col.name not in taken for h in col.headers()]
        owner = {h: col for col in schema.columns if col.name not in taken for h in col.headers()}
        if not headers:
            return out
        types = {c.name: c.type for c in table.columns}
        for name, ranking in zip(rest, self.reranker.rank_many(rest, headers, 1), strict=True):
            if ranking and ranking[0][1] >= self.align_min_similarity:
                col = owner[ranking[0][0]]
                if col.name in taken or not compatible(types[name], col.type):
                    continue
                taken.add(col.name)
                out[name] = ColumnAlignment(
                    entity=schema.entity,
                    column=col.name,
                    facet=col.facet,
                    type=col.type,
                    score=round(float(ranking[0][1]), 4),
                    via="vectors",
                )
        return {c.name: out[c.name] for c in table.columns if c.name in out}

    def belongs_elsewhere(self, link: TableLink, name: str) -> bool:
        """Whether ``name`` is a header that only schemas of other domains than the linked
        one's hold (``laps``, ``opponent`` in a table of trains): no new column of this table."""
        schema = link.schema_
        if schema is None:
            return False
        key = name_key(name)
        domains = {self.schemas[s].domain for s, _ in self.schemas.columns_with_header(key)}
        return bool(domains) and schema.domain not in domains

    def _column_word(self, domain: str, key: str) -> bool:
        """Whether ``key`` is a column header of some schema of ``domain``, or of schemas in
        :data:`GENERIC_DOMAINS` domains or more (a column word of every kind of table:
        ``surname``, ``nation``, ``director``), rather than a kind of row of another domain."""
        domains = {self.schemas[s].domain for s, _ in self.schemas.columns_with_header(key)}
        return domain in domains or len(domains) >= GENERIC_DOMAINS

    def _schema_words(self, schema: EntitySchema) -> tuple[str, frozenset[str]]:
        """A schema's entity names (name keys, joined) and header keys, computed once per
        schema: :meth:`contradicts` asks for them for every candidate of a linked table."""
        found = self._words.get(schema.entity)
        if found is None:
            found = self._words[schema.entity] = (
                " ".join(name_key(n) for n in schema.names()),
                frozenset(name_key(h) for col in schema.columns for h in col.headers()),
            )
        return found

    def contradicts(self, link: TableLink, name: str) -> bool:
        """Whether ``name`` names another kind of row than the linked one: some run of its
        words is the name of another entity, which neither the linked entity's names, nor its
        headers, nor the table's own names hold, and which is no column word of the linked
        domain or of many (``film``, ``film title`` beside a book's title; but ``song title``
        beside a singer's ``song name``, and ``surname`` beside a player's ``last name``)."""
        schema = link.schema_
        if schema is None:
            return False
        words = name_key(name).split()
        own, headers = self._schema_words(schema)
        for n in range(len(words), 0, -1):
            for i in range(len(words) - n + 1):
                run = " ".join(words[i : i + n])
                if not self.schemas.entities_named(run):
                    continue
                if (
                    _has_words(own, run)
                    or any(_has_words(h, run) for h in headers)
                    or any(_has_words(n, run) for n in link.names)
                    or self._column_word(schema.domain, run)
                ):
                    return False
                return True
        return False


def compatible(column: ColumnType, schema_column: ColumnType) -> bool:
    """Whether a table column of type ``column`` can be the schema column of type
    ``schema_column``: the same type, a year kept as a number, or a type one side does not
    know (``others``). A text column is never a number one (``Urban Area`` is not ``area``)."""
    if ColumnType.OTHERS in (column, schema_column) or column == schema_column:
        return True
    return {column, schema_column} == {ColumnType.NUMBER, ColumnType.TIME}


def _has_words(text: str, run: str) -> bool:
    return re.search(rf"(^| ){re.escape(run)}( |$)", text) is not None


class EntitySchemaSource:
    """Names from the linked entity schema (a :class:`cta.components.CandidateSource`)."""

    name = SOURCE

    def __init__(self, max_add: int, reranker: Reranker | None = None) -> None:
        self.max_add = max_add
        self.reranker = reranker

    def propose(self, context: ColumnContext) -> SourceProposal:
        link = context.link
        if link is None or link.schema_ is None:
            return SourceProposal()
        aligned = link.alignment.get(context.name)
        if aligned is None:
            return SourceProposal()
        schema = link.schema_
        column = next(c for c in schema.columns if c.name == aligned.column)
        provenance = f"{SOURCE}:{schema.entity}/{column.name}"
        others = list(context.others)
        equivalent = [
            Candidate(
                name=header,
                type=context.type,
                score=_order_score(i),
                source=SOURCE,
                provenance=provenance,
            )
            for i, header in enumerate(column.headers())
            if name_key(header) != name_key(context.name)
            and not _other_column_could_take(header, others, link, aligned.column)
        ]
        taken = {a.column for a in link.alignment.values()}
        free = [c for c in schema.columns if c.name not in taken]
        own = [c for c in free if c.facet == column.facet]
        rest = [c for c in free if c.facet != column.facet]
        if self.reranker is not None and rest:
            ranked = self.reranker.rank_many([column.name], [c.name for c in rest], len(rest))[0]
            position = {n: i for i, (n, _) in enumerate(ranked)}
            rest.sort(key=lambda c: position.get(c.name, len(rest)))
        chosen = [*own, *rest][: self.max_add]
        associated = [
            Candidate(
                name=c.name,
                type=c.type,
                score=_order_score(i),
                source=SOURCE,
                provenance=f"{SOURCE}:{schema.entity}/{c.facet}",
                rank_group=0 if c.facet == column.facet else 1,
            )
            for i, c in enumerate(chosen)
        ]
        return SourceProposal(equivalent=equivalent, associated=associated, typed=True)


def _other_column_could_take(
    header: str, others: Sequence[Column], link: TableLink, own_column: str
) -> bool:
    """Whether another column of the table could take ``header``: it is that column's name, a
    word of it (a generic ``date`` beside a ``death date``), or a header of the schema column
    another table column aligns with."""
    key = name_key(header)
    for other in others:
        other_key = name_key(other.name)
        if key == other_key or _has_words(other_key, key):
            return True
        aligned = link.alignment.get(other.name)
        if aligned is not None and aligned.column != own_column and link.schema_ is not None:
            col = next(c for c in link.schema_.columns if c.name == aligned.column)
            if key in {name_key(h) for h in col.headers()}:
                return True
    return False


def _order_score(i: int) -> float:
    return round(max(0.0, 1.0 - i / 20), 6)


def linker_from_settings(settings: Settings) -> EntitySchemaLinker | None:
    """The linker over ``settings``' entity-schema file (None when it is ``none``), with the
    table encoder of the index and the reranker's word vectors, its schema vectors loaded."""
    path = settings.resolved_entity_schemas()
    if path is None:
        return None
    schemas = load_entity_schemas(path)
    encoder: TableEncoder = registry.create("encoder", settings.encoder, settings)
    reranker: Reranker = registry.create("vectors", settings.vectors, settings)
    linker = EntitySchemaLinker(
        schemas,
        encoder,
        reranker,
        threshold=settings.entity_link_threshold,
        align_min_similarity=settings.entity_align_min_similarity,
        cache_dir=settings.home / "entity-schemas",
    )
    # Loaded (or encoded once, with a progress bar) here, so no request waits for it.
    linker.vectors(progress=True)
    return linker


registry.register("linker", "entity-schemas")(linker_from_settings)


@registry.register("source", SOURCE)
def _entity_schema_source(settings: Settings) -> EntitySchemaSource:
    reranker: Reranker = registry.create("vectors", settings.vectors, settings)
    return EntitySchemaSource(settings.entity_schema_add_candidates, reranker)
