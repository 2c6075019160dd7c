"""openapi.yaml is current, and schemathesis fuzzes every operation: no 5xx, responses conform."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
import yaml
from hypothesis import HealthCheck, settings
from schemathesis import checks
from service_fakes import FakePipeline, wait_until

from cta.settings import Settings
from service.app import create_app
from service.openapi import openapi_yaml

REPO = Path(__file__).resolve().parent.parent

# One app for the whole fuzz run (schemathesis keeps its lifespan running): a stand-in
# pipeline, a throwaway SQLite store, no in-process workers (jobs just queue).
_HOME = Path(tempfile.mkdtemp(prefix="cta-fuzz-"))
_SETTINGS = Settings(home=_HOME, max_body_bytes=200_000, max_rows=50, max_columns=20)
APP = create_app(_SETTINGS, FakePipeline, inprocess_workers=0)  # type: ignore[arg-type]

schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


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
    }
    assert "HTTPBearer" in document["components"]["securitySchemes"]


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_fuzz_no_server_errors_and_conforming_responses(case: schemathesis.Case) -> None:
    wait_until(lambda: APP.state.host.ready if hasattr(APP.state, "host") else True)
    case.call_and_validate(checks=[checks.not_a_server_error, checks.response_schema_conformance])
