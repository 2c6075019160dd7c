"""`cta dataset perturb` end to end with the real (tiny) pipeline proposing the names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_dataset import QUESTIONS, TABLES

pytestmark = pytest.mark.slow


def test_spider_dataset_perturbed_by_the_pipeline_is_execution_equivalent(
    tiny_env: dict[str, str], tmp_path: Path
) -> None:
    tables, questions = tmp_path / "tables.json", tmp_path / "dev.json"
    tables.write_text(json.dumps(TABLES))
    questions.write_text(json.dumps(QUESTIONS[:4]))
    out = tmp_path / "out"
    # Accept every candidate so the tiny judge still yields perturbations to apply.
    env = {**tiny_env, "CTA_RPL_THRESHOLD": "0.0", "CTA_ADD_THRESHOLD": "1.0"}
    cmd = [
        sys.executable, "-m", "cta.cli.main", "dataset", "perturb", "--format", "spider",
        "--tables", str(tables), "--questions", str(questions), "--out", str(out),
        "--kind", "rpl,add", "--seeds", "2", "--verify",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "verification.json").read_text())
    assert report["equivalent_share"] == 1.0
    assert report["checks"] == 4 * 2 * 2

    mappings = [json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()]
    renamed = [m for m in mappings if m["kind"] == "rpl" and m.get("mapping")]
    assert renamed, "the pipeline proposed no RPL name for any question"
    rpl = json.loads((out / "dev_rpl_s0.json").read_text())
    assert rpl[0]["query"] != QUESTIONS[0]["query"]  # gold SQL names the new columns
    add = json.loads((out / "dev_add_s0.json").read_text())
    assert add[0]["query"] == QUESTIONS[0]["query"]  # ADD keeps the gold SQL
