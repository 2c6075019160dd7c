"""``eval`` jobs: the service scores predictions per source database, the SDK reads the items
and the report; endpoints only when the operator allowed them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from service_fakes import running_app
from test_eval import QUESTIONS, build_perturbed

from service.client import Client, ServiceError
from service.settings import ServiceSettings


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_perturbed(tmp_path_factory.mktemp("service"), seeds=(0,))


def _payload(folder: Path) -> tuple[list[dict[str, object]], dict[str, list[dict[str, object]]]]:
    spider = json.loads((folder / "tables.json").read_text())
    sets = {
        stem: json.loads((folder / f"{stem}.json").read_text())
        for stem in ("dev_original", "dev_rpl_s0", "dev_add_s0")
    }
    return spider, sets


def test_eval_job_items_and_report(perturbed: Path, tmp_path: Path) -> None:
    spider, sets = _payload(perturbed)
    predictions = {stem: [r["query"] for r in records] for stem, records in sets.items()}
    predictions["dev_rpl_s0"][0] = "SELECT count(*) FROM singer"  # one miss after RPL
    sets["dev_add_s0"].append({**sets["dev_add_s0"][0], "source_index": 99})  # an orphan
    predictions["dev_add_s0"].append("SELECT 1")
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        job = cta.submit_eval(spider, sets, predictions=predictions)
        status = job.wait(poll_interval=0.05, timeout=60)
        items = list(job.results())
        report = job.report()
        text = http.get(f"/v1/jobs/{job.id}/report", params={"format": "markdown"}).text
        tables_job = cta.submit([{"columns": [{"name": "a"}]}])
        with pytest.raises(ServiceError) as wrong_kind:
            tables_job.report()
    assert status.kind == "eval" and (status.done, status.failed) == (1, 1)
    assert [(i.table_id, i.status) for i in items] == [("music", "done"), (None, "failed")]
    assert items[1].error is not None and items[1].error.problem == "invalid_record"
    result = items[0].eval_result
    assert result is not None and result.db_id == "music"
    assert len(result.items) == 3 * len(QUESTIONS)
    n = len(QUESTIONS)
    by_set = {r.set: r for r in report.sets}
    assert by_set["dev_add_s0"].pre.ex == by_set["dev_add_s0"].post.ex == 1.0
    assert by_set["dev_rpl_s0"].pre.ex == 1.0
    assert by_set["dev_rpl_s0"].post.ex == round((n - 1) / n, 4)
    assert by_set["dev_rpl_s0"].relative_robustness["ex"] == round((n - 1) / n, 4)
    assert report.original["dev"].em == 1.0
    assert "| dev rpl | 1 |" in text
    assert wrong_kind.value.problem == "not_an_eval_job"


def test_eval_job_refuses_endpoints_not_allowed_and_predictions_for_no_set(
    perturbed: Path, tmp_path: Path
) -> None:
    spider, sets = _payload(perturbed)
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        with pytest.raises(ServiceError) as refused:
            cta.submit_eval(spider, sets, endpoint="http://127.0.0.1:9/parse")
        with pytest.raises(ServiceError) as misaligned:
            cta.submit_eval(spider, sets, predictions={"dev_nope_s0": ["SELECT 1"]})
        with pytest.raises(ServiceError) as two:
            cta.submit_eval(spider, sets, predictions={}, model="oracle")
        oracle = cta.submit_eval(spider, sets, model="oracle")
        oracle.wait(poll_interval=0.05, timeout=60)
        report = oracle.report()
    assert refused.value.problem == "endpoint_not_allowed"
    assert misaligned.value.problem == "misaligned_predictions"
    assert misaligned.value.status_code == 422 and "dev_nope_s0" in str(misaligned.value)
    assert two.value.status_code == 422
    assert all(r.post.ex == r.post.em == 1.0 for r in report.sets) and len(report.sets) == 2


def test_a_set_without_predictions_is_a_failed_item_never_scored(
    perturbed: Path, tmp_path: Path
) -> None:
    """No predictions for one set, too few for another: each becomes a failed item named after
    its set, listed as not evaluated in the report (never a 0 % or a 100-point drop); the
    others are scored, and the report says its databases were synthesised."""
    spider, sets = _payload(perturbed)
    predictions = {stem: [str(r["query"]) for r in records] for stem, records in sets.items()}
    del predictions["dev_rpl_s0"]
    predictions["dev_add_s0"] = predictions["dev_add_s0"][:-1]
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        job = cta.submit_eval(spider, sets, predictions=predictions)
        status = job.wait(poll_interval=0.05, timeout=60)
        items = list(job.results())
        report = job.report()
        text = http.get(f"/v1/jobs/{job.id}/report", params={"format": "markdown"}).text
    failed = {i.table_id: i.error for i in items if i.status == "failed"}
    assert status.failed == 2 and set(failed) == {"dev_rpl_s0", "dev_add_s0"}
    rpl, add = failed["dev_rpl_s0"], failed["dev_add_s0"]
    assert rpl is not None and rpl.problem == "missing_predictions"
    assert "predictions['dev_rpl_s0']" in rpl.message
    assert add is not None and add.problem == "misaligned_predictions"
    assert f"{len(sets['dev_add_s0']) - 1} predictions for {len(sets['dev_add_s0'])}" in add.message
    [done] = [i for i in items if i.status == "done"]
    assert done.eval_result is not None
    assert {it.set for it in done.eval_result.items} == {"dev_original"}
    assert report.sets == [] and report.kinds == []
    assert set(report.not_evaluated) == {"dev_rpl_s0", "dev_add_s0"}
    assert report.original["dev"].ex == 1.0
    assert report.databases is not None and "synthesised from the schema" in report.databases
    assert "| dev_rpl_s0 | not evaluated |" in text and "## Not evaluated" in text


def test_without_predictions_for_the_originals_no_set_is_scored(
    perturbed: Path, tmp_path: Path
) -> None:
    spider, sets = _payload(perturbed)
    predictions = {s: [str(r["query"]) for r in sets[s]] for s in ("dev_rpl_s0", "dev_add_s0")}
    settings = ServiceSettings(home=tmp_path, job_poll_seconds=0.05)
    with running_app(settings) as (http, _):
        cta = Client("http://testserver", http_client=http, backoff=0)  # type: ignore[arg-type]
        job = cta.submit_eval(spider, sets, predictions=predictions)
        job.wait(poll_interval=0.05, timeout=60)
        report = job.report()
    assert set(report.not_evaluated) == set(sets) and report.sets == []
    assert "dev_original is not evaluated" in report.not_evaluated["dev_rpl_s0"]
