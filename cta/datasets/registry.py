"""The dataset formats by name, and :func:`perturb_dataset`: the one entry point of
``cta dataset perturb`` and of the service's dataset jobs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cta.apply.sample import ValueMode
from cta.datasets.base import DatasetFiles, DatasetFormat, DatasetRequest, DatasetRun, Proposer
from cta.datasets.spider import SPIDER
from cta.datasets.wikisql import WIKISQL
from cta.datasets.wtq import WTQ
from cta.families.naming import EquivalenceJudge
from cta.registry import Registry

__all__ = [
    "FORMATS",
    "dataset_format",
    "perturb_dataset",
    "register_format",
    "unregister_format",
]


def _must_be(name: str, known: Sequence[str]) -> str:
    *first, last = known
    return f"dataset format must be {', '.join(first)} or {last}, not {name!r}"


FORMATS: Registry[DatasetFormat[Any]] = Registry("dataset format", "unknown_format", _must_be)
"""Every driver by its ``--format`` name (:func:`register_format` adds one)."""


def register_format(driver: DatasetFormat[Any]) -> None:
    """Make a driver runnable by its ``name`` (:func:`perturb_dataset`, the service's dataset
    jobs): one line beside the driver."""
    FORMATS.register(driver.name, driver)


def unregister_format(name: str) -> None:
    """Forget a driver registered by :func:`register_format` (a plug-in's or a test's)."""
    FORMATS.unregister(name)


register_format(SPIDER)
register_format(WIKISQL)
register_format(WTQ)


def dataset_format(name: str) -> DatasetFormat[Any]:
    """The driver of format ``name`` (:class:`~cta.registry.UnknownNameError`,
    ``unknown_format``, for a name no driver has)."""
    return FORMATS.get(name)


def perturb_dataset(
    fmt: str,
    tables: str | Path,
    questions: str | Path | None,
    out_dir: str | Path,
    proposer: Proposer,
    kinds: Sequence[str] = ("rpl", "add"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    db_dir: str | Path | None = None,
    augment: bool = False,
    check_execution: bool = False,
    values: ValueMode = "generate",
    synthesis_seed: int = 0,
    progress: Callable[[str], None] | None = None,
    judge: EquivalenceJudge | None = None,
    require_databases: bool = False,
    statistics: str | Path | None = None,
    verify_seeds: int = 1,
) -> DatasetRun:
    """Load a dataset of format ``fmt`` and run its driver.

    ``tables``: Spider ``tables.json`` · WikiSQL ``*.tables.jsonl`` · the WTQ root folder ·
    BIRD ``dev_tables.json``.
    ``questions``: the question file (required for Spider, WikiSQL and BIRD; optional for
    WTQ).
    ``require_databases``: refuse (``databases_required``) rather than synthesise a database
    the dataset ships no file for. ``statistics``: BIRD's column statistics, for synthesis;
    ``verify_seeds``: with ``check_execution``, how many synthesis seeds a synthesised
    database is verified on (BIRD).
    """
    driver = dataset_format(fmt)
    driver.check(kinds)
    dataset = driver.load(DatasetFiles(tables, questions, db_dir, statistics))
    switches = (
        augment,
        check_execution,
        values,
        synthesis_seed,
        progress,
        judge,
        require_databases,
        verify_seeds,
    )
    return driver.perturb(dataset, DatasetRequest(proposer, Path(out_dir), kinds, seeds, *switches))
