"""The collector pause around loading, and the program's freeze at exit (first-result speed)."""

from __future__ import annotations

import gc
import threading

import pytest

from cta import collector


def test_paused_switches_the_collector_off_and_back_as_it_was() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():  # nested: still off
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is not over
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_paused_restores_on_errors_and_across_threads() -> None:
    with pytest.raises(ValueError), collector.paused():
        raise ValueError("boom")
    assert gc.isenabled()
    inside = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with collector.paused():
            inside.set()
            release.wait(5)

    worker = threading.Thread(target=hold)
    worker.start()
    inside.wait(5)
    with collector.paused():
        pass
    assert not gc.isenabled()  # the other thread's block still holds it off
    release.set()
    worker.join()
    assert gc.isenabled()


def test_the_pipeline_loads_with_the_collector_paused(
    tiny_settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cta import registry
    from cta.pipeline import Pipeline
    from cta.settings import Settings

    assert isinstance(tiny_settings, Settings)
    states: list[bool] = []
    create = registry.create

    def recording(kind: str, name: str, settings: Settings) -> object:
        states.append(gc.isenabled())
        return create(kind, name, settings)

    monkeypatch.setattr(registry, "create", recording)
    Pipeline.from_settings(tiny_settings)
    assert states and not any(states)
    assert gc.isenabled()


def test_the_program_freezes_what_its_command_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import cta.cli.main as cli

    frozen: list[bool] = []
    monkeypatch.setattr(cli, "main", lambda: 3)
    monkeypatch.setattr(cli.gc, "freeze", lambda: frozen.append(True))
    assert cli.run() == 3 and frozen == [True]
