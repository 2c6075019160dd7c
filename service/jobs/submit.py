"""Turning a job request into items: one per table, each validated on its own.

A table that fails validation (or a limit, or a Spider database entry that cannot be read)
becomes a *failed* item carrying its error, so a batch is never rejected — nor silently
shortened — because of one bad entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from cta.datasets import BIRD, spider_database
from cta.formats.spider_schema import load_spider_database
from cta.table import InvalidTableError, Table
from service.errors import invalid, location
from service.jobs.store import NewItem
from service.limits import check_table_limits
from service.schemas import (
    DatasetJobCreate,
    EvalJobCreate,
    ItemError,
    SpiderJobCreate,
    TablesJobCreate,
)
from service.settings import ServiceSettings


def dumps(obj: Any) -> str:
    """Compact, key-sorted JSON: the stored form of an item."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def job_items(
    request: TablesJobCreate | SpiderJobCreate | DatasetJobCreate | EvalJobCreate,
    settings: ServiceSettings,
) -> list[NewItem]:
    """The items of a job request, in order; a 422 naming where the job as a whole is refused
    (over max_tables_per_job, no table at all, an eval job's endpoint or predictions)."""
    if isinstance(request, EvalJobCreate):
        return _eval_items(request, settings)
    if isinstance(request, TablesJobCreate):
        _check_count(len(request.tables), settings, "tables")
        items = [_table_item(obj, settings) for obj in request.tables]
    elif isinstance(request, DatasetJobCreate):
        if request.format == "bird":
            try:
                BIRD.check(request.kinds)  # a kind BIRD cannot hold: refused up front
            except InvalidTableError as exc:
                raise invalid(location("body", "kinds"), exc.problem, exc.message) from None
        items = _dataset_items(request, settings)
    else:
        items = []
        for entry in request.spider:
            items.extend(_spider_items(entry, settings))
            _check_count(len(items), settings, "spider")
    if not items:
        raise invalid(
            location("body", "spider"),
            "empty_job",
            "the job has no tables: every database entry of the payload is empty",
        )
    return items


def _check_count(n: int, settings: ServiceSettings, field: str) -> None:
    if n > settings.max_tables_per_job:
        raise invalid(
            location("body", field),
            "max_tables_per_job",
            f"the job has more than {settings.max_tables_per_job} tables; "
            f"max_tables_per_job = {settings.max_tables_per_job}",
        )


def _failed(obj: Any, item_id: str | None, problem: str, message: str) -> NewItem:
    """An item failed at submission: its input is kept and its error given."""
    return NewItem(dumps(obj), item_id, ItemError(problem=problem, message=message))


def _table_item(obj: Mapping[str, Any], settings: ServiceSettings) -> NewItem:
    table_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    try:
        table = Table.parse(obj)
        check_table_limits(table, settings)
    except InvalidTableError as exc:
        return _failed(obj, table_id, exc.problem, exc.message)
    return NewItem(dumps(table.model_dump(mode="json")), table.id)


def _spider_items(entry: Mapping[str, Any], settings: ServiceSettings) -> list[NewItem]:
    db_id = entry.get("db_id") if isinstance(entry.get("db_id"), str) else None
    try:
        tables = load_spider_database(entry)
    except InvalidTableError as exc:
        return [_failed(entry, db_id, exc.problem, exc.message)]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        # Untrusted payload: an entry of the wrong shape is that entry's error, not a 500.
        message = f"spider database {db_id!r}: {type(exc).__name__}: {exc}"
        return [_failed(entry, db_id, "invalid_spider", message)]
    if not tables:
        message = f"spider database {db_id!r} has no tables"
        return [_failed(entry, db_id, "empty_database", message)]
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


def _dataset_items(request: DatasetJobCreate, settings: ServiceSettings) -> list[NewItem]:
    """One item per database of the payload that some question record names, in payload
    order; then one failed item per database name the records use but the payload lacks.

    Every record lands in exactly one item, so none is dropped: records without a string
    ``db_id`` or ``query`` form a failed item of their own.
    """
    by_db: dict[str, list[dict[str, Any]]] = {}
    orphans: list[dict[str, Any]] = []
    sql_key = "SQL" if request.format == "bird" else "query"
    for record in request.questions:
        db_id = record.get("db_id")
        if isinstance(db_id, str) and isinstance(record.get(sql_key), str):
            by_db.setdefault(db_id, []).append(record)
        else:
            orphans.append(record)
    items: list[NewItem] = []
    tables_seen = 0
    known: set[str] = set()
    for entry in request.spider:
        db_id = entry.get("db_id") if isinstance(entry.get("db_id"), str) else None
        if db_id is None:
            items.append(
                _failed(entry, None, "invalid_spider", "a Spider entry needs a string db_id")
            )
            continue
        if db_id in known:
            message = f"database {db_id!r} appears twice in the payload"
            items.append(_failed(entry, db_id, "duplicate_database", message))
            continue
        if db_id not in by_db:
            continue  # a database no question uses has nothing to perturb
        known.add(db_id)
        payload: dict[str, Any] = {
            "entry": entry,
            "records": by_db[db_id],
            "kinds": list(dict.fromkeys(request.kinds)),  # each once, in the order given
            "seeds": list(dict.fromkeys(request.seeds)),
        }
        if request.format == "bird":
            payload["format"] = "bird"
            payload["descriptions"] = (request.descriptions or {}).get(db_id)
        error = _database_error(entry, db_id, settings)
        if error is None:
            tables_seen += len(entry.get("table_names") or [])
            _check_count(tables_seen, settings, "spider")
        items.append(NewItem(dumps(payload), db_id, error))
    for db_id, records in by_db.items():
        if db_id not in known:
            message = (
                f"{len(records)} question records name database {db_id!r}, absent from the payload"
            )
            items.append(_failed({"records": records}, db_id, "unknown_database", message))
    if orphans:
        message = f"{len(orphans)} question records lack a string db_id or {sql_key}"
        items.append(_failed({"records": orphans}, None, "invalid_record", message))
    return items


def _database_error(
    entry: Mapping[str, Any], db_id: str, settings: ServiceSettings
) -> ItemError | None:
    """Why a Spider entry cannot be perturbed (unreadable, or a table over a limit), or None:
    the entry read as the dataset job's worker reads it (:func:`cta.datasets.spider_database`)."""
    try:
        tables = spider_database(entry).tables
        if not tables:
            message = f"spider database {db_id!r} has no tables"
            return ItemError(problem="empty_database", message=message)
        for table in tables:
            check_table_limits(table, settings)
    except InvalidTableError as exc:
        return ItemError(problem=exc.problem, message=exc.message)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        message = f"spider database {db_id!r}: {type(exc).__name__}: {exc}"
        return ItemError(problem="invalid_spider", message=message)
    return None


#: the problems of an eval job's item that holds a set it could not score (listed as not
#: evaluated in the job's report)
UNSCORED_SETS = frozenset({"missing_predictions", "misaligned_predictions"})


def _name_of(stem: str, names: Sequence[str]) -> str | None:
    """The dataset name of a set stem (the longest ``<name>_`` it starts with)."""
    return max((n for n in names if stem.startswith(f"{n}_")), key=len, default=None)


def _unpredicted(request: EvalJobCreate, names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The sets given predictions cannot score — none, or not one per record — and the
    perturbed sets whose original is one of them: set → (problem, message)."""
    if request.predictions is None:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for stem, records in request.sets.items():
        predicted = request.predictions.get(stem)
        if predicted is None:
            message = f"set {stem}: no predictions (expected predictions[{stem!r}], one per record)"
            out[stem] = ("missing_predictions", f"{message}; not evaluated")
        elif len(predicted) != len(records):
            message = f"set {stem}: {len(predicted)} predictions for {len(records)} records"
            out[stem] = ("misaligned_predictions", f"{message}; not evaluated")
    for stem in request.sets:
        original = f"{_name_of(stem, names)}_original"
        if stem not in out and original in out:
            message = f"set {stem}: its original set {original} is not evaluated"
            out[stem] = (out[original][0], message)
    return out


def _eval_items(request: EvalJobCreate, settings: ServiceSettings) -> list[NewItem]:
    """One item per source database: its original questions and every perturbed question
    whose ``source_index`` points at one of them, with the entries they are asked on.

    Records that name no known database or original become one failed item, never dropped;
    with ``predictions``, a set given none (or not one per record) becomes one failed item
    named after it (``missing_predictions``/``misaligned_predictions``), never scored.
    """
    endpoint = str(request.endpoint) if request.endpoint is not None else None
    if endpoint is not None and not any(endpoint.startswith(p) for p in settings.eval_endpoints):
        raise invalid(
            location("body", "endpoint"),
            "endpoint_not_allowed",
            f"{endpoint} is not among the endpoints this service may call (eval_endpoints)",
        )
    unknown = sorted(set(request.predictions or {}) - set(request.sets))
    if unknown:
        raise invalid(
            location("body", "predictions"),
            "misaligned_predictions",
            f"predictions for sets the job has not: {', '.join(unknown)}",
        )
    entries = {e["db_id"]: e for e in request.spider if isinstance(e.get("db_id"), str)}
    names = [stem[: -len("_original")] for stem in request.sets if stem.endswith("_original")]
    unscored = _unpredicted(request, names)
    sources: dict[str, list[Any]] = {
        name: [r.get("db_id") for r in request.sets[f"{name}_original"]] for name in names
    }
    groups: dict[str, dict[str, list[tuple[int, dict[str, Any]]]]] = {}
    orphans: list[dict[str, Any]] = []
    for stem, records in request.sets.items():
        if stem in unscored:
            continue
        name = _name_of(stem, names)
        for position, record in enumerate(records):
            source = record.get("source_index")
            originals = sources.get(name or "", [])
            db_id = (
                originals[source]
                if isinstance(source, int)
                and not isinstance(source, bool)
                and 0 <= source < len(originals)
                else None
            )
            if not isinstance(db_id, str) or db_id not in entries:
                orphans.append(record)
                continue
            groups.setdefault(db_id, {}).setdefault(stem, []).append((position, record))
    _check_count(len(groups), settings, "sets")
    items = []
    for db_id, sets in groups.items():
        used = {r.get("db_id") for records in sets.values() for _, r in records}
        missing = sorted(str(d) for d in used if d not in entries)
        payload = {
            "entries": [entries[d] for d in entries if d in used],
            "sets": sets,
            "predictions": (
                {
                    stem: {str(p): request.predictions[stem][p] for p, _ in records}
                    for stem, records in sets.items()
                    if stem in request.predictions
                }
                if request.predictions is not None
                else None
            ),
            "endpoint": endpoint,
            "model": request.model,
            "timeout": request.timeout,
        }
        error = None
        if missing:
            message = f"records name databases absent from spider: {', '.join(missing)}"
            error = ItemError(problem="unknown_database", message=message)
        items.append(NewItem(dumps(payload), db_id, error))
    for stem, (problem, message) in unscored.items():
        items.append(_failed({"set": stem, "records": request.sets[stem]}, stem, problem, message))
    if orphans:
        message = (
            f"{len(orphans)} question records name no database of the payload, or no original "
            "question (source_index into <name>_original)"
        )
        items.append(_failed({"records": orphans}, None, "invalid_record", message))
    return items
