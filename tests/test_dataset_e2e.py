"""`cta dataset perturb` end to end with the real (tiny) pipeline proposing the names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dataset_fixtures import write_spider
from test_dataset import QUESTIONS, TABLES

from cta.families import family_kinds

pytestmark = pytest.mark.slow


def _perturb(
    tiny_env: dict[str, str], tmp_path: Path, kind: str, seeds: int
) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    """``cta dataset perturb --verify`` over the first four questions, every check passed;
    the output folder, ``verification.json`` and ``mappings.jsonl``.

    RPL threshold 0 and ADD threshold 1: the tiny judge accepts every candidate (every
    abbreviation and synonym it is asked about), so there are perturbations to apply."""
    tables, questions = write_spider(tmp_path, TABLES, QUESTIONS[:4])
    out = tmp_path / "out"
    env = {**tiny_env, "CTA_RPL_THRESHOLD": "0.0", "CTA_ADD_THRESHOLD": "1.0"}
    cmd = [
        sys.executable, "-m", "cta.cli.main", "dataset", "perturb", "--format", "spider",
        "--tables", str(tables), "--questions", str(questions), "--out", str(out),
        "--kind", kind, "--seeds", str(seeds), "--verify",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "verification.json").read_text())
    assert report["equivalent_share"] == 1.0
    mappings = [json.loads(x) for x in (out / "mappings.jsonl").read_text().splitlines()]
    return out, report, mappings


def test_spider_dataset_perturbed_by_the_pipeline_is_execution_equivalent(
    tiny_env: dict[str, str], tmp_path: Path
) -> None:
    out, report, mappings = _perturb(tiny_env, tmp_path, "rpl,add", 2)
    assert report["checks"] == 4 * 2 * 2
    renamed = [m for m in mappings if m["kind"] == "rpl" and m.get("mapping")]
    assert renamed, "the pipeline proposed no RPL name for any question"
    rpl = json.loads((out / "dev_rpl_s0.json").read_text())
    assert rpl[0]["query"] != QUESTIONS[0]["query"]  # gold SQL names the new columns
    add = json.loads((out / "dev_add_s0.json").read_text())
    assert add[0]["query"] == QUESTIONS[0]["query"]  # ADD keeps the gold SQL


def test_every_kind_through_the_cli_with_the_real_tiny_pipeline(
    tiny_env: dict[str, str], tmp_path: Path
) -> None:
    out, report, mappings = _perturb(tiny_env, tmp_path, "all", 1)
    assert set(report["by_kind"]) == set(family_kinds())
    applied = {m["kind"] for m in mappings if m.get("operation")}
    # the families the tiny schema allows; the rest say why not, item by item
    assert {"shuffle", "opaque-keys", "abbreviation", "table-rename"} <= applied
    for m in mappings:
        if m["kind"] not in ("rpl", "add"):
            assert bool(m["operation"]) != bool(m["unchanged"]), m
    for kind in family_kinds():
        records = json.loads((out / f"dev_{kind}_s0.json").read_text())
        assert records and {r["kind"] for r in records} == {kind}
