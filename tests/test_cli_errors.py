"""Bad input paths get one line on stderr (``cta: error: …``) and exit status 2, before any
model loads; and the CLI's stderr is quiet unless ``-v``."""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

import pytest

from cta.cli._quiet import configure_output, log_level
from cta.cli.main import main

_ENV = (
    "TRANSFORMERS_VERBOSITY",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS",
    "HF_HUB_DISABLE_PROGRESS_BARS",
    "TQDM_MININTERVAL",
)


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", ')
    ragged = tmp_path / "ragged.json"
    ragged.write_text(json.dumps({"columns": [{"name": "a"}, {"name": "b"}], "rows": [[1]]}))
    folder = tmp_path / "folder"
    folder.mkdir()
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    return {
        "missing": str(tmp_path / "missing.json"),
        "bad": str(bad),
        "ragged": str(ragged),
        "folder": str(folder),
        "binary": str(binary),
    }


def _one_line_error(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("cta: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("command", ["perturb", "candidates"])
@pytest.mark.parametrize(
    ("case", "needles"),
    [
        ("missing", ["missing.json", "no such file"]),
        ("bad", ["bad.json", "invalid_json"]),
        ("ragged", ["ragged.json", "ragged_rows"]),
        ("folder", ["folder", "is a folder"]),
        ("binary", ["binary.json", "not_utf8"]),
    ],
)
def test_table_commands_name_the_bad_file(
    command: str,
    case: str,
    needles: list[str],
    inputs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([command, inputs[case]]) == 2
    _one_line_error(capsys, *needles)


def test_malformed_json_on_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("{"))
    assert main(["perturb", "-"]) == 2
    _one_line_error(capsys, "stdin", "malformed_json")


@pytest.mark.parametrize(
    ("case", "needles"),
    [("missing", ["missing.json", "no such file"]), ("bad", ["bad.json", "invalid_json"])],
)
def test_jobs_submit_names_the_bad_file(
    case: str, needles: list[str], inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["jobs", "submit", inputs[case], "--url", "http://127.0.0.1:9"]) == 2
    _one_line_error(capsys, *needles)
    assert main(["jobs", "submit", inputs["folder"], "--url", "http://127.0.0.1:9"]) == 2
    _one_line_error(capsys, "no .csv/.json/.jsonl files")


def test_dataset_perturb_checks_its_paths_first(
    inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["dataset", "perturb", "--out", inputs["folder"] + "/out"]
    spider = [*base, "--format", "spider"]
    assert main([*spider, "--tables", inputs["missing"], "--questions", inputs["bad"]]) == 2
    _one_line_error(capsys, "missing.json", "no such file")
    assert main([*spider, "--tables", inputs["bad"], "--questions", inputs["missing"]]) == 2
    _one_line_error(capsys, "missing.json", "no such file")
    assert main([*spider, "--tables", inputs["bad"]]) == 2
    _one_line_error(capsys, "--questions")
    assert main([*base, "--format", "wtq", "--tables", inputs["missing"]]) == 2
    _one_line_error(capsys, "missing.json", "no such file")
    assert main([*base, "--format", "wtq", "--tables", inputs["folder"]]) == 2
    _one_line_error(capsys, "csv/")
    assert main([*spider, "--tables", inputs["bad"], "--questions", inputs["folder"]]) == 2
    _one_line_error(capsys, "is a folder")


def test_index_search_names_the_bad_table(
    inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "search", inputs["folder"], inputs["missing"]]) == 2
    _one_line_error(capsys, "missing.json", "no such file")


def test_quiet_unless_verbose(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:  # restored after the test, as the root logger's level
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(logging.getLogger(), "level", logging.getLogger().level)
    assert [log_level(v) for v in (0, 1, 2, 3)] == [
        logging.WARNING,
        logging.INFO,
        logging.DEBUG,
        logging.DEBUG,
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        configure_output(0, stderr_is_tty=True)
        assert logging.getLogger().level == logging.WARNING
        assert not logging.getLogger("gensim").isEnabledFor(logging.INFO)
        warnings.warn_explicit(
            "The multilingual functions are not available with this Wordnet version",
            UserWarning,
            "wordnet.py",
            1,
            module="nltk.corpus.reader.wordnet",
        )
        warnings.warn_explicit("a library's advice", FutureWarning, "x.py", 1, module="torch.nn")
        assert caught == []
    with warnings.catch_warnings(record=True) as caught:  # one configuration per process
        warnings.simplefilter("always")
        configure_output(1, stderr_is_tty=True)
        assert logging.getLogger().level == logging.INFO
        warnings.warn_explicit("a library's advice", FutureWarning, "x.py", 1, module="torch.nn")
        assert len(caught) == 1
        assert os.environ["TRANSFORMERS_VERBOSITY"] == "warning"
