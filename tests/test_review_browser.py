"""End to end in a real browser: Debian's chromium, headless, driven by Selenium through
Debian's chromedriver (never a downloaded driver). A reviewer logs in and reviews a small
Spider job with the keyboard alone — accept, reject, label, edit, add, undo, help, order,
export — and the exported files are checked, the curated dataset by execution.

Skips only when chromium or chromedriver is absent (``scripts/install --dev`` installs both;
CI has them, and sets ``CTA_TEST_BROWSER=required`` so that their absence fails there). ``CTA_REVIEW_SCREENSHOTS=DIR`` keeps the screenshots the README shows.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import (
    JavascriptException,
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait
from service_fakes import PETS, FakePipeline, serving, wait_until, wtq_like_table
from test_review import PETS_QUESTIONS

from cta.annotations import AnnotatedTable
from cta.cli.main import main
from service.settings import ServiceSettings

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
KEY = "browser-key"

HAVE_BROWSER = CHROMIUM.is_file() and CHROMEDRIVER.is_file()
if not HAVE_BROWSER and os.environ.get("CTA_TEST_BROWSER") == "required":
    raise RuntimeError("CTA_TEST_BROWSER=required, but /usr/bin/chromium or chromedriver is absent")
pytestmark = pytest.mark.skipif(
    not HAVE_BROWSER,
    reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver):"
    " apt-get install chromium chromium-driver, or bash scripts/install --dev",
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, ServiceSettings]]:
    """The app over the stand-in engine with one in-process worker, on a real uvicorn."""
    settings = ServiceSettings(
        home=tmp_path / "home",
        api_keys=[KEY],
        engine_pairs_per_second=100_000.0,
        job_poll_seconds=0.02,
    )
    with serving(settings, FakePipeline(settings), workers=1, log_level="warning") as (url, _):
        yield url, settings


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never fetch a driver or browser
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,900",
        "--force-prefers-reduced-motion",
    ):
        options.add_argument(arg)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


def _keys(driver: WebDriver, *keys: str) -> None:
    """Type into whatever has the focus, as a person at the keyboard does."""
    ActionChains(driver).send_keys(*keys).perform()


def _focused(driver: WebDriver) -> WebElement:
    element: WebElement = driver.switch_to.active_element
    return element


def _wait(driver: WebDriver, check: object, what: str, timeout: float = 10) -> None:
    # A page reloading under the check (after adding a name) is waited out, not a failure:
    # the element read may be stale, gone, or (Chrome's words for a node replaced while it
    # was being read) "not belong to the document"; any other driver error still fails.
    ignored = (StaleElementReferenceException, NoSuchElementException, JavascriptException)

    def settled(d: WebDriver) -> object:
        try:
            return check(d)  # type: ignore[operator]
        except WebDriverException as error:
            if "does not belong to the document" in (error.msg or ""):
                return False
            raise

    WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=ignored).until(
        settled, message=what
    )


def _items(driver: WebDriver, attribute: str) -> list[str]:
    """One attribute of every name on the page, read in one script.

    Reading element by element races a page that re-renders (after adding a name): Chrome
    then answers "node does not belong to the document", which is not a stale element.
    """
    values: list[str] = driver.execute_script(
        "return Array.from(document.querySelectorAll('.item'),"
        " e => e.getAttribute(arguments[0]) || '')",
        attribute,
    )
    return values


def _item(driver: WebDriver, item_id: str) -> WebElement:
    return driver.find_element(By.ID, f"item-{item_id}")


def _shot(driver: WebDriver, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("CTA_REVIEW_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{name}.png"))


def _tab_back_to(driver: WebDriver, text: str, limit: int = 40) -> None:
    """Shift+Tab until the focused element's text starts with ``text``."""
    for _ in range(limit):
        if _focused(driver).text.strip().startswith(text):
            return
        ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    raise AssertionError(f"Tab never reached {text!r}")


def _downloaded(folder: Path, suffix: str) -> Path:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        done = [p for p in folder.iterdir() if p.name.endswith(suffix)]
        if done:
            return done[0]
        time.sleep(0.05)
    raise AssertionError(f"no {suffix} download in {sorted(p.name for p in folder.iterdir())}")


def test_a_reviewer_reviews_a_job_with_the_keyboard_alone_and_exports_it(
    server: tuple[str, ServiceSettings], browser: WebDriver, tmp_path: Path
) -> None:
    url, settings = server
    auth = {"Authorization": f"Bearer {KEY}"}
    job_id = httpx.post(
        f"{url}/v1/jobs", json={"kind": "spider", "spider": [PETS]}, headers=auth
    ).json()["id"]
    wait_until(
        lambda: httpx.get(f"{url}/v1/jobs/{job_id}", headers=auth).json()["state"] == "done",
        what="the job",
    )
    driver = browser

    # Log in: the key field has the focus; the key, Tab, one's name and Enter open the job.
    driver.get(f"{url}/review/jobs/{job_id}")
    _wait(driver, lambda d: "/review/login" in d.current_url, "the login page")
    assert _focused(driver).get_attribute("id") == "key"
    _shot(driver, "review-login", tmp_path)
    _keys(driver, KEY, Keys.TAB, "dana", Keys.ENTER)
    _wait(driver, lambda d: d.current_url.endswith(f"/review/jobs/{job_id}"), "the job page")
    _wait(
        driver,
        lambda d: "Reviewing as dana" in d.find_element(By.CLASS_NAME, "progress").text,
        "the reviewer's name",
    )
    _wait(driver, lambda d: "item" in (_focused(d).get_attribute("class") or ""), "focus")

    items = driver.find_elements(By.CSS_SELECTOR, ".item")
    ids = [i.get_attribute("data-id") for i in items]
    kinds = [i.get_attribute("data-kind") for i in items]
    assert len(ids) >= 6 and "add" in kinds
    assert _focused(driver).get_attribute("data-id") == ids[0]  # resume: the first unreviewed

    def mine(item_id: str) -> str:
        return _item(driver, item_id).get_attribute("data-mine") or ""

    def after(item_id: str, value: str) -> None:
        _wait(driver, lambda d: mine(item_id) == value, f"item {item_id} → {value!r}")

    # a: accept, and focus moves on by itself.
    _keys(driver, "a")
    after(ids[0], "accept")
    _wait(driver, lambda d: _focused(d).get_attribute("data-id") == ids[1], "auto-advance")
    # r: reject.
    _keys(driver, "r")
    after(ids[1], "reject")
    # u: undo the reject.
    _keys(driver, "u")
    after(ids[1], "")
    _wait(driver, lambda d: _focused(d).get_attribute("data-id") == ids[1], "undo's focus")
    # 3: label neither (a reject); 1 on the next: equivalent.
    _keys(driver, "3")
    after(ids[1], "reject")
    assert _item(driver, ids[1]).get_attribute("data-label") == "neither"
    # e: edit the focused name; Enter saves (and accepts the new name).
    edited = _focused(driver).get_attribute("data-id")
    assert edited == ids[2]
    _keys(driver, "e")
    _wait(driver, lambda d: _focused(d).tag_name == "input", "the edit field")
    _keys(driver, "reviewed name", Keys.ENTER)  # the field opens with its text selected
    after(edited, "accept")
    name = _item(driver, edited).get_attribute("data-name")
    assert name == "reviewed name", name
    # k goes back, j forward; 2 labels the next name associated.
    _keys(driver, "k")
    _wait(driver, lambda d: _focused(d).get_attribute("data-id") == edited, "k")
    _keys(driver, "j")
    current = _focused(driver).get_attribute("data-id")
    assert current == ids[3]
    _keys(driver, "2")
    _wait(driver, lambda d: mine(current) != "", "a label")
    # ? opens the help, Esc closes it and gives the focus back.
    _keys(driver, "?")
    _wait(driver, lambda d: d.find_element(By.ID, "help").is_displayed(), "the help")
    _shot(driver, "review-help", tmp_path)
    _keys(driver, Keys.ESCAPE)
    _wait(driver, lambda d: not d.find_element(By.ID, "help").is_displayed(), "help closed")
    assert "item" in (_focused(driver).get_attribute("class") or "")
    # n: add one's own name to the focused name's column.
    column = (
        _focused(driver).find_element(By.XPATH, "./ancestor::section").get_attribute("data-target")
    )
    _keys(driver, "n")
    _wait(driver, lambda d: _focused(d).get_attribute("id") == "add-name", "the add form")
    _keys(driver, "my own name", Keys.ENTER)
    _wait(
        driver,
        lambda d: "my own name" in _items(d, "data-name"),
        "the added name",
    )
    _wait(driver, lambda d: _focused(d).get_attribute("data-name") == "my own name", "its focus")
    # Accept or reject every other name, keyboard only: g jumps to the next unreviewed.
    for _ in range(len(ids)):
        if all(_items(driver, "data-mine")):
            break
        _keys(driver, "g")
        target = _focused(driver).get_attribute("data-id")
        _keys(driver, "a")
        after(target, "accept")
    done = driver.find_element(By.ID, "done").text
    assert int(done) == len(driver.find_elements(By.CSS_SELECTOR, ".item"))
    _shot(driver, "review-job", tmp_path)

    # o: nearest thresholds first (same names, another order), and resume after a reload.
    _keys(driver, "o")
    _wait(driver, lambda d: "order=margin" in d.current_url, "the margin order")
    _wait(driver, lambda d: "item" in (_focused(d).get_attribute("class") or ""), "focus")
    assert len(driver.find_elements(By.CSS_SELECTOR, ".item")) == len(ids) + 1

    # Export by keyboard: from the focused name, Shift+Tab back to the links; Enter downloads.
    downloads = tmp_path / "downloads"
    _tab_back_to(driver, "Acceptance rates")
    _keys(driver, Keys.ENTER)
    rates = json.loads(_downloaded(downloads, ".json").read_text())
    _tab_back_to(driver, "Export annotations")
    _keys(driver, Keys.ENTER)
    jsonl = _downloaded(downloads, ".jsonl")

    rows = [AnnotatedTable.model_validate_json(line) for line in jsonl.read_text().splitlines()]
    judged = {t: a for row in rows for t, a in row.targets.items()}
    assert "reviewed name" in {n for a in judged.values() for n in a.equivalent + a.associated}
    assert "my own name" in {n for a in judged.values() for n in a.equivalent + a.associated}
    assert column in judged
    assert rates["renamed"] == 1 and rates["added_by_reviewers"] == 1
    assert sum(r["reviewed"] for r in rates["by_kind"].values()) == len(ids)

    # A tables job shows each table's first rows beside its names (the README's screenshot).
    table_job = httpx.post(
        f"{url}/v1/jobs", json={"kind": "tables", "tables": [wtq_like_table(0)]}, headers=auth
    ).json()["id"]
    wait_until(
        lambda: httpx.get(f"{url}/v1/jobs/{table_job}", headers=auth).json()["state"] == "done",
        what="the tables job",
    )
    driver.get(f"{url}/review/jobs/{table_job}")
    _wait(driver, lambda d: "item" in (_focused(d).get_attribute("class") or ""), "focus")
    assert (
        len(driver.find_elements(By.CSS_SELECTOR, ".column:first-of-type table.preview tbody tr"))
        == 3
    )
    _keys(driver, "a")
    _wait(driver, lambda d: "You: accept" in d.find_element(By.CSS_SELECTOR, ".item").text, "a")
    driver.execute_script("window.scrollTo(0, 0)")
    _shot(driver, "review-table", tmp_path)

    # The curated dataset from the accepted names passes the execution check.
    tables, questions = tmp_path / "tables.json", tmp_path / "dev.json"
    tables.write_text(json.dumps([PETS]))
    questions.write_text(json.dumps(PETS_QUESTIONS))
    out = tmp_path / "export"
    args = ["review", "export", job_id, "--out", str(out), "--api-key", KEY]
    args += ["--database-url", settings.resolved_database_url(), "--annotations-base", "none"]
    args += ["--tables", str(tables), "--questions", str(questions)]
    assert main(args) == 0
    verification = json.loads((out / "dataset" / "verification.json").read_text())
    assert verification["checks"] > 0
    assert set(verification["by_status"]) <= {"ok", "original_error"}
