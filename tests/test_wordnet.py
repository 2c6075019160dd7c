"""WordNet opens offline from Debian's files through NLTK, multi-word lemmas included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cta import wordnet
from cta.settings import Settings
from cta.wordnet import WordNetMissingError, build_wordnet_index, load_wordnet, prepare_wordnet


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


def test_the_parsed_index_is_prebuilt_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cta setup` writes the parsed lemma index; a later load reads it instead of parsing
    NLTK's index files, and answers exactly as the parsed one."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    settings = Settings(home=tmp_path)
    monkeypatch.setattr(wordnet, "_cache", {})
    path = build_wordnet_index(settings)
    assert path == tmp_path / "nltk_data" / wordnet.INDEX_FILE and path.is_file()
    parsed = load_wordnet(settings).reader

    def no_parsing(self: object) -> None:
        raise AssertionError("the index files were parsed again")

    monkeypatch.setattr(wordnet, "_cache", {})
    monkeypatch.setattr(WordNetCorpusReader, "_load_lemma_pos_offset_map", no_parsing)
    monkeypatch.setattr(WordNetCorpusReader, "_scan_satellites", no_parsing)
    read = load_wordnet(settings)
    assert read.reader._lemma_pos_offset_map == parsed._lemma_pos_offset_map
    assert read.reader.satellite_offsets == parsed.satellite_offsets
    assert [s.name() for s in read.synsets("first name")] == ["first_name.n.01"]
    # NLTK's map to WordNet 3.0 serves only the multilingual data: not built.
    assert read.reader.map30 is None


def test_a_stale_or_broken_index_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(home=tmp_path)
    path = build_wordnet_index(settings)
    good = path.read_bytes()
    path.write_bytes(b"not a pickle")
    monkeypatch.setattr(wordnet, "_cache", {})
    assert wordnet._read_index(path, wordnet._index_key(path.parent)) is None
    assert [s.name() for s in load_wordnet(settings).synsets("singer", "n")][:1] == ["singer.n.01"]
    assert path.read_bytes() == good  # parsed again and written back
    # An index made from other files (here: an older index.noun) is not used.
    source = tmp_path / "nltk_data" / "corpora" / "wordnet" / "index.noun"
    stamp = source.stat().st_mtime_ns
    os.utime(source, ns=(stamp, stamp - 10**9))
    assert wordnet._read_index(path, wordnet._index_key(path.parent)) is None
    build_wordnet_index(settings)
    assert wordnet._read_index(path, wordnet._index_key(path.parent)) is not None


def test_nltk_imports_without_its_optional_extras_which_still_import_after() -> None:
    """WordNet's NLTK import skips scipy.stats and scikit-learn (half a second of a first
    result); both stay importable for whoever needs them afterwards."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom cta.wordnet import import_nltk\nimport_nltk()\n"
        "print(sorted(m for m in ('scipy.stats', 'sklearn') if m in sys.modules))\n"
        "import scipy.stats, sklearn\nprint(scipy.stats.norm.cdf(0), 'nltk' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["[]", "0.5 True"]
