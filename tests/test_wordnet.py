"""WordNet opens offline from Debian's files through NLTK, multi-word lemmas included."""

from __future__ import annotations

from pathlib import Path

import pytest

from cta.settings import Settings
from cta.wordnet import WordNetMissingError, load_wordnet, prepare_wordnet


def test_wordnet_loads_from_debian_files(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    wn = load_wordnet(settings)
    lemmas = {lemma.name() for s in wn.synsets("first_name") for lemma in s.lemmas()}
    assert "forename" in lemmas
    assert wn.morphy("singers", "n") == "singer"
    lexnames = (tmp_path / "nltk_data" / "corpora" / "wordnet" / "lexnames").read_text()
    assert len(lexnames.splitlines()) == 45


def test_missing_wordnet_names_the_packages(tmp_path: Path) -> None:
    with pytest.raises(WordNetMissingError, match="wordnet-base"):
        prepare_wordnet(Settings(home=tmp_path, wordnet_dir=tmp_path / "nowhere"))
