"""cta.scale on Ray, on one local instance per test session (``ray_address``: 2 CPUs, no
dashboard): the same bytes as in-process ``cta perturb``, a killed actor and a killed
driver with nothing lost or written twice, a bad table recorded per item, ``cta dataset
perturb --ray`` and ``cta index build --ray`` giving what the in-process runs give."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import write_tiny_corpus
from dataset_fixtures import write_spider
from test_dataset import QUESTIONS, TABLES
from test_scale import _manifest, cta, shard_bytes, tiny_tables, write_batch

from cta import registry
from cta.results import PerturbOptions
from cta.scale import Item, ShardPerturber, read_items, run_shards
from cta.scale.ledger import ItemOutcome
from cta.scale.ray_backend import RayOptions, ray_chunk_encoder, ray_mapper
from cta.settings import Settings
from retriever import index as index_module
from retriever.index import INDEX_FILE, META_FILE, build_corpus_index

pytestmark = pytest.mark.slow

OPTIONS = ("--samples", "1")


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six tables with a line that is not a table third."""
    folder = tmp_path_factory.mktemp("batch")
    return write_batch(folder / "batch.jsonl", tiny_tables(6), bad_after=2)


@pytest.fixture(scope="module")
def reference(batch: Path, tiny_home: Path) -> str:
    """What in-process ``cta perturb batch.jsonl --json`` prints."""
    from conftest import tiny_env_vars

    env = {**os.environ, **tiny_env_vars(tiny_home)}
    run = cta(env, "perturb", str(batch), "--json", *OPTIONS)
    assert run.returncode == 2 and run.stdout.count("\n") == 7, run.stderr[-2000:]
    return run.stdout


def test_ray_run_gives_in_process_bytes_and_records_the_bad_table(
    tiny_env: dict[str, str], ray_address: str, batch: Path, reference: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run = cta(tiny_env, "corpus", "perturb", "--in", str(batch), "--out", str(out), *OPTIONS,
              "--shard-size", "2", "--ray-address", ray_address)  # fmt: skip
    assert run.returncode == 2, run.stderr[-3000:]
    assert shard_bytes(out) == reference
    assert len(list((out / "shards").iterdir())) == 4
    manifest = _manifest(out)
    assert [e["item"] for e in manifest].count("line 3") == 1
    assert sorted(e["item"] for e in manifest) == [f"line {n}" for n in range(1, 8)]
    (bad,) = [e for e in manifest if e["status"] == "failed"]
    assert bad["item"] == "line 3" and bad["reason"].startswith("invalid JSON")
    # A rerun finds everything finished and computes nothing.
    again = cta(tiny_env, "corpus", "perturb", "--in", str(batch), "--out", str(out), *OPTIONS,
                "--shard-size", "2", "--ray-address", ray_address)  # fmt: skip
    assert json.loads(again.stdout)["computed_shards"] == 0
    assert _manifest(out) == manifest and shard_bytes(out) == reference


class DiesOnce:
    """The shard worker, except that its process dies (``os._exit``) the first time it is
    given ``victim`` — an actor killed mid-run. ``marker`` records that it did."""

    def __init__(self, settings: Settings, marker: str, victim: str) -> None:
        self.inner = ShardPerturber(settings, PerturbOptions(seed=0, samples=1))
        self.marker, self.victim = Path(marker), victim

    def __call__(self, items: list[Item]) -> list[ItemOutcome]:
        if any(i.key == self.victim for i in items) and not self.marker.exists():
            self.marker.write_text(str(os.getpid()))
            os._exit(1)
        return self.inner(items)


def test_an_actor_killed_mid_run_loses_and_repeats_nothing(
    ray_address: str, tiny_settings: Settings, batch: Path, reference: str, tmp_path: Path
) -> None:
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    items = read_items(str(batch))
    marker = tmp_path / "killed"
    out = tmp_path / "out"

    def factory() -> DiesOnce:
        return DiesOnce(tiny_settings, str(marker), "line 5")

    mapper = ray_mapper(RayOptions(actors=2))
    report, ledger = run_shards(items, out, run={}, worker=factory, mapper=mapper, shard_size=1)
    assert marker.exists(), "no actor was killed"
    assert (report.computed_shards, report.failed) == (7, 1)
    assert "".join(line + "\n" for line in ledger.lines()) == reference
    assert sorted(e["item"] for e in _manifest(out)) == [i.key for i in items]
    report, _ = run_shards(items, out, run={}, worker=factory, mapper=mapper, shard_size=1)
    assert report.computed_shards == 0


def test_a_driver_killed_mid_run_resumes_with_nothing_lost_or_twice(
    tiny_env: dict[str, str], ray_address: str, batch: Path, reference: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["corpus", "perturb", "--in", str(batch), "--out", str(out), *OPTIONS,
            "--shard-size", "1", "--ray-address", ray_address, "--ray-actors", "1"]  # fmt: skip
    driver = subprocess.Popen(
        [sys.executable, "-m", "cta.cli.main", *args],
        env=tiny_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 300
    while not (manifest.is_file() and manifest.read_text()) and driver.poll() is None:
        assert time.monotonic() < deadline, "no shard was written"
        time.sleep(0.02)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    # A shard file is renamed into place whole, so each one is finished, including one whose
    # manifest lines the kill kept from landing (the rerun adopts it, never recomputes it).
    finished = len(list((out / "shards").glob("part-*.jsonl")))
    recorded = {e["shard"] for e in _manifest(out)}
    assert 1 <= len(recorded) <= finished < 7, "the driver was not killed mid-run"
    run = cta(tiny_env, *args)
    report = json.loads(run.stdout)
    assert report["resumed_shards"] == finished and report["computed_shards"] == 7 - finished
    assert sorted(e["item"] for e in _manifest(out)) == [f"line {n}" for n in range(1, 8)]
    assert shard_bytes(out) == reference


def _sqlite_dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def test_dataset_perturb_on_ray_writes_what_in_process_writes(
    tiny_env: dict[str, str], ray_address: str, tmp_path: Path
) -> None:
    tables, questions = write_spider(tmp_path, TABLES, QUESTIONS[:4])
    env = {**tiny_env, "CTA_RPL_THRESHOLD": "0.0", "CTA_ADD_THRESHOLD": "1.0"}
    outputs = {}
    for label, extra in (("here", []), ("ray", ["--ray-address", ray_address])):
        out = tmp_path / label
        run = cta(env, "dataset", "perturb", "--format", "spider", "--tables", str(tables),
                  "--questions", str(questions), "--out", str(out), "--seeds", "2", *extra)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        files: dict[str, Any] = {}
        for path in sorted(out.rglob("*")):
            name = path.relative_to(out).as_posix()
            if path.is_dir() or name.startswith("proposals/"):
                continue
            files[name] = _sqlite_dump(path) if path.suffix == ".sqlite" else path.read_bytes()
        outputs[label] = files
    assert "mappings.jsonl" in outputs["here"] and len(outputs["here"]) > 3
    assert outputs["ray"] == outputs["here"]
    assert (tmp_path / "ray" / "proposals" / "manifest.jsonl").is_file()


def test_index_build_on_ray_gives_the_same_vectors_and_entries(
    ray_address: str, tiny_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    corpus = write_tiny_corpus(tmp_path / "corpus")
    monkeypatch.setattr(index_module, "CHUNK_TABLES", 3)  # several chunks for two actors
    encoder = registry.create("encoder", tiny_settings.encoder, tiny_settings)
    built = {}
    for label, chunks in (
        ("here", None),
        ("ray", ray_chunk_encoder(tiny_settings, 2, RayOptions(actors=2))),
    ):
        out = tmp_path / label
        build_corpus_index(
            [f"csv-dir:{corpus}"], encoder, out, batch_size=2, progress=False, encode_chunks=chunks
        )
        index = faiss.read_index(str(out / INDEX_FILE))
        built[label] = (index.reconstruct_n(0, index.ntotal), (out / META_FILE).read_bytes())
    vectors, meta = built["here"]
    assert vectors.shape[0] > 6
    assert np.array_equal(built["ray"][0], vectors)
    assert built["ray"][1] == meta
