"""Components registered by name, chosen in :class:`cta.settings.Settings`.

Each stage of the method has its own registry; a factory receives the settings and
returns the component. Registration happens at import of the implementing module, which
:func:`create` triggers lazily so that ``import cta`` stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from cta.settings import Settings

Factory = Callable[[Settings], Any]

# stage -> name -> factory
_REGISTRY: dict[str, dict[str, Factory]] = {}

# stage -> module that registers its implementations on import
_PROVIDERS: dict[str, str] = {
    "retriever": "retriever.dense",
    "encoder": "retriever.encoders",
    "vectors": "retriever.rerank",
    "lexicon": "retriever.lexicon",
    "source": "retriever.thesaurus",
    "judge": "cta.judge.nli",
}


def register(stage: str, name: str) -> Callable[[Factory], Factory]:
    """Decorator: ``@register("encoder", "minilm")`` on a ``factory(settings)``."""

    def deco(factory: Factory) -> Factory:
        _REGISTRY.setdefault(stage, {})[name] = factory
        return factory

    return deco


def names(stage: str) -> list[str]:
    """Registered names for a stage (importing its provider first)."""
    _load(stage)
    return sorted(_REGISTRY.get(stage, {}))


def create(stage: str, name: str, settings: Settings) -> Any:
    """Build the component ``name`` of ``stage`` from ``settings``."""
    _load(stage)
    try:
        factory = _REGISTRY[stage][name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY.get(stage, {}))) or "none"
        raise KeyError(f"no {stage} named {name!r} (known: {known})") from None
    return factory(settings)


def _load(stage: str) -> None:
    module = _PROVIDERS.get(stage)
    if module is not None:
        importlib.import_module(module)
