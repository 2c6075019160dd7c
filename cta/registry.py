"""Components registered by name, chosen in :class:`cta.settings.Settings`.

Each stage of the method has its own registry; a factory receives the settings and
returns the component. Registration happens at import of the implementing module, which
:func:`create` triggers lazily so that ``import cta`` stays light. A new component is one
module with ``@register(stage, name)`` on its factory, imported before it is asked for (the
stage's provider module below, or any module the program imports first); its name then works
in the settings field of its stage (:data:`SETTING_OF`) with no other edit.

An unknown name fails where the component is built, with :class:`UnknownComponentError`: one
line naming the stage, the setting and the known names (the CLI prints it as its error;
:func:`check` asks about every component of a settings object at once, before any loads).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from cta.settings import Settings
from cta.table import ProblemError

Factory = Callable[[Settings], Any]

# stage -> name -> factory
_REGISTRY: dict[str, dict[str, Factory]] = {}

# stage -> module that registers its implementations on import
_PROVIDERS: dict[str, str] = {
    "retriever": "retriever.dense",
    "encoder": "retriever.encoders",
    "vectors": "retriever.rerank",
    "lexicon": "retriever.lexicon",
    "source": "retriever.sources",
    "linker": "retriever.entity_linker",
    "judge": "cta.judge.nli",
}

#: stage -> the :class:`~cta.settings.Settings` field that names its component(s)
SETTING_OF: dict[str, str] = {
    "encoder": "encoder",
    "vectors": "vectors",
    "lexicon": "lexicon",
    "source": "candidate_sources",
    "linker": "entity_linker",
    "judge": "judge",
}


class UnknownComponentError(ProblemError, KeyError):
    """No component of that name is registered for the stage (a ``KeyError`` too, as before).

    ``str()`` is one line: ``no judge named 'x' (CTA_JUDGE; known: hf-nli)``."""

    def __init__(self, stage: str, name: str, known: list[str]) -> None:
        setting = SETTING_OF.get(stage)
        where = f"CTA_{setting.upper()}; " if setting else ""
        super().__init__(
            "unknown_component",
            f"no {stage} named {name!r} ({where}known: {', '.join(known) or 'none'})",
        )
        self.stage = stage
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return self.message


def register(stage: str, name: str) -> Callable[[Factory], Factory]:
    """Decorator: ``@register("encoder", "minilm")`` on a ``factory(settings)``."""

    def deco(factory: Factory) -> Factory:
        _REGISTRY.setdefault(stage, {})[name] = factory
        return factory

    return deco


def unregister(stage: str, name: str) -> None:
    """Forget a registered component (a test's or a plugin's own; no error when absent)."""
    _REGISTRY.get(stage, {}).pop(name, None)


def names(stage: str) -> list[str]:
    """Registered names for a stage (importing its provider first)."""
    _load(stage)
    return sorted(_REGISTRY.get(stage, {}))


def create(stage: str, name: str, settings: Settings) -> Any:
    """Build the component ``name`` of ``stage`` from ``settings``
    (:class:`UnknownComponentError` when no module registered that name)."""
    _load(stage)
    try:
        factory = _REGISTRY[stage][name]
    except KeyError:
        raise UnknownComponentError(stage, name, names(stage)) from None
    return factory(settings)


def configured(settings: Settings) -> list[tuple[str, str]]:
    """The (stage, name) of every component ``settings`` select, in :data:`SETTING_OF` order."""
    chosen: list[tuple[str, str]] = []
    for stage, field in SETTING_OF.items():
        value = getattr(settings, field)
        chosen += [(stage, n) for n in ([value] if isinstance(value, str) else value)]
    return chosen


def check(settings: Settings) -> None:
    """Raise :class:`UnknownComponentError` for the first component ``settings`` name that
    no module registered (imports the stages' providers, builds nothing)."""
    for stage, name in configured(settings):
        known = names(stage)
        if name not in known:
            raise UnknownComponentError(stage, name, known)


def _load(stage: str) -> None:
    module = _PROVIDERS.get(stage)
    if module is not None:
        importlib.import_module(module)
