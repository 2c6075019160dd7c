"""The README stays true: its configuration tables are the ones the settings classes generate, and CI runs
the README's test command."""

from __future__ import annotations

from pathlib import Path

from service.settings import settings_table

ROOT = Path(__file__).resolve().parents[1]


def test_readme_configuration_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- settings-table:start -->\n") + len("<!-- settings-table:start -->\n")
    end = readme.index("<!-- settings-table:end -->")
    assert readme[start:end] == settings_table(), "regenerate with service.settings.settings_table()"


def test_ci_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test" in readme and "bash scripts/setup" in readme
    assert "bash scripts/test" in ci
