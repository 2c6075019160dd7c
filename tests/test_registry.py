"""Components are chosen by name; unknown names fail with the list of known ones."""

from __future__ import annotations

import pytest

from cta import registry
from cta.settings import Settings


def test_register_and_create_by_name(tmp_path: object) -> None:
    seen: list[Settings] = []

    @registry.register("test-stage", "echo")
    def _echo(settings: Settings) -> str:
        seen.append(settings)
        return f"echo:{settings.rerank_top_k}"

    settings = Settings(rerank_top_k=7)
    assert registry.create("test-stage", "echo", settings) == "echo:7"
    assert seen == [settings]
    assert "echo" in registry.names("test-stage")


def test_unknown_component_lists_known_names() -> None:
    with pytest.raises(KeyError, match="known: .*minilm"):
        registry.create("encoder", "no-such-encoder", Settings())


def test_settings_read_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTA_RPL_THRESHOLD", "0.7")
    monkeypatch.setenv("CTA_JUDGE_MODEL", "roberta-large-mnli")
    settings = Settings()
    assert settings.rpl_threshold == 0.7
    assert settings.resolved_judge_model() == "roberta-large-mnli"
