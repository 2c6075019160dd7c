"""Entity schemas: what tables about a kind of row contain (``data/entity-schemas/``), typed.

For each of 1,300 row entities (what one row of a table is about: ``song``, ``hospital``,
``football player``) the file lists the columns real tables about it have, grouped into
facets (identity, people involved, dates and places, amounts, …), each column with a type and
the other headers that mean exactly the same column *for that entity*. It is a candidate
source and a sense inventory for RPL and ADD (see :mod:`retriever.entity_linker`), never a
list of answers: the judge still decides every name.

This module is the one reader of the folder: it loads the two files, checks them against the
folder's card (``card.json``: counts, sha256, licence, origin) and indexes the headers by
:func:`cta.words.name_key`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cta.jsonl import read_objects
from cta.table import NamedColumn, ProblemError
from cta.words import name_key

SCHEMAS_FILE = "schemas.jsonl"
ENTITIES_FILE = "entities.jsonl"
CARD_FILE = "card.json"

#: the folder shipped with the product (``CTA_ENTITY_SCHEMAS`` names another file, or ``none``)
DEFAULT_DIR = Path(__file__).resolve().parents[1] / "data" / "entity-schemas"


class EntitySchemasError(ProblemError):
    """The entity-schema files are missing or malformed (``invalid_entity_schemas``; the
    command line prints it as one line)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_entity_schemas", message)


class SchemaColumn(NamedColumn):
    """One column of an entity schema: its header, type, facet and same-meaning headers."""

    facet: str
    equivalent: tuple[str, ...] = ()

    def headers(self) -> tuple[str, ...]:
        """Its name, then every header of the same meaning."""
        return (self.name, *self.equivalent)


class EntitySchema(BaseModel):
    """What tables about one kind of row contain."""

    model_config = ConfigDict(frozen=True)

    entity: str
    domain: str
    also: tuple[str, ...] = ()
    hint: str = ""
    columns: tuple[SchemaColumn, ...] = Field(default_factory=tuple)

    def names(self) -> tuple[str, ...]:
        """The entity's name, then its other names."""
        return (self.entity, *self.also)

    def facets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.facet for c in self.columns))

    def columns_named(self, name: str) -> frozenset[str]:
        """The columns one of whose headers has ``name``'s :func:`name_key` (more than one for
        a generic header such as ``date``; none for a name the schema does not hold)."""
        return self._owners.get(name_key(name), frozenset())

    @cached_property
    def _owners(self) -> dict[str, frozenset[str]]:
        owners: dict[str, set[str]] = {}
        for column in self.columns:
            for header in column.headers():
                owners.setdefault(name_key(header), set()).add(column.name)
        return {key: frozenset(names) for key, names in owners.items()}


class EntitySchemas:
    """Every entity schema of one file, with the headers indexed by :func:`name_key`."""

    def __init__(self, schemas: tuple[EntitySchema, ...], origin: str = "") -> None:
        self.schemas = schemas
        self.origin = origin
        # Some 120,000 headers, most of them written many times: each spelling keyed once.
        keys: dict[str, str] = {}

        def key(name: str) -> str:
            found = keys.get(name)
            if found is None:
                found = keys[name] = name_key(name)
            return found

        self._by_entity = {key(s.entity): i for i, s in enumerate(schemas)}
        # header key -> (schema index, column index), every header of every column (once per
        # column, however many of its headers share the key)
        self._headers: dict[str, list[tuple[int, int]]] = {}
        for i, schema in enumerate(schemas):
            for j, column in enumerate(schema.columns):
                for header_key in dict.fromkeys(map(key, column.headers())):
                    self._headers.setdefault(header_key, []).append((i, j))
        # entity-name key -> schema indices (names and other names)
        self._entity_names: dict[str, list[int]] = {}
        for i, schema in enumerate(schemas):
            for name in schema.names():
                self._entity_names.setdefault(key(name), []).append(i)

    def __len__(self) -> int:
        return len(self.schemas)

    def __iter__(self) -> Iterator[EntitySchema]:
        return iter(self.schemas)

    def __getitem__(self, i: int) -> EntitySchema:
        return self.schemas[i]

    def index_of(self, entity: str) -> int | None:
        """The schema whose entity is ``entity`` (by its name key), if any."""
        return self._by_entity.get(name_key(entity))

    def columns_with_header(self, key: str) -> list[tuple[int, int]]:
        """(schema, column) of every column one of whose headers has the name key ``key``."""
        return self._headers.get(key, [])

    def entities_named(self, key: str) -> list[int]:
        """The schemas whose entity (or one of its other names) has the name key ``key``."""
        return self._entity_names.get(key, [])

    def known_names(self) -> frozenset[str]:
        """Every header of every column (name-key form)."""
        return frozenset(self._headers)


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return read_objects(path, EntitySchemasError)


def _schema(obj: dict[str, Any], entity: dict[str, Any] | None) -> EntitySchema:
    columns = [
        {
            "name": attr["name"],
            "type": attr.get("type", "text"),
            "facet": group["group"],
            "equivalent": tuple(attr.get("equivalent", ())),
        }
        for group in obj.get("groups", ())
        for attr in group.get("attributes", ())
    ]
    entity = entity or {}
    # One validation of the whole schema, its columns within (not one call per column).
    return EntitySchema.model_validate(
        {
            "entity": obj["entity"],
            "domain": obj.get("domain", entity.get("domain", "")),
            "also": tuple(entity.get("also", ())),
            "hint": entity.get("hint", ""),
            "columns": tuple(columns),
        }
    )


def read_entity_schemas(path: Path) -> EntitySchemas:
    """The schemas of ``path`` (a ``schemas.jsonl``, or the folder holding one), with the other
    names and hints of ``entities.jsonl`` beside it where there is one."""
    path = Path(path)
    schemas_path = path / SCHEMAS_FILE if path.is_dir() else path
    entities_path = schemas_path.with_name(ENTITIES_FILE)
    entities: dict[str, dict[str, Any]] = {}
    if entities_path.is_file():
        entities = {obj.get("entity", ""): obj for _, obj in _lines(entities_path)}
    out = []
    for n, obj in _lines(schemas_path):
        try:
            out.append(_schema(obj, entities.get(obj.get("entity", ""))))
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise EntitySchemasError(f"{schemas_path}:{n}: not an entity schema ({exc})") from None
    if not out:
        raise EntitySchemasError(f"{schemas_path}: no entity schema")
    return EntitySchemas(tuple(out), origin=str(schemas_path))


@lru_cache(maxsize=4)
def load_entity_schemas(path: Path) -> EntitySchemas:
    """:func:`read_entity_schemas`, memoised per path (the pipeline and the ADD guard share it)."""
    return read_entity_schemas(path)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def describe(folder: Path) -> dict[str, Any]:
    """What the card of ``folder`` says: the files' sha256 and sizes, and the counts read off
    them (entities, columns, same-meaning headers, entities per domain)."""
    folder = Path(folder)
    schemas = read_entity_schemas(folder)
    domains: dict[str, int] = {}
    for schema in schemas:
        domains[schema.domain] = domains.get(schema.domain, 0) + 1
    return {
        "files": {
            name: {"sha256": sha256_of(folder / name), "bytes": (folder / name).stat().st_size}
            for name in (SCHEMAS_FILE, ENTITIES_FILE)
        },
        "counts": {
            "entities": len(schemas),
            "columns": sum(len(s.columns) for s in schemas),
            "equivalent_headers": sum(len(c.equivalent) for s in schemas for c in s.columns),
            "domains": dict(sorted(domains.items())),
        },
    }


def check_card(folder: Path) -> list[str]:
    """Where ``folder``'s files differ from its card (empty when they match)."""
    folder = Path(folder)
    try:
        card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return [f"{folder / CARD_FILE}: {exc}"]
    found = describe(folder)
    problems = []
    for key in ("files", "counts"):
        if card.get(key) != found[key]:
            problems.append(f"{key}: card says {card.get(key)}, files give {found[key]}")
    return problems
