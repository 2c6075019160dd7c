"""One registry shape for everything chosen by name: components, families, dataset formats.

Each answers the same calls (register, get, names, unregister) and refuses an unknown name with
one error type, :class:`~cta.registry.UnknownNameError`, carrying its problem code; the
components that ship register where they live, imported by :mod:`cta.providers`, and the
import contract sees every edge to them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

import cta.providers  # noqa: F401 (registers the shipped components)
from cta import registry
from cta.datasets import FORMATS, dataset_format
from cta.families import FAMILIES, make_families
from cta.registry import Registry, UnknownNameError
from cta.settings import Settings
from cta.table import ProblemError

ROOT = Path(__file__).resolve().parents[1]


def test_register_and_create_by_name() -> None:
    seen: list[Settings] = []

    @registry.register("test-stage", "echo")
    def _echo(settings: Settings) -> str:
        seen.append(settings)
        return f"echo:{settings.rerank_top_k}"

    try:
        settings = Settings(rerank_top_k=7)
        assert registry.create("test-stage", "echo", settings) == "echo:7"
        assert seen == [settings]
        assert "echo" in registry.names("test-stage")
    finally:
        registry.unregister("test-stage", "echo")
    assert "echo" not in registry.names("test-stage")


def test_one_shape_registers_lists_and_forgets() -> None:
    colours: Registry[int] = Registry("colour", "unknown_colour")
    assert colours.register("red", 1) == 1

    @colours.register("blue")
    def blue() -> int:
        return 2

    assert colours.names() == ("red", "blue")  # registration order
    assert "blue" in colours and colours.get("red") == 1
    colours.unregister("red")
    colours.unregister("red")  # absent: no error
    assert colours.names() == ("blue",)
    with pytest.raises(UnknownNameError) as caught:
        colours.get("green")
    assert (caught.value.problem, caught.value.kind, caught.value.name) == (
        "unknown_colour",
        "colour",
        "green",
    )
    assert str(caught.value) == "no colour named 'green' (known: blue)"
    with pytest.raises(ValueError, match="needs a name"):
        colours.register("", 3)


def test_every_registry_refuses_an_unknown_name_with_the_one_error_type() -> None:
    with pytest.raises(UnknownNameError) as component:
        registry.create("encoder", "no-such-encoder", Settings())
    with pytest.raises(UnknownNameError) as family:
        make_families(["shuffle", "no-such-family"], lambda tables: [], lambda pairs: [])
    with pytest.raises(UnknownNameError) as fmt:
        dataset_format("no-such-format")
    assert str(component.value) == (
        "no encoder named 'no-such-encoder' "
        "(CTA_ENCODER; known: minilm, sentence-transformers, tapas)"
    )
    assert str(family.value).startswith(
        "no family named 'no-such-family' (known: rpl, add, abbreviation, "
    )
    *first, last = FORMATS.names()  # spider, wikisql, wtq, then any format registered later
    assert first[:2] == ["spider", "wikisql"]
    assert (
        str(fmt.value)
        == f"dataset format must be {', '.join(first)} or {last}, not 'no-such-format'"
    )
    problems = [e.value.problem for e in (component, family, fmt)]
    assert problems == ["unknown_component", "unknown_family", "unknown_format"]
    for caught in (component, family, fmt):
        # a problem the CLI prints as one line; a KeyError and a ValueError as before
        assert isinstance(caught.value, ProblemError)
        assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)


def test_families_and_formats_list_like_components() -> None:
    assert FAMILIES.names()[:3] == ("rpl", "add", "abbreviation")
    assert FORMATS.names()[:3] == ("spider", "wikisql", "wtq")
    assert registry.names("retriever") == ("dense",)


def test_the_retriever_is_chosen_by_a_setting_like_every_component() -> None:
    assert ("retriever", "dense") in registry.configured(Settings())
    with pytest.raises(UnknownNameError) as caught:
        registry.check(Settings(retriever="bm25"))
    assert str(caught.value) == "no retriever named 'bm25' (CTA_RETRIEVER; known: dense)"


def test_every_shipped_component_is_an_edge_the_import_contract_sees() -> None:
    """The registry names no provider; each registered factory lives in a module that
    :mod:`cta.providers` imports (directly or through another import), so the layers check
    every edge to it."""
    graph = grimp.build_graph("cta", "retriever")
    seen = graph.find_upstream_modules("cta.providers")
    below = graph.find_upstream_modules("cta.registry")
    assert not {m for m in below if m.startswith(("retriever", "cta.judge", "cta.providers"))}
    listed = cta.providers.__doc__ or ""
    for stage in registry.SETTING_OF:
        assert registry.stage(stage).names(), stage
        for name in registry.stage(stage).names():
            assert name in listed, f"{stage} {name!r}: not in cta.providers' table"
            module = registry.stage(stage).get(name).__module__
            assert module in seen, (stage, name, module)


def test_settings_read_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTA_RPL_THRESHOLD", "0.7")
    monkeypatch.setenv("CTA_JUDGE_MODEL", "roberta-large-mnli")
    monkeypatch.setenv("CTA_RETRIEVER", "toy")
    settings = Settings()
    assert settings.rpl_threshold == 0.7
    assert settings.resolved_judge_model() == "roberta-large-mnli"
    assert settings.retriever == "toy"


def test_the_registry_module_imports_no_provider() -> None:
    """A fresh process: ``cta.registry`` alone loads neither a provider nor a model library."""
    code = (
        "import sys, cta.registry\n"
        "loaded = {m for m in sys.modules if m.startswith(('retriever', 'cta.judge', 'gensim'))}\n"
        "assert not loaded, loaded\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
