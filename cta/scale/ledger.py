"""The ledger of a batch run: its output folder is the record of what is finished.

A run perturbs a fixed, ordered list of items cut into shards of consecutive items. A shard
is written once, whole (a temporary file renamed into place), and only then are its items
appended to the manifest, each with the SHA-256 of its output line and, for a failed item,
the reason. A rerun reads the manifest and skips every finished shard; a shard file that a
crash left without its manifest lines is adopted as it is (its lines hashed and recorded),
never computed or written again. So every item is written exactly once, whatever kills the
run, and the shards in name order are the results in input order.

Layout of the folder::

    run.json                 what the run is over (input, options, shard size, item count)
    manifest.jsonl           one line per finished item: item, shard, status, sha256, reason
    shards/part-00000.jsonl  the output lines of shard 0 (one JSON line per item, in order)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

RUN_FILE = "run.json"
MANIFEST_FILE = "manifest.jsonl"
SHARDS_DIR = "shards"

Status = Literal["done", "failed"]


class LedgerMismatchError(ValueError):
    """The output folder holds a run over other inputs or options: it cannot be resumed."""


@dataclass(frozen=True)
class ItemOutcome:
    """One item's output line (a JSON text without its newline) and whether it failed."""

    item: str
    line: str
    status: Status = "done"
    reason: str | None = None


def line_hash(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def shard_name(shard: int) -> str:
    return f"part-{shard:05d}.jsonl"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Ledger:
    """The manifest and shards of one run in ``folder`` (see the module's docstring).

    ``run`` describes the run (input, options, ``shard_size``, ``items``); a folder holding
    another run's description is refused with :class:`LedgerMismatchError`.
    """

    def __init__(self, folder: str | Path, run: dict[str, Any], keys: Sequence[Sequence[str]]):
        self.folder = Path(folder)
        self.keys = [list(k) for k in keys]  # item keys of each shard, in order
        self.shards_dir = self.folder / SHARDS_DIR
        self.shards_dir.mkdir(parents=True, exist_ok=True)
        run_file = self.folder / RUN_FILE
        if run_file.is_file():
            recorded = json.loads(run_file.read_text(encoding="utf-8"))
            if recorded != run:
                changed = sorted(k for k in {*recorded, *run} if recorded.get(k) != run.get(k))
                raise LedgerMismatchError(
                    f"{self.folder} holds a run with other {', '.join(changed)}; "
                    "resume it with the same input and options, or choose another --out"
                )
        else:
            _write_atomically(run_file, json.dumps(run, indent=2, ensure_ascii=False) + "\n")
        for leftover in self.shards_dir.glob(".*.tmp-*"):  # a write a crash cut short
            leftover.unlink()
        self.entries: dict[str, dict[str, Any]] = {}
        self._read_manifest()
        self._adopt_orphans()

    # -- reading -------------------------------------------------------------------------------
    def _read_manifest(self) -> None:
        path = self.folder / MANIFEST_FILE
        if not path.is_file():
            return
        data = path.read_bytes()
        good = data.rfind(b"\n") + 1
        if good < len(data):  # a line cut short by a crash: its shard is not finished
            with path.open("r+b") as handle:
                handle.truncate(good)
        for raw in data[:good].splitlines():
            entry = json.loads(raw)
            if entry["item"] in self.entries:
                raise LedgerMismatchError(f"{path}: item {entry['item']!r} is recorded twice")
            self.entries[entry["item"]] = entry

    def _adopt_orphans(self) -> None:
        """Record a shard file written before a crash kept its manifest lines from landing."""
        for shard, keys in enumerate(self.keys):
            file = self.shards_dir / shard_name(shard)
            if not file.is_file() or self.finished(shard):
                continue
            lines = file.read_text(encoding="utf-8").splitlines()
            if len(lines) != len(keys):
                file.unlink()  # not one of ours (a shard is renamed into place whole)
                continue
            outcomes = []
            for key, line in zip(keys, lines, strict=True):
                recorded = json.loads(line)
                failed = isinstance(recorded, dict) and "error" in recorded
                reason = str(recorded["error"]) if failed else None
                outcomes.append(ItemOutcome(key, line, "failed" if failed else "done", reason))
            self._append(shard, [o for o in outcomes if o.item not in self.entries])

    def finished(self, shard: int) -> bool:
        """Every item of ``shard`` is in the manifest (so its file is complete)."""
        return all(key in self.entries for key in self.keys[shard])

    def pending(self) -> list[int]:
        """The shards still to compute, in order."""
        return [s for s in range(len(self.keys)) if not self.finished(s)]

    # -- writing -------------------------------------------------------------------------------
    def commit(self, shard: int, outcomes: Sequence[ItemOutcome]) -> None:
        """Write ``shard``'s file, then its manifest lines. A finished shard is refused (an
        item is never written twice)."""
        if self.finished(shard):
            raise LedgerMismatchError(f"shard {shard} is finished already; not writing it again")
        if [o.item for o in outcomes] != self.keys[shard]:
            raise ValueError(f"shard {shard}: outcomes are not its items in order")
        text = "".join(o.line + "\n" for o in outcomes)
        _write_atomically(self.shards_dir / shard_name(shard), text)
        self._append(shard, outcomes)

    def _append(self, shard: int, outcomes: Iterable[ItemOutcome]) -> None:
        lines = []
        for o in outcomes:
            entry: dict[str, Any] = {
                "item": o.item,
                "shard": shard,
                "status": o.status,
                "sha256": line_hash(o.line),
            }
            if o.reason is not None:
                entry["reason"] = o.reason
            lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
            self.entries[o.item] = entry
        with (self.folder / MANIFEST_FILE).open("a", encoding="utf-8") as handle:
            handle.write("".join(lines))
            handle.flush()
            os.fsync(handle.fileno())

    # -- results -------------------------------------------------------------------------------
    def lines(self) -> Iterable[str]:
        """Every output line, in input order (all shards must be finished)."""
        for shard in range(len(self.keys)):
            yield from (
                (self.shards_dir / shard_name(shard)).read_text(encoding="utf-8").splitlines()
            )

    def failed(self) -> list[dict[str, Any]]:
        """The manifest entries of failed items, in input order."""
        order = [k for keys in self.keys for k in keys]
        return [self.entries[k] for k in order if self.entries.get(k, {}).get("status") == "failed"]


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)
