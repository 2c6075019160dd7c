"""openapi.yaml is current, and schemathesis fuzzes every operation of the real app over the
real pipeline (the tiny fixture home): no 5xx, responses conform to the document."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, settings
from schemathesis import checks
from service_fakes import wait_until

from cta.pipeline import Pipeline
from service.app import create_app
from service.openapi import openapi_yaml
from service.settings import ServiceSettings

REPO = Path(__file__).resolve().parent.parent


def test_openapi_yaml_is_generated_from_the_app_and_current() -> None:
    committed = (REPO / "openapi.yaml").read_text(encoding="utf-8")
    assert committed == openapi_yaml(), "openapi.yaml is stale: run `cta openapi`"
    document = yaml.safe_load(committed)
    assert set(document["paths"]) == {
        "/healthz",
        "/readyz",
        "/v1/perturb",
        "/v1/judge",
        "/v1/jobs",
        "/v1/jobs/{job_id}",
        "/v1/jobs/{job_id}/results",
        "/v1/jobs/{job_id}/report",
        "/v1/jobs/{job_id}/manifest",
    }
    assert "HTTPBearer" in document["components"]["securitySchemes"]
    # The request guard's answers are part of the contract of every body-taking operation.
    for path, method in (("/v1/perturb", "post"), ("/v1/judge", "post"), ("/v1/jobs", "post")):
        assert {"400", "413", "415", "422"} <= set(document["paths"][path][method]["responses"])


# One app for the whole fuzz run, over the real pipeline of the tiny fixture home (the
# session's ``Pipeline.from_settings(Settings(home=tiny_home))``, handed over by the fixture
# below: schemathesis restarts the app's lifespan for every operation, and the pipeline is
# loaded once, not once per operation), a throwaway SQLite store and no in-process workers
# (jobs just queue). Limits are small so that each generated table is quick for the engine.
# The schema is the app's own document; no request reaches the app before a test runs.
_TINY: dict[str, Pipeline] = {}
_SETTINGS = ServiceSettings(
    home=Path(tempfile.mkdtemp(prefix="cta-fuzz-")),
    max_body_bytes=200_000,
    max_rows=8,
    max_columns=6,
    max_string_length=64,
    max_batch_pairs=16,
)


def _tiny_pipeline(_: ServiceSettings) -> Pipeline:
    return _TINY["pipeline"]


APP = create_app(_SETTINGS, _tiny_pipeline, inprocess_workers=0)
schema = schemathesis.openapi.from_dict(APP.openapi())
schema.app = APP


@pytest.fixture(scope="module")
def real_pipeline(tiny_pipeline: Pipeline) -> Pipeline:
    _TINY["pipeline"] = tiny_pipeline
    return tiny_pipeline


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_fuzz_no_server_errors_and_conforming_responses(
    case: schemathesis.Case, real_pipeline: Pipeline
) -> None:
    wait_until(lambda: APP.state.host.ready if hasattr(APP.state, "host") else True)
    case.call_and_validate(checks=[checks.not_a_server_error, checks.response_schema_conformance])
