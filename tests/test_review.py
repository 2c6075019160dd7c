"""The review pages over HTTP (in-process, stand-in pipeline, real SQLite store): pages, the
login cookie, actions, optimistic concurrency, access, bad input and the three exports."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_fakes import PETS, running_app, wait_until, wtq_like_table
from test_jobs_store import pg_url  # noqa: F401  (the PostgreSQL fixture)

from cta.annotations import AnnotatedTable
from service.settings import ServiceSettings

KEYS = ["key-one", "key-two"]
ONE = {"Authorization": "Bearer key-one"}
TWO = {"Authorization": "Bearer key-two"}


def _settings(tmp_path: Path, **over: object) -> ServiceSettings:
    base: dict[str, object] = {
        "home": tmp_path,
        "engine_pairs_per_second": 100_000.0,
        "api_keys": KEYS,
        "job_poll_seconds": 0.02,
    }
    return ServiceSettings(**{**base, **over})  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    """The app with one in-process worker, on SQLite or (CTA_TEST_POSTGRES_URL) PostgreSQL."""
    over = {} if request.param == "sqlite" else {"database_url": request.getfixturevalue("pg_url")}
    with running_app(_settings(tmp_path, **over), workers=1) as (client, _):
        yield client


def done_job(client: TestClient, body: dict[str, Any], headers: dict[str, str]) -> str:
    """Submit a job and wait until every table is done."""
    answer = client.post("/v1/jobs", json=body, headers=headers)
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["id"]
    wait_until(
        lambda: client.get(f"/v1/jobs/{job_id}", headers=headers).json()["state"] == "done",
        what="the job",
    )
    return job_id


def items(client: TestClient, job_id: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """The review items of a job, read back from the page's data attributes."""
    page = client.get(f"/review/jobs/{job_id}", headers=headers)
    assert page.status_code == 200, page.text
    return [
        {f"data-{k}": html.unescape(v) for k, v in re.findall(r'data-([a-z]+)="([^"]*)"', tag)}
        for tag in re.findall(r'<li class="item"[^>]*>', page.text)
    ]


def act(
    client: TestClient, job_id: str, item: dict[str, Any], headers: dict[str, str], **body: Any
) -> Any:
    return client.post(
        f"/review/jobs/{job_id}/items/{item['data-id']}",
        json={"version": int(item["data-version"]), **body},
        headers=headers,
    )


def test_the_page_shows_each_column_with_its_table_names_scores_and_source(
    client: TestClient,
) -> None:
    job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
    page = client.get(f"/review/jobs/{job_id}", headers=ONE)
    assert page.status_code == 200
    text = page.text
    assert "filmography 0" in text and "Entity:" in text
    assert "Director alias" in text and "e1 0.90 · e2 0.80" in text
    assert '<th scope="col" class="target">Director</th>' in text
    assert "/review/static/review.js" in text and "Nearest thresholds first" in text
    found = items(client, job_id, ONE)
    assert {i["data-kind"] for i in found} == {"rpl", "add"}
    assert all(i["data-version"] == "1" and i["data-mine"] == "" for i in found)
    # Nearest thresholds first is an order of the same columns.
    ordered = client.get(f"/review/jobs/{job_id}?order=margin", headers=ONE)
    assert ordered.status_code == 200 and ordered.text.count('class="item"') == len(found)

    assert client.get("/review/static/review.css").status_code == 200
    listing = client.get("/review", headers=ONE)
    assert listing.status_code == 200 and f"/review/jobs/{job_id}" in listing.text


def test_login_sets_an_httponly_cookie_and_pages_redirect_without_one(client: TestClient) -> None:
    anonymous = client.get("/review", follow_redirects=False)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"].startswith("/review/login?next=")
    assert client.get("/review/login").status_code == 200
    bad = client.post("/review/login", json={"key": "nope"})
    assert bad.status_code == 401 and bad.json()["problem"] == "unauthorized"
    good = client.post("/review/login", json={"key": "key-one"})
    assert good.status_code == 204
    cookie = good.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/review" in cookie
    assert client.get("/review").status_code == 200  # the cookie now identifies the reviewer
    # The cookie is the review pages' only: the API still wants the header.
    assert client.get("/v1/jobs").status_code == 401
    assert client.post("/review/logout", json={}).status_code == 204
    client.cookies.clear()
    assert client.get("/review", follow_redirects=False).status_code == 303
    # A form post is not JSON: the guard's 415, as on the API.
    form = client.post("/review/login", data={"key": "key-one"})
    assert form.status_code == 415 and form.json()["problem"] == "unsupported_media_type"
    # ?next= never leaves the site.
    assert "https://evil" not in client.get("/review/login?next=https://evil").text


def test_actions_votes_agreement_and_a_conflict_never_overwrites(client: TestClient) -> None:
    # Both keys may review a job only when they can see it: the server without per-key jobs
    # is the shared case; here each key reviews its own job, so two reviewers share one key's
    # job through the same key identity in two sessions — and two keys are tested apart below.
    job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
    first, second = items(client, job_id, ONE)[:2]
    accepted = act(client, job_id, first, ONE, action="accept")
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["mine"] == "accept" and accepted.json()["accepts"] == 1
    labelled = act(client, job_id, second, ONE, action="label", label="neither")
    assert labelled.json()["mine"] == "reject" and labelled.json()["my_label"] == "neither"
    # Reviewer A renames the first name; reviewer B, still on version 1, tries to accept it:
    # 409 with the item as it now is, and nothing written.
    renamed = act(client, job_id, first, ONE, action="rename", name="film director")
    assert renamed.status_code == 200 and renamed.json()["version"] == 2
    late = act(client, job_id, first, ONE, action="reject")
    assert late.status_code == 409
    body = late.json()
    assert body["problem"] == "conflict" and "film director" in body["message"]
    assert body["item"]["name"] == "film director" and body["item"]["mine"] == "accept"
    # Clearing, then undoing by voting again on the current version, works.
    current = {**first, "data-version": "2"}
    assert act(client, job_id, current, ONE, action="clear").json()["mine"] is None
    assert act(client, job_id, current, ONE, action="accept").json()["accepts"] == 1


def test_two_named_reviewers_sharing_a_key_vote_apart_and_a_stale_write_is_a_409(
    client: TestClient,
) -> None:
    job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
    alice, bob = {**ONE, "X-CTA-Reviewer": "alice"}, {**ONE, "X-CTA-Reviewer": "bob"}
    item = items(client, job_id, alice)[0]
    assert act(client, job_id, item, alice, action="accept").json()["accepts"] == 1
    seen = act(client, job_id, item, bob, action="reject").json()
    assert (seen["accepts"], seen["rejects"], seen["mine"], seen["agreement"]) == (
        1,
        1,
        "reject",
        0.5,
    )
    # Alice renames; Bob, still on version 1, renames too: 409 naming Alice's name.
    assert act(client, job_id, item, alice, action="rename", name="film maker").status_code == 200
    late = act(client, job_id, item, bob, action="rename", name="helmer")
    assert late.status_code == 409 and "another reviewer" in late.json()["message"]
    assert late.json()["item"]["name"] == "film maker"
    assert late.json()["item"]["my_vote_stale"] is True  # Bob's reject was on the old name
    # Bob's page shows Alice's name and his stale vote; he is told who he is.
    page = client.get(f"/review/jobs/{job_id}", headers=bob).text
    assert "film maker" in page and "on an older name" in page and "Reviewing as" in page
    bad = client.get(f"/review/jobs/{job_id}", headers={**ONE, "X-CTA-Reviewer": "<b>"})
    assert bad.status_code == 422 and "invalid_reviewer" in bad.text
    # The login form's name lands in a cookie of its own.
    login = client.post("/review/login", json={"key": "key-one", "reviewer": "carol"})
    assert login.status_code == 204 and "cta_reviewer=carol" in login.headers["set-cookie"]
    assert (
        client.post("/review/login", json={"key": "key-one", "reviewer": "x" * 65}).status_code
        == 422
    )
    client.cookies.clear()


def test_two_reviewers_on_one_job_see_each_others_votes_and_renames(tmp_path: Path) -> None:
    # The same at the store level, on a server without keys.
    from service.jobs.reviews import ReviewAction, ReviewConflict

    with running_app(_settings(tmp_path, api_keys=[]), workers=1) as (client, _):
        job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, {})
        reviews = client.app.state.reviews  # type: ignore[attr-defined]
        view = reviews.open(job_id, None, "alice")
        item = view.items[0]
        reviews.act(job_id, item.id, "alice", ReviewAction(action="accept", version=1))
        bob = reviews.act(job_id, item.id, "bob", ReviewAction(action="reject", version=1))
        assert (bob.accepts, bob.rejects, bob.agreement) == (1, 1, 0.5)
        reviews.act(job_id, item.id, "alice", ReviewAction(action="rename", name="x", version=1))
        with pytest.raises(ReviewConflict) as conflict:
            reviews.act(job_id, item.id, "bob", ReviewAction(action="accept", version=1))
        assert conflict.value.item.name == "x" and conflict.value.item.version == 2
        # Bob's reject was on the old name: stale, shown, not counted.
        seen = reviews.item(job_id, item.id, "bob")
        assert seen.my_vote_stale and seen.stale_votes == 1 and seen.rejects == 0
        page = client.get(f"/review/jobs/{job_id}")
        assert page.status_code == 200 and "1 stale" in page.text


def _progress(page: str) -> str:
    """The page's progress section as text: where it says who is reviewing."""
    found = re.search(r'<section class="progress".*?</section>', page, re.S)
    assert found is not None, page
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(0)))


def test_the_page_says_who_reviews_with_keys_and_says_there_is_no_key_without(
    tmp_path: Path,
) -> None:
    with running_app(_settings(tmp_path / "keys"), workers=1) as (client, _):
        job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
        assert "Reviewing as this key" in _progress(
            client.get(f"/review/jobs/{job_id}", headers=ONE).text
        )
        named = client.get(f"/review/jobs/{job_id}", headers={**ONE, "X-CTA-Reviewer": "dana"})
        assert "Reviewing as dana" in _progress(named.text)
    with running_app(_settings(tmp_path / "open", api_keys=[]), workers=1) as (client, _):
        job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, {})
        said = _progress(client.get(f"/review/jobs/{job_id}").text)
        assert "key" in said and "this key" not in said and "Reviewing as" not in said
        assert (
            "no API keys" in said
            and "recorded as local" in said
            and "without a reviewer identity" in said
        )
        named = _progress(
            client.get(f"/review/jobs/{job_id}", headers={"X-CTA-Reviewer": "dana"}).text
        )
        assert "Reviewing as dana" in named and "no API keys" in named and "this key" not in named


def test_other_keys_jobs_unknown_jobs_and_bad_input_are_clear_4xx(client: TestClient) -> None:
    job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
    item = items(client, job_id, ONE)[0]
    for path in (
        f"/review/jobs/{job_id}",
        f"/review/jobs/{job_id}/export/annotations.jsonl",
        f"/review/jobs/{job_id}/export/rates.json",
        f"/review/jobs/{job_id}/export/accepted.json",
    ):
        assert client.get(path, headers=TWO).status_code == 404, path
        assert client.get(path.replace(job_id, "f" * 32), headers=ONE).status_code == 404
        assert client.get(path.replace(job_id, "nope"), headers=ONE).status_code == 404
    other = act(client, job_id, item, TWO, action="accept")
    assert other.status_code == 404 and other.json()["problem"] == "not_found"
    no_key = client.get(f"/review/jobs/{job_id}", follow_redirects=False)
    assert no_key.status_code == 303  # no key: the login page
    assert client.post(f"/review/jobs/{job_id}/items/1", json={}).status_code == 401
    url = f"/review/jobs/{job_id}/items/{item['data-id']}"
    bad_bodies = [
        {"action": "dance", "version": 1},
        {"action": "accept"},
        {"action": "accept", "version": 0},
        {"action": "rename", "version": 1},
        {"action": "rename", "version": 1, "name": "   "},
        {"action": "label", "version": 1},
        {"action": "label", "version": 1, "label": "maybe"},
        {"action": "accept", "version": "one"},
    ]
    for body in bad_bodies:
        answer = client.post(url, json=body, headers=ONE)
        assert answer.status_code == 422 and answer.json()["problem"] == "invalid_request", body
    assert (
        client.post(url, content=b"{", headers={**ONE, "Content-Type": "application/json"}).json()[
            "problem"
        ]
        == "malformed_json"
    )
    assert (
        client.post(url, content=b"x", headers={**ONE, "Content-Type": "text/plain"}).status_code
        == 415
    )
    huge = {"action": "accept", "version": 10**120}
    assert client.post(url, json=huge, headers=ONE).status_code == 422
    missing = client.post(
        f"/review/jobs/{job_id}/items/999999", json={"action": "accept", "version": 1}, headers=ONE
    )
    assert missing.status_code == 404
    assert (
        client.post(
            f"/review/jobs/{job_id}/items/0", json={"action": "accept", "version": 1}, headers=ONE
        ).status_code
        == 422
    )
    assert client.get(f"/review/jobs/{job_id}?order=sideways", headers=ONE).status_code == 422
    names = f"/review/jobs/{job_id}/names"
    for body in (
        {"position": 0, "target": "Director", "kind": "rpl"},
        {"position": -1, "target": "Director", "kind": "rpl", "name": "x"},
        {"position": 0, "target": "Director", "kind": "swap", "name": "x"},
        {"position": 0, "target": "Director", "kind": "rpl", "name": "x" * 201},
    ):
        assert client.post(names, json=body, headers=ONE).status_code == 422, body
    unknown = {"position": 0, "target": "Nope", "kind": "rpl", "name": "x"}
    assert client.post(names, json=unknown, headers=ONE).status_code == 404


def test_exports_annotations_rates_and_accepted_names(client: TestClient, tmp_path: Path) -> None:
    job_id = done_job(
        client, {"kind": "tables", "tables": [wtq_like_table(0), wtq_like_table(1)]}, ONE
    )
    found = items(client, job_id, ONE)
    rpl = [i for i in found if i["data-kind"] == "rpl"]
    add = [i for i in found if i["data-kind"] == "add"]
    assert act(client, job_id, rpl[0], ONE, action="accept").status_code == 200
    assert act(client, job_id, rpl[1], ONE, action="reject").status_code == 200
    assert act(client, job_id, rpl[2], ONE, action="rename", name="film title").status_code == 200
    assert act(client, job_id, add[0], ONE, action="label", label="associated").status_code == 200
    own = {"position": 0, "target": "Year", "kind": "rpl", "name": "release year"}
    added = client.post(f"/review/jobs/{job_id}/names", json=own, headers=ONE)
    assert added.status_code == 201 and added.json()["origin"] == "reviewer"
    again = client.post(f"/review/jobs/{job_id}/names", json=own, headers=ONE)
    assert again.status_code == 409 and again.json()["item"]["name"] == "release year"

    jsonl = client.get(f"/review/jobs/{job_id}/export/annotations.jsonl", headers=ONE)
    assert jsonl.status_code == 200 and "attachment" in jsonl.headers["content-disposition"]
    rows = [AnnotatedTable.model_validate_json(line) for line in jsonl.text.splitlines()]
    targets = {t: a for row in rows for t, a in row.targets.items()}
    assert rpl[0]["data-name"] in targets[rpl[0]["data-name"].removesuffix(" alias")].equivalent
    assert "release year" in targets["Year"].equivalent
    assert "film title" in {n for a in targets.values() for n in a.equivalent}
    assert any(rpl[1]["data-name"] in a.neither for a in targets.values())
    assert all(row.split == "train" for row in rows)

    rates = client.get(f"/review/jobs/{job_id}/export/rates.json", headers=ONE).json()
    assert rates["by_kind"]["rpl"]["reviewed"] == 3
    assert rates["by_kind"]["rpl"]["accepted"] == 2
    assert rates["by_kind"]["rpl"]["acceptance_rate"] == pytest.approx(2 / 3)
    assert rates["by_kind"]["add"]["acceptance_rate"] == 1.0
    assert rates["added_by_reviewers"] == 1 and rates["renamed"] == 1
    assert set(rates["by_source"]) <= {"retriever", "dictionary", "thesaurus"}

    accepted = client.get(f"/review/jobs/{job_id}/export/accepted.json", headers=ONE).json()
    names = {
        d["name"] for r in accepted.values() for c in r["columns"] for d in c["replace"] + c["add"]
    }
    assert names == {rpl[0]["data-name"], "film title", add[0]["data-name"], "release year"}
    (tmp_path / "rates.json").write_text(json.dumps(rates))


def test_a_spider_job_is_reviewable_and_an_eval_or_bad_kind_page_is_not_a_500(
    client: TestClient,
) -> None:
    job_id = done_job(client, {"kind": "spider", "spider": [PETS]}, ONE)
    assert items(client, job_id, ONE)
    page = client.get(f"/review/jobs/{job_id}", headers=ONE)
    assert page.status_code == 200 and "pet" in page.text


PETS_QUESTIONS = [
    {"db_id": "pets", "question": "Names of students?", "query": "SELECT Fname FROM Student"},
    {
        "db_id": "pets",
        "question": "How many pets are older than 2?",
        "query": "SELECT count(*) FROM Pets WHERE pet_age > 2",
    },
    {
        "db_id": "pets",
        "question": "Student ids and names",
        "query": "SELECT StuID, Fname FROM Student ORDER BY StuID",
    },
]


def test_cli_export_writes_the_curated_dataset_verified_and_annotations_for_training(
    tmp_path: Path,
) -> None:
    """A Spider job reviewed over HTTP; ``cta review export`` perturbs the dataset with the
    accepted names only, the execution check finds 0 failures, and judge training's reader
    reads the annotations folder."""
    from cta.annotations import load_annotated_tables, load_thesaurus
    from cta.cli.main import main

    settings = _settings(tmp_path)
    with running_app(settings, workers=1) as (client, _):
        job_id = done_job(client, {"kind": "spider", "spider": [PETS]}, ONE)
        found = items(client, job_id, ONE)
        accepted_names, rejected_names = [], []
        for i, item in enumerate(i for i in found if i["data-kind"] == "rpl"):
            verdict = "accept" if i % 2 == 0 else "reject"
            assert act(client, job_id, item, ONE, action=verdict).status_code == 200
            (accepted_names if verdict == "accept" else rejected_names).append(item["data-name"])
        assert accepted_names and rejected_names
    tables = tmp_path / "tables.json"
    tables.write_text(json.dumps([PETS]))
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps(PETS_QUESTIONS))
    out = tmp_path / "export"
    code = main(
        [
            "review",
            "export",
            job_id,
            "--out",
            str(out),
            "--database-url",
            settings.resolved_database_url(),
            "--api-key",
            "key-one",
            "--annotations-base",
            "none",
            "--tables",
            str(tables),
            "--questions",
            str(questions),
            "--kind",
            "rpl",
        ]
    )
    assert code == 0
    verification = json.loads((out / "dataset" / "verification.json").read_text())
    assert verification["checks"] == 3 and verification["by_status"] == {"ok": 3}
    schema = json.loads((out / "dataset" / "tables.json").read_text())
    used = {n for entry in schema for _, n in entry["column_names"]}
    assert set(accepted_names) & used and not set(rejected_names) & used
    rows = load_annotated_tables(out / "annotations", "train")
    assert rows and load_thesaurus(out / "annotations") == ()
    judged = {n for row in rows for t in row.targets.values() for n in t.equivalent}
    assert judged == set(accepted_names)
    # Another key's job is unknown to the CLI as to the service.
    assert (
        main(
            [
                "review",
                "export",
                job_id,
                "--out",
                str(tmp_path / "x"),
                "--database-url",
                settings.resolved_database_url(),
                "--api-key",
                "key-two",
            ]
        )
        == 2
    )


def test_a_long_job_pages_by_columns_and_opens_where_the_reviewer_left_off(
    tmp_path: Path,
) -> None:
    with running_app(_settings(tmp_path, review_page_columns=4), workers=1) as (client, _):
        tables = [wtq_like_table(i, columns=3) for i in range(3)]  # 9 columns: 3 pages
        job_id = done_job(client, {"kind": "tables", "tables": tables}, ONE)
        first = client.get(f"/review/jobs/{job_id}?page=1", headers=ONE).text
        assert "Page 1 of 3" in first and 'id="next-page"' in first
        assert 'id="prev-page"' not in first
        for item in items(client, job_id, ONE):  # the resume page: page 1 while it has work
            assert act(client, job_id, item, ONE, action="accept").status_code == 200
        resumed = client.get(f"/review/jobs/{job_id}", headers=ONE).text
        assert "Page 2 of 3" in resumed and 'id="prev-page"' in resumed
        assert 'data-done-elsewhere="' in resumed and 'data-done-elsewhere="0"' not in resumed
        beyond = client.get(f"/review/jobs/{job_id}?page=4", headers=ONE)
        assert beyond.status_code == 404 and "3 pages" in beyond.text
        assert client.get(f"/review/jobs/{job_id}?page=0", headers=ONE).status_code == 422


def test_concurrent_writers_on_one_version_one_wins_and_the_rest_get_409(
    client: TestClient,
) -> None:
    """Eight reviewers rename one name at once from version 1, and add one name at once;
    and the job's first opens race: exactly one write wins, the others are told, no 500."""
    from concurrent.futures import ThreadPoolExecutor

    job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
    with ThreadPoolExecutor(8) as pool:
        pages = list(
            pool.map(lambda _: client.get(f"/review/jobs/{job_id}", headers=ONE), range(8))
        )
    assert {p.status_code for p in pages} == {200}
    assert len({p.text.count('class="item"') for p in pages}) == 1  # copied once, not twice
    item = items(client, job_id, ONE)[0]

    def rename(i: int) -> int:
        who = {**ONE, "X-CTA-Reviewer": f"r{i}"}
        return act(client, job_id, item, who, action="rename", name=f"name {i}").status_code

    def add(i: int) -> int:
        body = {"position": 0, "target": "Year", "kind": "add", "name": "same new name"}
        who = {**ONE, "X-CTA-Reviewer": f"r{i}"}
        return client.post(f"/review/jobs/{job_id}/names", json=body, headers=who).status_code

    with ThreadPoolExecutor(8) as pool:
        renamed = sorted(pool.map(rename, range(8)))
        added = sorted(pool.map(add, range(8)))
    assert renamed == [200] + [409] * 7
    assert added == [201] + [409] * 7


def test_migration_0002_upgrades_a_0001_database_with_jobs_and_downgrades(tmp_path: Path) -> None:
    import sqlalchemy as sa
    from alembic import command

    from service.jobs.store import JobStore
    from service.migrations import alembic_config, upgrade

    store = JobStore(f"sqlite:///{tmp_path / 'jobs.sqlite3'}")
    with store.engine.begin() as conn:
        upgrade(conn, "0001")
        conn.exec_driver_sql(
            "INSERT INTO jobs (id, kind, owner, options, state, total, created_at) "
            "VALUES ('a', 'tables', NULL, '{}', 'done', 0, '2026-01-01 00:00:00')"
        )
    store.migrate()
    with store.engine.connect() as conn:
        assert {"review_items", "review_votes"} <= set(sa.inspect(conn).get_table_names())
        assert conn.exec_driver_sql("SELECT count(*) FROM jobs").scalar_one() == 1
    with store.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0001")
    with store.engine.connect() as conn:
        assert "review_items" not in set(sa.inspect(conn).get_table_names())
    store.migrate()
    store.close()


def test_nearest_thresholds_first_orders_names_by_their_distance_to_the_rule(
    tmp_path: Path,
) -> None:
    # The stand-in's RPL names sit at min(e1, e2) = 0.80, its ADD names at max = 0.20. With
    # an RPL threshold of 0.5 the RPL name is 0.30 away, the ADD name 0.25 (from 0.45): ADD
    # first in every column, where table order has RPL first.
    with running_app(_settings(tmp_path, rpl_threshold=0.5), workers=1) as (client, _):
        job_id = done_job(client, {"kind": "tables", "tables": [wtq_like_table(0)]}, ONE)
        pattern = r'<li class="item"[^>]*data-kind="(\w+)"'
        table = re.findall(pattern, client.get(f"/review/jobs/{job_id}", headers=ONE).text)
        url = f"/review/jobs/{job_id}?order=margin"
        margin = re.findall(pattern, client.get(url, headers=ONE).text)
        assert table == ["rpl", "add"] * 6 and margin == ["add", "rpl"] * 6


@pytest.mark.slow
def test_the_page_shows_a_real_pipeline_s_add_names_in_association_order(
    tmp_path: Path, tiny_pipeline: object
) -> None:
    """A job run by the real (tiny) pipeline with the association rule on: each column's ADD
    names are listed in the order the pipeline ranked them — the linked schema's names first,
    then by association — each with its association score."""
    import dataclasses

    from fastapi.testclient import TestClient
    from service_fakes import wait_until
    from test_pipeline import BOOKS

    from cta.pipeline import Pipeline
    from cta.results import PerturbOptions
    from cta.table import Table
    from service.app import create_app

    assert isinstance(tiny_pipeline, Pipeline)
    settings = tiny_pipeline.settings.model_copy(update={"add_association": 0.0})
    pipeline = dataclasses.replace(tiny_pipeline, settings=settings)
    [expected] = pipeline.perturb_many([Table.parse(BOOKS)], PerturbOptions())
    ranked = {c.column: c.add for c in expected.columns}
    assert sum(map(len, ranked.values())) > 1, "no ADD order to show"

    app = create_app(_settings(tmp_path), lambda _: pipeline, inprocess_workers=1)
    with TestClient(app, raise_server_exceptions=False) as client:
        wait_until(lambda: client.get("/readyz").status_code == 200, what="readiness")
        job_id = done_job(client, {"kind": "tables", "tables": [BOOKS]}, ONE)
        page = client.get(f"/review/jobs/{job_id}", headers=ONE)
    assert page.status_code == 200, page.text
    shown: dict[str, list[tuple[str, str]]] = {}
    for section in re.findall(r'<section class="column".*?</section>', page.text, flags=re.S):
        target = html.unescape(re.search(r'data-target="([^"]*)"', section).group(1))  # type: ignore[union-attr]
        shown[target] = [
            (html.unescape(name), assoc)
            for name, assoc in re.findall(
                r'data-kind="add" data-name="([^"]*)".*?assoc ([0-9.]+)</span>', section, re.S
            )
        ]
    for column, decisions in ranked.items():
        # the page's order and scores are the pipeline's, name for name
        assert shown.get(column, []) == [(d.name, f"{d.association:.2f}") for d in decisions]
        # the pipeline's order: schema names first, then (within the rest) most associated
        rest = [d.association for d in decisions if d.source != "entity-schema"]
        assert rest == sorted(rest, reverse=True)  # type: ignore[type-var]
        sources = [d.source == "entity-schema" for d in decisions]
        assert sources == sorted(sources, reverse=True)
