"""Training stays apart from inference: serving and perturbing never load ``cta.training``.

``cta.training`` (supervision, the fine-tuning loop, ``train_judge``) sits above the judge and
the candidate sources; only ``cta judge train`` / ``cta setup`` import it. The check runs in a
fresh interpreter, since this test session may already have imported training code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What the server process and a library user of the pipeline import, then every module loaded.
PROBE = """
import json, sys
import service.app
import cta.pipeline
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules() -> set[str]:
    run = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return set(json.loads(run.stdout.strip().splitlines()[-1]))


def test_serving_and_pipeline_do_not_load_training_code() -> None:
    modules = loaded_modules()
    # The probe sees what the imports load, so an empty answer below is not a vacuous pass.
    assert {"service.app", "cta.pipeline", "cta.judge", "cta.judge.nli"} <= modules
    training = sorted(m for m in modules if m == "cta.training" or m.startswith("cta.training."))
    assert training == [], f"inference imports training code: {training}"


def test_training_settings_are_apart_from_the_serving_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``judge_train_*`` knobs live on :class:`TrainingSettings` alone, under their
    variable names; the engine's and the service's settings have none, and no module of the
    service names the training package."""
    from pydantic import ValidationError

    from cta.settings import Settings
    from cta.training.settings import TRAINING_FIELDS, TrainingSettings
    from service.settings import ServiceSettings

    training = [n for n in TrainingSettings.model_fields if n.startswith("judge_train_")]
    assert len(training) == 21 and set(training) < set(TRAINING_FIELDS)
    assert "judge_base_model" in TRAINING_FIELDS
    for serving in (Settings, ServiceSettings):
        assert not set(TRAINING_FIELDS) & set(serving.model_fields), serving
    monkeypatch.setenv("CTA_JUDGE_TRAIN_LABELS", "two-way")
    monkeypatch.setenv("CTA_JUDGE_TRAIN_BATCH_SIZE", "8")
    monkeypatch.setenv("CTA_JUDGE_BASE_MODEL", "some/encoder")
    settings = TrainingSettings()
    assert (settings.judge_train_labels, settings.judge_train_batch_size) == ("two-way", 8)
    assert settings.judge_base_model == "some/encoder"
    with pytest.raises(ValidationError):
        TrainingSettings(judge_train_batch_size=0)
    with pytest.raises(ValidationError):
        TrainingSettings(judge_train_labels="four-way")
    service = [p for p in (ROOT / "service").rglob("*.py") if "cta.training" in p.read_text()]
    assert service == []
