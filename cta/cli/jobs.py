"""``cta jobs``: batch jobs on a running service, through the client SDK.

``cta jobs submit DATASET --wait`` uploads the tables of a file or folder (our table JSON /
JSONL, CSV, WikiSQL, WDC, or a Spider ``tables.json``, sent as a Spider job), shows a
progress bar and writes one JSON line per table. ``status``, ``results``, ``cancel`` and
``list`` act on jobs by id; ``migrate`` brings the jobs database to the latest schema.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from cta.cli._io import describe_table_error, error
from cta.families import family_kinds
from cta.formats.tables import load_tables
from cta.table import InvalidTableError

_TABLE_FILES = (".csv", ".json", ".jsonl")


def register(sub: Any) -> None:
    p = sub.add_parser("jobs", help="batch jobs on a running service (submit, status, results)")
    jobs = p.add_subparsers(dest="jobs_command", required=True, metavar="ACTION")

    s = jobs.add_parser("submit", help="submit the tables of DATASET (a file or a folder)")
    s.add_argument(
        "dataset", type=Path, help="tables file (.json/.jsonl/.csv), Spider tables.json, or folder"
    )
    s.add_argument(
        "--wait", action="store_true", help="wait with a progress bar, then write results"
    )
    s.add_argument(
        "--questions",
        type=Path,
        help="with a Spider tables.json: its question file (dev.json …) — a dataset job running "
        "the ADVETA protocol, one item per database",
    )
    s.add_argument(
        "--kind",
        default="rpl,add",
        help="dataset jobs: comma-separated rpl, add and families (as `cta dataset perturb`), or all",
    )
    s.add_argument("--seeds", type=int, default=5, help="dataset jobs: seeds 0 … N-1")
    s.add_argument("--output", "-o", type=Path, help="results as JSON lines (default: stdout)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--samples", type=int, default=0, help="perturbed tables of each kind per table")
    s.add_argument("--max-candidates", type=int, help="keep at most this many names per column")
    _client_options(s)
    s.set_defaults(func=_submit)

    for name, helptext, func in (
        ("status", "a job's status and counts", _status),
        ("results", "a job's items as JSON lines", _results),
        ("cancel", "cancel a job's remaining tables", _cancel),
    ):
        a = jobs.add_parser(name, help=helptext)
        a.add_argument("job_id")
        if name == "results":
            a.add_argument("--output", "-o", type=Path, help="default: stdout")
        _client_options(a)
        a.set_defaults(func=func)

    ls = jobs.add_parser("list", help="your jobs, newest first")
    _client_options(ls)
    ls.set_defaults(func=_list)

    m = jobs.add_parser(
        "migrate", help="upgrade the jobs database (CTA_DATABASE_URL) to the latest schema"
    )
    m.set_defaults(func=_migrate)


def _service_errors(func: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """A service that cannot be reached, or that refuses: one line on stderr, exit status 1."""

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        import httpx  # deferred: with the service SDK, loaded only by `cta jobs`

        from service.client import ServiceError  # deferred: the service package loads FastAPI

        try:
            return func(args)
        except httpx.TransportError as exc:
            where = f" at {exc.request.url}" if _has_request(exc) else ""
            error(f"cannot reach the service{where}: {exc}")
            return 1
        except ServiceError as exc:
            error(f"the service answered {exc}")
            return 1

    return run


def _has_request(exc: Exception) -> bool:
    try:
        return getattr(exc, "request", None) is not None
    except RuntimeError:  # httpx raises when no request is attached
        return False


def _client_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", help="service URL (default: CTA_SERVICE_URL, else http://host:port)")
    p.add_argument("--api-key", help="bearer key (default: CTA_API_KEY)")


def _client(args: argparse.Namespace) -> Any:
    """The SDK client on ``--url`` / ``CTA_SERVICE_URL`` (else the service's host:port)."""
    # deferred: the service package loads FastAPI (not for other commands)
    from service.client import Client
    from service.settings import get_service_settings

    settings = get_service_settings()
    url = args.url or settings.service_url or f"http://{settings.host}:{settings.port}"
    return Client(url, api_key=args.api_key or settings.api_key)


@contextmanager
def _sink(path: Path | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        return
    with path.open("w", encoding="utf-8") as fh:
        yield fh


def _print(model: Any) -> None:
    print(model.model_dump_json(indent=2))


def _write_items(job: Any, path: Path | None) -> None:
    """The job's items as JSON lines; into a file, with the job's provenance beside it
    (``FILE.manifest.json``: what the service recorded at submission)."""
    with _sink(path) as out:
        for item in job.results():
            out.write(item.model_dump_json(exclude_none=True) + "\n")
    if path is not None:
        manifest = {"job_id": job.id, **job.manifest()}
        side = path.with_name(path.name + ".manifest.json")
        side.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_dataset(path: Path) -> tuple[str, list[Any]]:
    """``("spider", entries)`` for a Spider tables.json, else ``("tables", table dicts)``.

    A missing, unreadable or malformed file raises :class:`InvalidTableError` naming it.
    """
    if not path.exists():
        raise InvalidTableError("not_found", f"{path}: no such file or folder")
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.casefold() in _TABLE_FILES)
        if not files:
            raise InvalidTableError("no_tables", f"{path} holds no .csv/.json/.jsonl files")
    else:
        files = [path]
        if path.suffix.casefold() == ".json":
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise InvalidTableError("unreadable", f"{path}: {exc.strerror or exc}") from None
            except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
                raise InvalidTableError("invalid_json", f"{path}: {exc}") from None
            if (
                isinstance(data, list)
                and data
                and all(isinstance(e, dict) and "db_id" in e for e in data)
            ):
                return "spider", data
    return "tables", [t.model_dump(mode="json") for f in files for t in load_tables(f)]


@_service_errors
def _submit(args: argparse.Namespace) -> int:
    try:
        kind, payload = read_dataset(args.dataset)
    except InvalidTableError as exc:
        return error(describe_table_error(str(args.dataset), exc))
    options = {"seed": args.seed, "samples": args.samples, "max_candidates": args.max_candidates}
    questions = None
    if args.questions is not None:
        if kind != "spider":
            return error("jobs submit: --questions needs a Spider tables.json")
        try:
            questions = json.loads(args.questions.read_text(encoding="utf-8"))
        except OSError as exc:
            return error(f"{args.questions}: {(exc.strerror or str(exc)).lower()}")
        except ValueError as exc:
            return error(f"{args.questions}: {exc} (invalid_json)")
    with _client(args) as client:
        if questions is not None:
            kinds = _dataset_kinds(args.kind)
            job = client.submit_dataset(payload, questions, kinds, list(range(args.seeds)), options)
        elif kind == "spider":
            job = client.submit_spider(payload, options)
        else:
            job = client.submit(payload, options)
        unit = "databases" if questions is not None else "tables"
        print(f"job {job.id}: {job.status.total} {unit} submitted", file=sys.stderr)
        if not args.wait:
            _print(job.status)
            return 0
        status = job.wait(progress=True)
        _write_items(job, args.output)
        print(
            f"job {job.id} {status.state}: {status.done} done, {status.failed} failed, "
            f"{status.cancelled} cancelled of {status.total}",
            file=sys.stderr,
        )
    return 0 if status.state == "done" else 1


@_service_errors
def _status(args: argparse.Namespace) -> int:
    with _client(args) as client:
        _print(client.job(args.job_id).status)
    return 0


@_service_errors
def _results(args: argparse.Namespace) -> int:
    with _client(args) as client:
        _write_items(client.job(args.job_id), args.output)
    return 0


@_service_errors
def _cancel(args: argparse.Namespace) -> int:
    with _client(args) as client:
        _print(client.job(args.job_id).cancel())
    return 0


@_service_errors
def _list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        for status in client.jobs():
            print(status.model_dump_json())
    return 0


def _migrate(args: argparse.Namespace) -> int:
    # deferred: the service package loads FastAPI and SQLAlchemy (not for other commands)
    from service.jobs.store import JobStore
    from service.settings import get_service_settings

    settings = get_service_settings()
    store = JobStore.from_settings(settings)
    store.close()
    print(
        f"jobs database at the latest schema: {settings.resolved_database_url()}", file=sys.stderr
    )
    return 0


def _dataset_kinds(text: str) -> list[str]:
    """``--kind`` of a dataset job, ``all`` expanded (the service refuses unknown kinds)."""
    kinds: list[str] = []
    for part in (k.strip().lower() for k in text.split(",") if k.strip()):
        for kind in family_kinds() if part == "all" else (part,):
            if kind not in kinds:
                kinds.append(kind)
    return kinds
