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
    assert len(report["sets"]) == 4
    for s in report["sets"]:
        assert s["pre"]["ex"] is None and isinstance(s["pre"]["linking_recall"], float)
        assert isinstance(s["post"]["linking_recall"], float)
    rpl = [s for s in report["sets"] if s["kind"] == "rpl"]
    assert len(rpl) == 2 and all(s["post"]["linking_recall"] < s["pre"]["linking_recall"] for s in rpl)


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


def _write_preds(perturbed: Path, folder: Path, stems: list[str], drop_last: str = "") -> Path:
    """The gold SQL of ``stems`` as prediction files (``drop_last``: that set one line short)."""
    folder.mkdir()
    for stem in stems:
        lines = [r["query"] for r in json.loads((perturbed / f"{stem}.json").read_text())]
        if stem == drop_last:
            lines = lines[:-1]
        (folder / f"{stem}.sql").write_text("\n".join(lines) + "\n")
    return folder


def _stems(perturbed: Path) -> list[str]:
    return sorted(p.stem for p in perturbed.glob("dev_*_s*.json") if "_gold" not in p.stem)


def test_a_set_without_predictions_stops_the_run_naming_the_file(
    perturbed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stems = ["dev_original", *_stems(perturbed)]
    assert "dev_add_s1" in stems
    preds = _write_preds(perturbed, tmp_path / "preds", [s for s in stems if s != "dev_add_s1"])
    assert main(["eval", str(perturbed), "--pred", str(preds), "--json"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1
    assert err[0].startswith("cta: error: eval: set dev_add_s1: no predictions")
    assert str(preds / "dev_add_s1.sql") in err[0] and "--allow-missing" in err[0]


def test_a_set_with_another_number_of_predictions_stops_the_run(
    perturbed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stems = ["dev_original", *_stems(perturbed)]
    preds = _write_preds(perturbed, tmp_path / "preds", stems, drop_last="dev_rpl_s0")
    assert main(["eval", str(perturbed), "--pred", str(preds)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    n = len(QUESTIONS)
    assert len(err) == 1 and "set dev_rpl_s0:" in err[0]
    assert f"{preds / 'dev_rpl_s0.sql'}: {n - 1} lines for {n} questions" in err[0]
    # one JSON-lines file that names no question of a set: the same
    lines = [
        json.dumps({"id": f"{stem}:{i}", "sql": r["query"]})
        for stem in stems
        if stem != "dev_rpl_s1"
        for i, r in enumerate(json.loads((perturbed / f"{stem}.json").read_text()))
    ]
    single = tmp_path / "all.jsonl"
    single.write_text("\n".join(lines) + "\n")
    assert main(["eval", str(perturbed), "--pred", str(single)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"set dev_rpl_s1: no predictions: {single}" in err[0]


def test_allow_missing_lists_the_set_as_not_evaluated_never_scored(
    perturbed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stems = ["dev_original", *_stems(perturbed)]
    given = [s for s in stems if s not in ("dev_add_s0", "dev_add_s1")]
    preds = _write_preds(perturbed, tmp_path / "preds", given, drop_last="dev_rpl_s1")
    args = ["eval", str(perturbed), "--pred", str(preds), "--allow-missing"]
    assert main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    left_out = {"dev_add_s0", "dev_add_s1", "dev_rpl_s1"}
    assert set(report["not_evaluated"]) == left_out
    assert "lines for" in report["not_evaluated"]["dev_rpl_s1"]
    assert [s["set"] for s in report["sets"]] == ["dev_rpl_s0"]  # the only one scored
    assert [k["kind"] for k in report["kinds"]] == ["rpl"]
    assert report["sets"][0]["post"]["ex"] == 1.0
    for stem in left_out:
        assert f"cta eval: not evaluated: {stem} (" in captured.err
    # the summary table lists them as not evaluated, with no figure
    assert main(args) == 0
    summary = capsys.readouterr().out
    assert "## Not evaluated" in summary
    for stem in left_out:
        assert f"| {stem} |" in summary
    out = tmp_path / "report"
    assert main([*args, "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "| dev_add_s0 | not evaluated |" in text
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert {it["set"] for it in items} == {"dev_original", "dev_rpl_s0"}


def test_allow_missing_without_the_originals_scores_no_set(
    perturbed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preds = _write_preds(perturbed, tmp_path / "preds", _stems(perturbed))
    assert main(["eval", str(perturbed), "--pred", str(preds), "--allow-missing", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sets"] == [] and report["original"] == {}
    assert set(report["not_evaluated"]) == {"dev_original", *_stems(perturbed)}
    assert "dev_original is not evaluated" in report["not_evaluated"]["dev_rpl_s0"]


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
