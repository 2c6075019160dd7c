"""The README and docs/ stay true: the configuration tables are the ones the settings classes
generate, CI runs the README's test command, and every relative link points at a file that
exists and, with an ``#anchor``, at a heading of that file."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cta.cli.configuration import settings_tables

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_INLINE_CODE = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: formatting dropped, lowercase, punctuation dropped except
    hyphens and spaces (letters, digits and ``_`` kept), spaces → hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading gets ``-1``, ``-2``…)."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def relative_links(page: Path) -> list[str]:
    """The targets of a page's Markdown links and images that are not web addresses."""
    targets = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        for match in _LINK.finditer(_INLINE_CODE.sub("", line)):
            target = match.group(1)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I):  # http:, mailto:…
                targets.append(target)
    return targets


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {path or page.name}")
    return broken


def test_configuration_table_is_current() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    start = page.index("<!-- settings-table:start -->\n") + len("<!-- settings-table:start -->\n")
    end = page.index("<!-- settings-table:end -->")
    assert page[start:end] == settings_tables(), (
        "regenerate with cta.cli.configuration.settings_tables()"
    )


def test_ci_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test" in readme and "bash scripts/setup" in readme
    assert "bash scripts/test" in ci
    # what CI promises to run fails there rather than skip
    assert "export CTA_TEST_BROWSER=required" in ci and "export CTA_TEST_DOCKER=required" in ci


def test_ci_refuses_to_start_without_shared(tmp_path: Path) -> None:
    # Without ../shared the data tests would skip: CI stops first, in one line.
    ci = tmp_path / "clone" / ".ci" / "run"
    ci.parent.mkdir(parents=True)
    ci.write_text((ROOT / ".ci" / "run").read_text(encoding="utf-8"), encoding="utf-8")
    run = subprocess.run(["bash", str(ci)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert run.stdout == "" and len(run.stderr.splitlines()) == 1
    assert run.stderr.startswith(".ci/run: no ../shared beside ")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert not broken_links(page)


def test_readme_links_into_every_docs_page() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    assert {p.resolve() for p in PAGES[1:]} <= linked


def test_the_link_check_catches_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## Plugging in the paper's components\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n"
        "[ok](other.md#plugging-in-the-papers-components) [ok](#title) [web](https://x.org/a.md)\n"
        "`[code](missing.md)`\n```\n[fenced](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](other.md#nothing) ![img](img/none.png)\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nothing: no heading #nothing in other.md",
        "img/none.png: no such file",
    ]


#: Words that narrate the project's own development, not the product: a milestone or an issue
#: by number ("stop 34", "issue 24", "stops 30–33").
HISTORY = re.compile(r"\b(stop|issue|milestone)s?\s+#?\d+", re.IGNORECASE)


def history_words(text: str) -> list[str]:
    return [m.group(0) for m in HISTORY.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_speak_of_the_product_not_its_history(page: Path) -> None:
    assert history_words(page.read_text(encoding="utf-8")) == []


def test_the_history_check_catches_a_milestone() -> None:
    assert history_words("Last measured (stop 34) … the bar of Issue 15 … issue #7") == [
        "stop 34",
        "Issue 15",
        "issue #7",
    ]
    assert history_words("a stop-word list; issues are welcome; 34 stops") == []
