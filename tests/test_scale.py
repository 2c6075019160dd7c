"""cta.scale without Ray: items of every input kind, the ledger's exactly-once commits and
resumption, and the in-process runner giving ``cta perturb``'s bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import TINY_CORPUS, write_tiny_corpus

from cta.scale import (
    Item,
    ItemOutcome,
    Ledger,
    LedgerMismatchError,
    in_process,
    read_items,
    run_shards,
)
from cta.scale.ledger import MANIFEST_FILE, shard_name

ROOT = Path(__file__).resolve().parents[1]


def tiny_tables(n: int) -> list[dict[str, Any]]:
    """``n`` tables of the tiny corpus's domains (header and rows), as table JSON."""
    tables = []
    for name, columns in list(TINY_CORPUS.items())[:n]:
        tables.append(
            {
                "name": name,
                "columns": [{"name": c[0]} for c in columns],
                "rows": [[c[1] for c in columns], [c[2] for c in columns]],
            }
        )
    return tables


def write_batch(path: Path, tables: list[dict[str, Any]], bad_after: int | None = None) -> Path:
    """A JSON-lines batch; ``bad_after``: a line that is not a table after that many."""
    lines = [json.dumps(t) for t in tables]
    if bad_after is not None:
        lines.insert(bad_after, '{"name": "broken", "columns": [}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _echo(items: Any) -> list[ItemOutcome]:
    return [
        ItemOutcome(i.key, json.dumps({"name": i.table.name}))
        if i.table is not None
        else ItemOutcome(i.key, json.dumps(i.error), "failed", i.reason)
        for i in items
    ]


def _manifest(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / MANIFEST_FILE).read_text().splitlines()]


def test_items_of_a_jsonl_file_keep_bad_lines_as_failed_items(tmp_path: Path) -> None:
    items = read_items(str(write_batch(tmp_path / "b.jsonl", tiny_tables(3), bad_after=1)))
    assert [i.key for i in items] == ["line 1", "line 2", "line 3", "line 4"]
    assert [i.table is None for i in items] == [False, True, False, False]
    assert items[1].error == {"line": 2, "error": items[1].reason}
    assert items[1].reason is not None and items[1].reason.startswith("invalid JSON")


def test_items_of_a_folder_and_of_a_corpus(tmp_path: Path) -> None:
    corpus = write_tiny_corpus(tmp_path / "corpus")
    (corpus / "zz_bad.csv").write_bytes(b"\xff\xfe not text")
    folder = read_items(str(corpus))
    expected = sorted(f"{name.replace(' ', '_')}.csv" for name in TINY_CORPUS)
    assert [i.key for i in folder][:-1] == expected
    assert len(folder) == len(TINY_CORPUS) + 1
    assert folder[-1].key == "zz_bad.csv" and folder[-1].table is None and folder[-1].reason
    spec = read_items(f"csv-dir:{corpus}")
    good = [i for i in spec if i.table is not None]
    assert len(good) == len(TINY_CORPUS)
    assert [i.key for i in spec if i.table is None] == ["skipped csv:zz_bad.csv"]


def test_a_rerun_skips_finished_shards_and_never_writes_one_twice(tmp_path: Path) -> None:
    items = read_items(str(write_batch(tmp_path / "b.jsonl", tiny_tables(5), bad_after=2)))
    out = tmp_path / "out"
    calls: list[list[str]] = []

    def worker() -> Any:
        def run(shard: Any) -> list[ItemOutcome]:
            calls.append([i.key for i in shard])
            if len(calls) == 2:
                raise KeyboardInterrupt  # the run dies after one shard is committed
            return _echo(shard)

        return run

    with pytest.raises(KeyboardInterrupt):
        run_shards(items, out, run={}, worker=worker, shard_size=2)
    assert [e["shard"] for e in _manifest(out)] == [0, 0]
    report, ledger = run_shards(items, out, run={}, worker=worker, shard_size=2)
    assert (report.resumed_shards, report.computed_shards, report.failed) == (1, 2, 1)
    assert calls == [
        ["line 1", "line 2"],
        ["line 3", "line 4"],
        ["line 3", "line 4"],
        ["line 5", "line 6"],
    ]
    manifest = _manifest(out)
    assert [e["item"] for e in manifest] == [i.key for i in items]  # each once, in order
    assert [e["status"] for e in manifest].count("failed") == 1
    assert list(ledger.lines()) == [o.line for o in _echo(items)]
    # Finished: a third run computes nothing, and a finished shard cannot be committed again.
    report, ledger = run_shards(items, out, run={}, worker=worker, shard_size=2)
    assert report.computed_shards == 0 and len(calls) == 4
    with pytest.raises(LedgerMismatchError):
        ledger.commit(0, _echo(items[:2]))


def test_a_shard_written_before_a_crash_is_adopted_not_recomputed(tmp_path: Path) -> None:
    items = [Item(f"t{n}", error={"item": f"t{n}", "error": "bad"}) for n in range(4)]
    out = tmp_path / "out"
    run_shards(items, out, run={}, worker=lambda: _echo, shard_size=2)
    # The crash came between the shard's rename and its manifest lines (and cut one short).
    manifest = (out / MANIFEST_FILE).read_text().splitlines()
    (out / MANIFEST_FILE).write_text("\n".join(manifest[:2]) + "\n" + manifest[2][:10])
    before = (out / "shards" / shard_name(1)).read_bytes()
    leftover = out / "shards" / ".part-00002.jsonl.tmp-999"  # a write cut short
    leftover.write_text("half a li")

    def never() -> Any:
        raise AssertionError("a written shard was computed again")

    report, _ = run_shards(items, out, run={}, worker=never, shard_size=2)
    assert report.computed_shards == 0
    assert [e["item"] for e in _manifest(out)] == ["t0", "t1", "t2", "t3"]
    assert (out / "shards" / shard_name(1)).read_bytes() == before
    assert not leftover.exists()


def test_another_input_or_option_is_refused(tmp_path: Path) -> None:
    items = [Item("a", error={"item": "a", "error": "x"})]
    run_shards(items, tmp_path, run={"options": {"seed": 0}}, worker=lambda: _echo)
    with pytest.raises(LedgerMismatchError, match="options"):
        Ledger(tmp_path, {"options": {"seed": 1}}, [["a"]])
    with pytest.raises(LedgerMismatchError, match="items_sha256"):
        run_shards(
            [Item("b", error={"item": "b", "error": "x"})],
            tmp_path,
            run={"options": {"seed": 0}},
            worker=lambda: _echo,
        )


def test_without_ray_the_in_process_mapper_is_used(tmp_path: Path) -> None:
    """The default mapper makes its worker (loads the pipeline) only when there is work."""
    items = [Item("a", error={"item": "a", "error": "bad"})]
    made = []

    def factory() -> Any:
        made.append(1)
        return lambda shard: [
            ItemOutcome(i.key, json.dumps(i.error), "failed", i.reason) for i in shard
        ]

    assert list(in_process(factory, [])) == [] and made == []
    assert [s for s, _ in in_process(factory, [(0, items)])] == [0] and made == [1]


def cta(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cta.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def shard_bytes(out: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted((out / "shards").iterdir()))


@pytest.mark.slow
def test_corpus_perturb_in_process_gives_cta_perturbs_bytes(
    tiny_env: dict[str, str], tmp_path: Path
) -> None:
    batch = write_batch(tmp_path / "b.jsonl", tiny_tables(5), bad_after=3)
    reference = cta(tiny_env, "perturb", str(batch), "--json", "--samples", "1")
    assert reference.returncode == 2 and reference.stdout.count("\n") == 6
    out = tmp_path / "out"
    run = cta(tiny_env, "corpus", "perturb", "--in", str(batch), "--out", str(out),
              "--samples", "1", "--shard-size", "2")  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    assert "1 of 6 items failed (first: line 4: invalid JSON" in run.stderr
    assert shard_bytes(out) == reference.stdout
    assert json.loads(run.stdout)["computed_shards"] == 3


def test_compose_has_a_ray_profile_with_a_head_and_workers() -> None:
    """docker/compose.yaml's `ray` profile: a head and workers joining it, on an image with
    the ray extra, with shared memory sized for Ray's object store; not started by default."""
    import yaml

    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))
    head, worker = compose["services"]["ray-head"], compose["services"]["ray-worker"]
    for service in (head, worker):
        assert service["profiles"] == ["ray"]
        assert service["build"]["args"]["CTA_RAY"] == "1"
        assert service["shm_size"] and service["environment"]["RAY_AUTH_MODE"] == "token"
    assert head["command"][:3] == ["ray", "start", "--head"]
    assert "--address=ray-head:6379" in worker["command"]
    assert worker["depends_on"]["ray-head"]["condition"] == "service_healthy"
    assert all("profiles" not in compose["services"][s] for s in ("api", "worker", "postgres"))
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text(encoding="utf-8")
    assert '[ "$CTA_RAY" = 1 ]' in dockerfile and "-r requirements-ray.lock" in dockerfile
    assert (ROOT / "requirements-ray.lock").is_file()


def test_ray_without_the_extra_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    """--ray where Ray is not installed (imported as missing): exit 2 and how to install it."""
    batch = write_batch(tmp_path / "b.jsonl", tiny_tables(1))
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from cta.cli.main import main\n"
        f"raise SystemExit(main(['corpus', 'perturb', '--in', {str(batch)!r}, "
        f"'--out', {str(tmp_path / 'out')!r}, '--ray']))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "--ray needs Ray: pip install -e '.[ray]'" in run.stderr
    assert "Traceback" not in run.stderr
