"""The configuration tables of docs/configuration.md: every ``CTA_`` variable, by who reads it.

Three tables from three settings classes with the same prefix: the engine's
(:class:`cta.settings.Settings`), the service's own (:class:`service.settings.ServiceSettings`)
and judge training's own (:class:`cta.training.settings.TrainingSettings`). They are put
together here, in the CLI, the one layer above both the service and training (which never
import each other); no command imports this module. ``tests/test_readme.py`` compares the
page's block with :func:`settings_tables` byte for byte.
"""

from __future__ import annotations

from cta.settings import markdown_table
from cta.training.settings import TRAINING_FIELDS, TrainingSettings
from service.settings import settings_table


def settings_tables() -> str:
    """The Markdown between docs/configuration.md's ``settings-table`` markers: the engine's
    and the service's tables (:func:`service.settings.settings_table`), then training's."""
    return (
        settings_table()
        + "\nJudge training (`cta judge train`; `cta.training.settings.TrainingSettings`, "
        "also the keys of a recipe file such as `models/judge.recipe.json`):\n\n"
        + markdown_table(TrainingSettings, TRAINING_FIELDS)
    )
