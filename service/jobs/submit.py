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
from service.schemas import ItemError, SpiderJobCreate, TablesJobCreate


def dumps(obj: Any) -> str:
    """Compact, key-sorted JSON: the stored form of an item."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def job_items(request: TablesJobCreate | SpiderJobCreate, settings: Settings) -> list[NewItem]:
    """The items of a job request, in order; raises when the job exceeds max_tables_per_job."""
    if isinstance(request, TablesJobCreate):
        _check_count(len(request.tables), settings)
        items = [_table_item(obj, settings) for obj in request.tables]
    else:
        items = []
        for entry in request.spider:
            items.extend(_spider_items(entry, settings))
            _check_count(len(items), settings)
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
