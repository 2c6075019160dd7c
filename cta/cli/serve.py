"""``cta serve`` (the HTTP service), ``cta worker`` (a batch-job worker) and ``cta openapi``."""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cta import registry

if TYPE_CHECKING:
    from service.settings import ServiceSettings

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the HTTP service (FastAPI on uvicorn)")
    p.add_argument("--host", help="bind address (default: settings host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: settings port, 8000)")
    p.add_argument(
        "--workers-inprocess",
        type=int,
        metavar="N",
        help="job worker threads inside the server (default: settings inprocess_workers)",
    )
    _pipeline_option(p)
    p.set_defaults(func=_serve)

    w = sub.add_parser(
        "worker", help="run a batch-job worker process (shares the jobs database with the API)"
    )
    w.add_argument(
        "--worker-id",
        help="stable worker name: on restart, this worker's unfinished tables run again at once",
    )
    w.add_argument("--batch", type=int, help="tables claimed at once (default: job_claim_batch)")
    w.add_argument(
        "--exit-when-idle", action="store_true", help="stop once no table is left to run"
    )
    _pipeline_option(w)
    w.set_defaults(func=_worker)

    o = sub.add_parser("openapi", help="write openapi.yaml, generated from the app")
    o.add_argument(
        "--output", type=Path, default=Path("openapi.yaml"), help="default: ./openapi.yaml"
    )
    o.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    o.set_defaults(func=_openapi)


def _pipeline_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pipeline",
        metavar="MODULE:FACTORY",
        help="test/extension hook: build the pipeline with FACTORY(settings) instead of "
        "cta.pipeline:Pipeline.from_settings",
    )


def load_factory(spec: str | None) -> Any:
    """``module:attr`` (attr may be dotted) → the callable; None → Pipeline.from_settings."""
    if not spec:
        from cta.pipeline import Pipeline  # deferred: the pipeline loads torch and transformers

        return Pipeline.from_settings
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"--pipeline {spec!r}: expected MODULE:FACTORY")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _settings(args: argparse.Namespace) -> ServiceSettings:
    # deferred: the service package loads FastAPI, uvicorn and SQLAlchemy (not for other commands)
    from service.settings import get_service_settings

    settings = get_service_settings()
    updates = {}
    if getattr(args, "host", None):
        updates["host"] = args.host
    if getattr(args, "port", None):
        updates["port"] = args.port
    if getattr(args, "workers_inprocess", None) is not None:
        updates["inprocess_workers"] = args.workers_inprocess
    if getattr(args, "batch", None):
        updates["job_claim_batch"] = args.batch
    return settings.model_copy(update=updates) if updates else settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.app import create_app  # deferred: FastAPI, uvicorn (only `cta serve`)

    settings = _settings(args)
    if not settings.api_keys and not is_loopback(settings.host):
        print(
            f"cta serve: refusing to bind {settings.host}: no API keys are set, so the service "
            "binds loopback only (127.0.0.1). Set CTA_API_KEYS='[\"<key>\"]' to serve others.",
            file=sys.stderr,
        )
        return 2
    if not args.pipeline:
        # A component name no module registered stops here (one line), not in /readyz.
        # deferred: the shipped components register on import (gensim, numpy)
        import cta.providers  # noqa: F401

        registry.check(settings)
    app = create_app(settings, load_factory(args.pipeline))
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info")
    return 0


def _worker(args: argparse.Namespace) -> int:
    # deferred: the service package loads FastAPI and SQLAlchemy (only `cta worker`)
    from service.host import PipelineHost
    from service.jobs.store import JobStore
    from service.jobs.worker import JobWorker

    settings = _settings(args)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    store = JobStore.from_settings(settings)
    host = PipelineHost(settings, load_factory(args.pipeline))
    host.load()
    if not host.ready:
        print(f"cta worker: {host.detail}", file=sys.stderr)
        return 1
    worker = JobWorker(store, host, settings, name=args.worker_id)
    try:
        worker.run(stop, exit_when_idle=args.exit_when_idle)
    finally:
        store.close()
    return 0


def _openapi(args: argparse.Namespace) -> int:
    from service.openapi import openapi_yaml  # deferred: builds the FastAPI app

    text = openapi_yaml()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run `cta openapi`", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    log.info("wrote %s", args.output)
    return 0
