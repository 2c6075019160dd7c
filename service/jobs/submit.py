"""Turning a job request into items: one per table, each validated on its own.

A table that fails validation (or a limit, or a Spider database entry that cannot be read)
becomes a *failed* item carrying its error, so a batch is never rejected — nor silently
shortened — because of one bad entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cta.formats.tables import load_spider_database
from cta.settings import Settings
from cta.table import InvalidTableError, Table
from service.jobs.store import NewItem
from service.limits import check_table_limits
from service.schemas import DatasetJobCreate, ItemError, SpiderJobCreate, TablesJobCreate


def dumps(obj: Any) -> str:
    """Compact, key-sorted JSON: the stored form of an item."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def job_items(
    request: TablesJobCreate | SpiderJobCreate | DatasetJobCreate, settings: Settings
) -> list[NewItem]:
    """The items of a job request, in order; raises when the job exceeds max_tables_per_job."""
    if isinstance(request, TablesJobCreate):
        _check_count(len(request.tables), settings)
        items = [_table_item(obj, settings) for obj in request.tables]
    elif isinstance(request, DatasetJobCreate):
        items = _dataset_items(request, settings)
    else:
        items = []
        for entry in request.spider:
            items.extend(_spider_items(entry, settings))
            _check_count(len(items), settings)
    if not items:
        raise InvalidTableError(
            "empty_job", "the job has no tables: every database entry of the payload is empty"
        )
    return items


def _check_count(n: int, settings: Settings) -> None:
    if n > settings.max_tables_per_job:
        raise InvalidTableError(
            "max_tables_per_job",
            f"the job has more than {settings.max_tables_per_job} tables; "
            f"max_tables_per_job = {settings.max_tables_per_job}",
        )


def _table_item(obj: Mapping[str, Any], settings: Settings) -> NewItem:
    table_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    try:
        table = Table.parse(obj)
        check_table_limits(table, settings)
    except InvalidTableError as exc:
        return NewItem(dumps(obj), table_id, ItemError(problem=exc.problem, message=exc.message))
    return NewItem(dumps(table.model_dump(mode="json")), table.id)


def _spider_items(entry: Mapping[str, Any], settings: Settings) -> list[NewItem]:
    db_id = entry.get("db_id") if isinstance(entry.get("db_id"), str) else None
    try:
        tables = load_spider_database(entry)
    except InvalidTableError as exc:
        return [NewItem(dumps(entry), db_id, ItemError(problem=exc.problem, message=exc.message))]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        # Untrusted payload: an entry of the wrong shape is that entry's error, not a 500.
        message = f"spider database {db_id!r}: {type(exc).__name__}: {exc}"
        return [NewItem(dumps(entry), db_id, ItemError(problem="invalid_spider", message=message))]
    if not tables:
        message = f"spider database {db_id!r} has no tables"
        return [NewItem(dumps(entry), db_id, ItemError(problem="empty_database", message=message))]
    items = []
    for table in tables:
        try:
            check_table_limits(table, settings)
        except InvalidTableError as exc:
            error = ItemError(problem=exc.problem, message=exc.message)
            items.append(NewItem(dumps(table.model_dump(mode="json")), table.id, error))
            continue
        items.append(NewItem(dumps(table.model_dump(mode="json")), table.id))
    return items


def _dataset_items(request: DatasetJobCreate, settings: Settings) -> list[NewItem]:
    """One item per database of the payload that some question record names, in payload
    order; then one failed item per database name the records use but the payload lacks.

    Every record lands in exactly one item, so none is dropped: records without a string
    ``db_id`` or ``query`` form a failed item of their own.
    """
    by_db: dict[str, list[dict[str, Any]]] = {}
    orphans: list[dict[str, Any]] = []
    for record in request.questions:
        db_id = record.get("db_id")
        if isinstance(db_id, str) and isinstance(record.get("query"), str):
            by_db.setdefault(db_id, []).append(record)
        else:
            orphans.append(record)
    items: list[NewItem] = []
    tables_seen = 0
    known: set[str] = set()
    for entry in request.spider:
        db_id = entry.get("db_id") if isinstance(entry.get("db_id"), str) else None
        if db_id is None:
            failure = ItemError(
                problem="invalid_spider", message="a Spider entry needs a string db_id"
            )
            items.append(NewItem(dumps(entry), None, failure))
            continue
        if db_id in known:
            message = f"database {db_id!r} appears twice in the payload"
            failure = ItemError(problem="duplicate_database", message=message)
            items.append(NewItem(dumps(entry), db_id, failure))
            continue
        if db_id not in by_db:
            continue  # a database no question uses has nothing to perturb
        known.add(db_id)
        payload = {
            "entry": entry,
            "records": by_db[db_id],
            "kinds": list(dict.fromkeys(request.kinds)),  # each once, in the order given
            "seeds": list(dict.fromkeys(request.seeds)),
        }
        error = _database_error(entry, db_id, settings)
        if error is None:
            tables_seen += len(entry.get("table_names") or [])
            _check_count(tables_seen, settings)
        items.append(NewItem(dumps(payload), db_id, error))
    for db_id, records in by_db.items():
        if db_id not in known:
            message = (
                f"{len(records)} question records name database {db_id!r}, absent from the payload"
            )
            items.append(
                NewItem(
                    dumps({"records": records}),
                    db_id,
                    ItemError(problem="unknown_database", message=message),
                )
            )
    if orphans:
        message = f"{len(orphans)} question records lack a string db_id or query"
        items.append(
            NewItem(
                dumps({"records": orphans}),
                None,
                ItemError(problem="invalid_record", message=message),
            )
        )
    return items


def _database_error(entry: Mapping[str, Any], db_id: str, settings: Settings) -> ItemError | None:
    """Why a Spider entry cannot be perturbed (unreadable, or a table over a limit), or None."""
    from cta.formats.spider import spider_schema

    try:
        tables = load_spider_database(entry)
        if not tables:
            message = f"spider database {db_id!r} has no tables"
            return ItemError(problem="empty_database", message=message)
        spider_schema(entry)
        for table in tables:
            check_table_limits(table, settings)
    except InvalidTableError as exc:
        return ItemError(problem=exc.problem, message=exc.message)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        message = f"spider database {db_id!r}: {type(exc).__name__}: {exc}"
        return ItemError(problem="invalid_spider", message=message)
    return None
