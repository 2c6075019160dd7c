"""``cta eval DIR``: the command line over a tiny perturbed Spider set built here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval import QUESTIONS, build_perturbed

from cta.cli.main import main


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_perturbed(tmp_path_factory.mktemp("cli"))


def test_oracle_json_has_kind_seed_pre_post(
    perturbed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(perturbed), "--model", "oracle", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "oracle"
    assert {(s["kind"], s["seed"]) for s in report["sets"]} == {
        ("rpl", 0),
        ("rpl", 1),
        ("add", 0),
        ("add", 1),
    }
    for s in report["sets"]:
        assert s["pre"]["ex"] == s["post"]["ex"] == s["pre"]["em"] == s["post"]["em"] == 1.0
    assert report["original"]["dev"]["n"] == len(QUESTIONS)


def test_probe_json_carries_linking_recall(
    perturbed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(perturbed), "--model", "lexical-probe", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for s in report["sets"]:
        assert s["pre"]["ex"] is None and isinstance(s["pre"]["linking_recall"], float)
        assert isinstance(s["post"]["linking_recall"], float)
    rpl = [s for s in report["sets"] if s["kind"] == "rpl"]
    assert all(s["post"]["linking_recall"] < s["pre"]["linking_recall"] for s in rpl)


def test_out_writes_report_plot_and_test_suite_files(
    perturbed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert main(["eval", str(perturbed), "--model", "oracle", "--out", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "| dev rpl | 2 | 100.0 ± 0.0 | 100.0 ± 0.0 |" in summary
    report = json.loads((out / "eval.json").read_text())
    assert len(report["sets"]) == 4
    assert "![pre vs post per kind](pre_post.png)" in (out / "report.md").read_text()
    assert (out / "pre_post.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    items = (out / "items.jsonl").read_text().splitlines()
    assert len(items) == len(QUESTIONS) * 5
    gold = (out / "test-suite" / "gold" / "dev_add_s1.txt").read_text().splitlines()
    pred = (out / "test-suite" / "pred" / "dev_add_s1.txt").read_text().splitlines()
    assert len(gold) == len(pred) == len(QUESTIONS)
    sql, db_id = gold[0].split("\t")
    assert (
        sql == pred[0] and (out / "test-suite" / "database" / db_id / f"{db_id}.sqlite").is_file()
    )


def test_pred_folder(perturbed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preds = tmp_path / "preds"
    preds.mkdir()
    for name in ("dev_original", "dev_rpl_s0"):
        records = json.loads((perturbed / f"{name}.json").read_text())
        lines = [r["query"] for r in records]
        lines[0] = "SELECT count(*) FROM singer"  # wrong on purpose
        (preds / f"{name}.sql").write_text("\n".join(lines) + "\n")
    assert (
        main(["eval", str(perturbed), "--pred", str(preds), "--sets", "dev_rpl_s0", "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    [rpl] = report["sets"]
    n = len(QUESTIONS)
    assert rpl["pre"]["ex"] == rpl["post"]["ex"] == round((n - 1) / n, 4)
    assert rpl["relative_robustness"]["ex"] == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "oracle"], "no such folder"),
        (["--model", "nearest-train"], "needs --train"),
        (["--pred", "/nonexistent/preds"], "no such file or folder"),
        (["--model", "oracle", "--sets", "dev_nope_s0"], "no such set dev_nope_s0"),
    ],
)
def test_errors_are_one_line(
    perturbed: Path,
    tmp_path: Path,
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = str(tmp_path / "absent") if message == "no such folder" else str(perturbed)
    assert main(["eval", folder, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("cta: error: eval: ") and message in err[-1]
