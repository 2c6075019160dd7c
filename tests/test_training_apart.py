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
