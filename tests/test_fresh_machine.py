"""What a new user meets (issue 29): structural families without any built artefact, batch
commands that record a bad item and go on, and a precision chosen by what the CPU can do."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dataset_fixtures import write_spider
from test_dataset import QUESTIONS, TABLES
from test_pipeline import BOOKS

from cta import devices

pytestmark = pytest.mark.slow


def test_structural_families_need_no_index_vectors_or_judge(tmp_path: Path) -> None:
    tables, questions = write_spider(tmp_path, TABLES, QUESTIONS[:4])
    home = tmp_path / "empty-home"  # nothing built: no index, no vectors
    env = {
        **os.environ,
        "CTA_HOME": str(home),
        "CTA_JUDGE_MODEL": str(tmp_path / "no-judge"),  # would fail if it were loaded
    }
    cmd = [
        sys.executable, "-m", "cta.cli.main", "dataset", "perturb", "--format", "spider",
        "--tables", str(tables), "--questions", str(questions), "--out", str(tmp_path / "out"),
        "--kind", "shuffle,opaque-keys,remove-column", "--verify",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = json.loads((tmp_path / "out" / "dev_shuffle_s0.json").read_text())
    assert records and {r["kind"] for r in records} == {"shuffle"}
    assert not (home / "index").exists()
    # a kind that needs the pipeline still says what is missing, in one line
    cmd[cmd.index("--kind") + 1] = "rpl"
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    # (after the run's own progress lines) one error line: what is missing, how to make it
    said = proc.stderr.strip().splitlines()
    errors = [line for line in said if line.startswith("cta: error:")]
    assert errors == said[-1:], proc.stderr[-2000:]
    assert "no table index at" in errors[0] and "run `cta setup`" in errors[0]


def test_perturb_batch_records_a_bad_line_and_goes_on(
    tiny_env: dict[str, str], tmp_path: Path
) -> None:
    batch = tmp_path / "tables.jsonl"
    lines = [
        json.dumps(BOOKS),
        "{not json",
        json.dumps({**BOOKS, "rows": [["only one cell"]]}),
        json.dumps({**BOOKS, "id": "books-2"}),
    ]
    batch.write_text("\n".join(lines) + "\n")
    cmd = [sys.executable, "-m", "cta.cli.main", "perturb", str(batch), "--seed", "3"]
    proc = subprocess.run(cmd, env=tiny_env, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert len(out) == 4
    assert out[0]["table_id"] == BOOKS.get("id") and out[3]["table_id"] == "books-2"
    assert out[1]["line"] == 2 and "invalid JSON" in out[1]["error"]
    assert out[2]["line"] == 3 and out[2]["error"]
    assert "2 of 4 lines failed (first: line 2" in proc.stderr and "Traceback" not in proc.stderr
    # the good tables are what a single run gives
    single = tmp_path / "books.json"
    single.write_text(json.dumps(BOOKS))
    alone = subprocess.run(
        [sys.executable, "-m", "cta.cli.main", "perturb", str(single), "--seed", "3", "--json"],
        env=tiny_env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(alone.stdout) == out[0]
    # --fail-fast stops at the first bad line, the lines before it answered
    proc = subprocess.run([*cmd, "--fail-fast"], env=tiny_env, capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stdout.splitlines()) == 1 and "line 2" in proc.stderr


def test_fastest_precision_follows_the_cpu(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def cpu(*flags: str) -> None:
        monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset(flags))

    cpu("avx2", "avx512f", "avx512_bf16")
    assert devices.resolve_precision("fastest", "cpu") == "bf16"
    assert devices.resolve_precision("fastest", "cpu", allow_int8=False) == "bf16"
    cpu("avx2")  # an AVX2-only EPYC: bf16 is emulated there (measured 0.16× fp32)
    assert devices.resolve_precision("fastest", "cpu") == "int8"
    assert devices.resolve_precision("fastest", "cpu", allow_int8=False) == "fp32"
    assert devices.resolve_precision("fastest", "cuda") == "bf16"
    assert devices.resolve_precision("auto", "cpu") == "fp32"  # the reference stays the default
    # an explicit bf16 on such a CPU runs, and says so once
    monkeypatch.setattr(devices, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="cta.devices"):
        assert devices.resolve_precision("bf16", "cpu") == "bf16"
        assert devices.resolve_precision("bf16", "cpu") == "bf16"
    warnings = [r for r in caplog.records if "bfloat16" in r.getMessage()]
    assert len(warnings) == 1 and "avx2" in warnings[0].getMessage()
    assert set(devices.cpu_features()) <= set(devices.CPU_FEATURES)
