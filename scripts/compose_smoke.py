"""The HTTP half of ``scripts/compose-smoke``: the checks it runs against the stack, through
the SDK (``service.client``) from the host, and the record of a run.

Each subcommand prints one line on success and exits non-zero (with the reason on stderr)
on failure::

    compose_smoke.py ready URL                       wait for /readyz
    compose_smoke.py perturb URL FILE --out JSON     POST /v1/perturb, keep the answer
    compose_smoke.py submit URL --out ID             a 5-table job
    compose_smoke.py kill-mid-job URL ID -- CMD…     run CMD (kill the worker) once the job
                                                     has some tables done and some not
    compose_smoke.py wait URL ID --same-as JSON      the job finishes with nothing lost
    compose_smoke.py record FILE LABEL KEY=VALUE…    merge a run into a results file

The API key is read from ``CTA_API_KEY``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from service.client import Client, ServiceError
from service.schemas import JobStatus

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
OPTIONS: dict[str, Any] = {"seed": 0, "samples": 1}


class SmokeFailure(Exception):
    """A check failed: the message says what was expected and what came back."""


def _client(url: str) -> Client:
    return Client(url, api_key=os.environ.get("CTA_API_KEY") or None, timeout=300.0)


def _load(path: Path) -> dict[str, Any]:
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


def job_tables() -> list[dict[str, Any]]:
    """Five tables: the three examples and two of them under another name, so that the
    primary entity (and with it every judgement) differs."""
    books = _load(EXAMPLES / "books.json")
    employees = _load(EXAMPLES / "employees.json")
    return [
        books,
        employees,
        _load(EXAMPLES / "football_matches.json"),
        {**books, "name": "novels", "id": "novels"},
        {**employees, "name": "staff", "id": "staff"},
    ]


def ready(url: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    detail = "no answer"
    with _client(url) as client:
        while time.monotonic() < deadline:
            try:
                readiness = client.ready()
            except (httpx.TransportError, ValueError) as exc:
                detail = f"{type(exc).__name__}: {exc}"
            else:
                if readiness.ready:
                    return "ready"
                detail = readiness.detail or "not ready"
            time.sleep(1.0)
    raise SmokeFailure(f"/readyz not ready after {timeout:.0f} s ({detail})")


def perturb(url: str, table_file: Path, out: Path) -> str:
    with _client(url) as client:
        result = client.perturb(_load(table_file), OPTIONS)
    rpl = sum(len(c.replace) for c in result.columns)
    add = sum(len(c.add) for c in result.columns)
    if not result.columns or rpl + add == 0 or len(result.samples) == 0:
        raise SmokeFailure(f"no perturbations for {table_file.name}: {result.model_dump_json()}")
    out.write_text(result.model_dump_json(), encoding="utf-8")
    return (
        f"{table_file.name}: entity {result.primary_entity!r}, {len(result.columns)} columns, "
        f"{rpl} RPL and {add} ADD names, {len(result.samples)} samples"
    )


def submit(url: str, out: Path) -> str:
    with _client(url) as client:
        job = client.submit(job_tables(), OPTIONS)
    out.write_text(job.id, encoding="utf-8")
    return f"job {job.id}: {job.status.total} tables"


def _counts(status: JobStatus) -> str:
    return (
        f"{status.done} done, {status.running} running, {status.pending} pending, "
        f"{status.failed} failed of {status.total}"
    )


def kill_mid_job(url: str, job_id: str, command: Sequence[str], timeout: float) -> str:
    """Run ``command`` as soon as the job has at least one table done and one not done."""
    deadline = time.monotonic() + timeout
    with _client(url) as client:
        job = client.job(job_id)
        while True:
            status = job.refresh()
            if status.finished or status.failed:
                raise SmokeFailure(f"job ended before the worker was killed ({_counts(status)})")
            if status.done >= 1:
                break
            if time.monotonic() > deadline:
                raise SmokeFailure(f"no table done after {timeout:.0f} s ({_counts(status)})")
            time.sleep(0.1)
        subprocess.run(command, check=True, capture_output=True)
        at_kill = job.refresh()
        if at_kill.finished:
            raise SmokeFailure(f"the job finished before the kill landed ({_counts(at_kill)})")
        time.sleep(3.0)  # nothing may advance while no worker runs
        after = job.refresh()
        if after.done != at_kill.done or after.finished:
            raise SmokeFailure(
                f"the job advanced with its worker killed: {_counts(at_kill)} → {_counts(after)}"
            )
    return f"killed at {_counts(at_kill)}; 3 s later still {after.done} done"


def wait(url: str, job_id: str, same_as: Path, timeout: float) -> str:
    """The job finishes with every table done once, the first one byte-identical to the
    synchronous answer for the same table and options."""
    with _client(url) as client:
        job = client.job(job_id)
        status = job.wait(poll_interval=1.0, timeout=timeout)
        items = list(job.results())
    if status.state != "done" or status.done != status.total or status.failed:
        raise SmokeFailure(f"job ended {status.state}: {_counts(status)}")
    if [item.index for item in items] != list(range(status.total)):
        raise SmokeFailure(f"result items {[item.index for item in items]}")
    missing = [item.index for item in items if item.status != "done" or item.result is None]
    if missing:
        raise SmokeFailure(f"items without a result: {missing}")
    first = items[0].result
    assert first is not None
    if first.model_dump_json() != same_as.read_text(encoding="utf-8"):
        raise SmokeFailure("the job's result for books.json differs from POST /v1/perturb's")
    rerun = sum(1 for item in items if item.attempts > 1)
    return (
        f"{status.done}/{status.total} done, none failed, {rerun} re-run after the kill, "
        "books.json identical to the API's answer"
    )


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def record(path: Path, label: str, pairs: Sequence[str]) -> str:
    """Merge one run (``KEY=VALUE``, values read as JSON when they parse) into ``path``
    under ``runs.<label>``; a dotted key nests (``images.cta=123``)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    run: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "kernel": platform.release(),
        },
    }
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise SmokeFailure(f"not KEY=VALUE: {pair!r}")
        *parents, leaf = key.split(".")
        node = run
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = _value(text)
    data.setdefault("runs", {})[label] = run
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return f"{path}: runs.{label}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("ready")
    p.add_argument("url")
    p.add_argument("--timeout", type=float, default=600.0)
    p = sub.add_parser("perturb")
    p.add_argument("url")
    p.add_argument("table", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("submit")
    p.add_argument("url")
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("kill-mid-job")
    p.add_argument("url")
    p.add_argument("job")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("kill", nargs=argparse.REMAINDER)
    p = sub.add_parser("wait")
    p.add_argument("url")
    p.add_argument("job")
    p.add_argument("--same-as", type=Path, required=True)
    p.add_argument("--timeout", type=float, default=600.0)
    p = sub.add_parser("record")
    p.add_argument("file", type=Path)
    p.add_argument("label")
    p.add_argument("pairs", nargs="*")
    args = parser.parse_args(argv)

    try:
        if args.command == "ready":
            line = ready(args.url, args.timeout)
        elif args.command == "perturb":
            line = perturb(args.url, args.table, args.out)
        elif args.command == "submit":
            line = submit(args.url, args.out)
        elif args.command == "kill-mid-job":
            kill = args.kill[1:] if args.kill[:1] == ["--"] else args.kill
            if not kill:
                parser.error("kill-mid-job needs the kill command after --")
            line = kill_mid_job(args.url, args.job, kill, args.timeout)
        elif args.command == "wait":
            line = wait(args.url, args.job, args.same_as, args.timeout)
        else:
            line = record(args.file, args.label, args.pairs)
    except (SmokeFailure, ServiceError, httpx.HTTPError, TimeoutError, OSError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"{exc}: {exc.stderr.decode(errors='replace').strip()}", file=sys.stderr)
        return 1
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
