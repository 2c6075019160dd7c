"""Everything pluggable, registered by name: one shape for components, families and formats.

A :class:`Registry` holds the entries of one kind — the component factories of one stage
(``encoder``, ``judge``, …), the perturbation families (:data:`cta.families.FAMILIES`), the
dataset formats (:data:`cta.datasets.FORMATS`) — and every registry answers the same calls:
:meth:`~Registry.register` (one line beside the entry, or a decorator), :meth:`~Registry.get`,
:meth:`~Registry.names` (the listing, in registration order) and :meth:`~Registry.unregister`.
A name no module registered fails with one error type, :class:`UnknownNameError`: a
:class:`~cta.table.ProblemError` whose ``problem`` code is the registry's (``unknown_component``,
``unknown_family``, ``unknown_format``) and whose message is one line naming the known names.

Entries are registered where they live: the module that implements one registers it on import,
and nothing in this module names a provider. The components that ship are imported by
:mod:`cta.providers`, which the code that builds components imports first; a new component is
one module with ``@register(stage, name)`` on its factory ``(Settings) → component``, imported
before it is asked for, and its name then works in the settings field of its stage
(:data:`SETTING_OF`) with no other edit. :func:`check` asks about every component a settings
object names at once, before any loads; the CLI prints an unknown one as its one-line error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, overload

from cta.settings import Settings
from cta.table import ProblemError

__all__ = [
    "SETTING_OF",
    "Factory",
    "Registry",
    "UnknownNameError",
    "check",
    "configured",
    "create",
    "names",
    "register",
    "stage",
    "unregister",
]

T = TypeVar("T")

Factory = Callable[[Settings], Any]
"""Builds a component from the settings."""

#: stage -> the :class:`~cta.settings.Settings` field that names its component(s)
SETTING_OF: dict[str, str] = {
    "retriever": "retriever",
    "encoder": "encoder",
    "vectors": "vectors",
    "lexicon": "lexicon",
    "source": "candidate_sources",
    "linker": "entity_linker",
    "judge": "judge",
}


class UnknownNameError(ProblemError, KeyError):
    """No entry of that name in a registry (a ``KeyError`` and a ``ValueError`` too).

    ``problem`` is the registry's code; ``str()`` is the one-line message, e.g.
    ``no judge named 'x' (CTA_JUDGE; known: hf-nli)``."""

    def __init__(self, kind: str, name: str, known: Sequence[str], problem: str, message: str):
        super().__init__(problem, message)
        self.kind = kind
        self.name = name
        self.known = list(known)

    def __str__(self) -> str:
        return self.message


def _no_such(kind: str, name: str, known: Sequence[str]) -> str:
    return f"no {kind} named {name!r} (known: {', '.join(known) or 'none'})"


class Registry(Generic[T]):
    """Entries of one kind by name, in registration order.

    ``kind`` names an entry in words (``judge``, ``family``); ``problem`` is the code of
    :class:`UnknownNameError`; ``describe(name, known)`` writes its message (default:
    ``no <kind> named 'x' (known: a, b)``)."""

    def __init__(
        self,
        kind: str,
        problem: str,
        describe: Callable[[str, Sequence[str]], str] | None = None,
    ) -> None:
        self.kind = kind
        self.problem = problem
        self._describe = describe
        self._entries: dict[str, T] = {}

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T | None = None) -> T | Callable[[T], T]:
        """Register ``entry`` as ``name`` (a later registration of a name replaces it);
        without ``entry``, a decorator that registers what it decorates."""
        if entry is None:
            return lambda e: self.register(name, e)
        if not name:
            raise ValueError(f"a {self.kind} needs a name")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a plug-in's or a test's own; no error when absent)."""
        self._entries.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order."""
        return tuple(self._entries)

    def get(self, name: str) -> T:
        """The entry of ``name`` (:class:`UnknownNameError` when none is registered)."""
        try:
            return self._entries[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: str) -> UnknownNameError:
        """The error for ``name``, naming the known names."""
        known = self.names()
        describe = self._describe or (lambda n, k: _no_such(self.kind, n, k))
        return UnknownNameError(self.kind, name, known, self.problem, describe(name, known))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"


# -- components: one registry per stage ----------------------------------------------------------
_STAGES: dict[str, Registry[Factory]] = {}


def _describe_component(stage_name: str) -> Callable[[str, Sequence[str]], str]:
    setting = SETTING_OF.get(stage_name)
    where = f"CTA_{setting.upper()}; " if setting else ""

    def describe(name: str, known: Sequence[str]) -> str:
        return (
            f"no {stage_name} named {name!r} ({where}known: {', '.join(sorted(known)) or 'none'})"
        )

    return describe


def stage(name: str) -> Registry[Factory]:
    """The registry of the components of stage ``name`` (``encoder``, ``judge``, …)."""
    found = _STAGES.get(name)
    if found is None:
        found = _STAGES[name] = Registry(name, "unknown_component", _describe_component(name))
    return found


def register(stage_name: str, name: str) -> Callable[[Factory], Factory]:
    """Decorator: ``@register("encoder", "minilm")`` on a ``factory(settings)``."""
    return stage(stage_name).register(name)


def unregister(stage_name: str, name: str) -> None:
    """Forget a registered component (a test's or a plugin's own; no error when absent)."""
    stage(stage_name).unregister(name)


def names(stage_name: str) -> tuple[str, ...]:
    """The registered names of a stage, in registration order (:meth:`Registry.names`)."""
    return stage(stage_name).names()


def create(stage_name: str, name: str, settings: Settings) -> Any:
    """Build the component ``name`` of ``stage_name`` from ``settings``
    (:class:`UnknownNameError` when no imported module registered that name)."""
    return stage(stage_name).get(name)(settings)


def configured(settings: Settings) -> list[tuple[str, str]]:
    """The (stage, name) of every component ``settings`` select, in :data:`SETTING_OF` order."""
    chosen: list[tuple[str, str]] = []
    for stage_name, field in SETTING_OF.items():
        value = getattr(settings, field)
        chosen += [(stage_name, n) for n in ([value] if isinstance(value, str) else value)]
    return chosen


def check(settings: Settings) -> None:
    """Raise :class:`UnknownNameError` for the first component ``settings`` name that no
    imported module registered (builds nothing)."""
    for stage_name, name in configured(settings):
        if name not in stage(stage_name):
            raise stage(stage_name).unknown(name)
