"""WordNet 3.0 from Debian's ``wordnet-base`` files, opened through NLTK without any download,
and :class:`WordNet`, the one way every stage and the judge's training ask it about words.

NLTK's reader wants ``<root>/corpora/wordnet`` on ``nltk.data.path`` and a ``lexnames``
file that Debian does not ship; :func:`load_wordnet` copies the files into the cache and
writes ``lexnames`` once.

Opening WordNet through NLTK parses the four index files (seconds) and maps every synset to
WordNet 3.0 for the multilingual OMW data, which nothing here asks for. The reader used here
skips that map and reads the parsed index from ``<root>/wordnet-index.pickle``
(:func:`build_wordnet_index`, run by ``cta setup``; rebuilt when the files it was made from
change), so a command opens WordNet in a fraction of a second.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cta import collector
from cta.settings import Settings, get_settings

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset, WordNetCorpusReader

# The 45 lexicographer files in WordNet's documented order: (name, part-of-speech number).
_LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3),
    ("adj.pert", 3),
    ("adv.all", 4),
    ("noun.Tops", 1),
    ("noun.act", 1),
    ("noun.animal", 1),
    ("noun.artifact", 1),
    ("noun.attribute", 1),
    ("noun.body", 1),
    ("noun.cognition", 1),
    ("noun.communication", 1),
    ("noun.event", 1),
    ("noun.feeling", 1),
    ("noun.food", 1),
    ("noun.group", 1),
    ("noun.location", 1),
    ("noun.motive", 1),
    ("noun.object", 1),
    ("noun.person", 1),
    ("noun.phenomenon", 1),
    ("noun.plant", 1),
    ("noun.possession", 1),
    ("noun.process", 1),
    ("noun.quantity", 1),
    ("noun.relation", 1),
    ("noun.shape", 1),
    ("noun.state", 1),
    ("noun.substance", 1),
    ("noun.time", 1),
    ("verb.body", 2),
    ("verb.change", 2),
    ("verb.cognition", 2),
    ("verb.communication", 2),
    ("verb.competition", 2),
    ("verb.consumption", 2),
    ("verb.contact", 2),
    ("verb.creation", 2),
    ("verb.emotion", 2),
    ("verb.motion", 2),
    ("verb.perception", 2),
    ("verb.possession", 2),
    ("verb.social", 2),
    ("verb.stative", 2),
    ("verb.weather", 2),
    ("adj.ppl", 3),
)

_REQUIRED = ("data.noun", "index.noun", "data.verb", "index.verb", "data.adj", "index.adj")
#: the parsed lemma index, beside ``corpora/`` (:func:`build_wordnet_index`)
INDEX_FILE = "wordnet-index.pickle"
# What the parsed index is read from: a change to any of them makes it stale.
_INDEX_SOURCES = ("index.noun", "index.verb", "index.adj", "index.adv", "data.adj")
_INDEX_FORMAT = 1

log = logging.getLogger(__name__)

_lock = threading.Lock()
_cache: dict[Path, WordNet] = {}


class WordNetMissingError(RuntimeError):
    """WordNet files are not installed (Debian packages wordnet-base, wordnet-sense-index)."""


def prepare_wordnet(settings: Settings | None = None) -> Path:
    """Copy Debian's WordNet files into ``<home>/nltk_data/corpora/wordnet``; return the root."""
    settings = settings or get_settings()
    source = settings.wordnet_dir
    missing = [f for f in _REQUIRED if not (source / f).exists()]
    if missing:
        raise WordNetMissingError(
            f"WordNet files {missing} not found in {source}; install Debian packages "
            "'wordnet-base wordnet-sense-index' or set CTA_WORDNET_DIR"
        )
    root = settings.nltk_dir()
    target = root / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    # Copied, not linked: NLTK refuses files whose real path leaves its root.
    for entry in source.iterdir():
        dest = target / entry.name
        if entry.is_file() and not dest.exists():
            tmp = dest.with_name(dest.name + ".part")
            shutil.copyfile(entry, tmp)
            tmp.replace(dest)
    lexnames = target / "lexnames"
    if not lexnames.exists():
        tmp = lexnames.with_suffix(".tmp")
        tmp.write_text(
            "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(_LEXNAMES))
        )
        tmp.replace(lexnames)
    return root


class WordNet:
    """Words in WordNet: the synsets of a word or collocation (spaces or ``_``), its base
    forms, and how often a sense of it is attested — what the dictionary replacer, the ADD
    guard and the judge's training supervision ask, over one NLTK reader. Synset lookups are
    memoised (bounded): the same words are asked again and again."""

    def __init__(self, reader: WordNetCorpusReader, cache_size: int = 200_000) -> None:
        self.reader = reader
        self._lookup = lru_cache(maxsize=cache_size)(self._synsets)
        self._events = lru_cache(maxsize=cache_size)(self._event_verbs)

    def synsets(self, word: str, pos: str | None = None) -> list[Synset]:
        """The synsets of ``word`` (``first name`` ≡ ``first_name``), of one part of speech
        (``n``, ``v``, ``a``, ``r``) or all, in WordNet's order."""
        return list(self._lookup(word.replace(" ", "_"), pos))

    def _synsets(self, key: str, pos: str | None) -> tuple[Synset, ...]:
        return tuple(self.reader.synsets(key, pos))

    def synset(self, name: str) -> Synset:
        """The synset called ``name`` (``person.n.01``); raises when WordNet has none."""
        return self.reader.synset(name)

    def morphy(self, word: str, pos: str) -> str | None:
        """The most likely base form of ``word`` as a ``pos`` (``singers`` → ``singer``), or
        ``None`` when WordNet has none."""
        found = self.reader.morphy(word, pos)
        return None if found is None else str(found)

    def base_forms(self, word: str, pos: str) -> list[str]:
        """Every base form of ``word`` as a ``pos`` WordNet knows (``data`` → ``datum``,
        ``data``)."""
        return list(self.reader._morphy(word, pos))

    def all_synsets(self) -> Iterator[Synset]:
        """Every synset, in WordNet's order."""
        yield from self.reader.all_synsets()

    def event_verbs(self, word: str) -> frozenset[str]:
        """The verb senses ``word`` can name the event of, any sense: a noun's derivationally
        related verbs (``publication`` → *publish*, *issue*) and a verb form's own senses
        (``published`` → *publish*). Two words that share one can name the same event
        (``release`` / ``publication``; never ``release`` / ``death``)."""
        return self._events(word.lower())

    def _event_verbs(self, word: str) -> frozenset[str]:
        out: set[str] = set()
        for synset in self.synsets(word, "n"):
            for lemma in synset.lemmas():
                if lemma.name().lower() == word:
                    out.update(
                        d.synset().name()
                        for d in lemma.derivationally_related_forms()
                        if d.synset().pos() == "v"
                    )
        base = self.morphy(word, "v")
        if base is not None:
            out.update(s.name() for s in self.synsets(base, "v"))
        return frozenset(out)

    @staticmethod
    def sense_count(synset: Synset, lemma: str) -> int:
        """How often ``synset`` is attested as the sense of ``lemma`` (its SemCor count in
        WordNet's ``cntlist``; 0 when the synset has no such lemma)."""
        return sum(entry.count() for entry in synset.lemmas() if entry.name().lower() == lemma)


def load_wordnet(settings: Settings | None = None) -> WordNet:
    """WordNet (loaded once per process, thread-safe), its lemma index read from the prebuilt
    file (written on the way when missing or stale)."""
    root = prepare_wordnet(settings)
    with _lock:
        wordnet = _cache.get(root)
        if wordnet is None:
            wordnet = WordNet(_open_reader(root))
            _cache[root] = wordnet
        return wordnet


def build_wordnet_index(settings: Settings | None = None) -> Path:
    """Write the parsed lemma index that :func:`load_wordnet` reads (``cta setup``), unless
    an up-to-date one is there; return its path."""
    root = prepare_wordnet(settings)
    path = root / INDEX_FILE
    if _read_index(path, _index_key(root)) is None:
        _open_reader(root)  # parses the index files and writes the prebuilt one
    return path


def import_nltk() -> Any:
    """NLTK, imported without its optional scipy.stats and scikit-learn extras.

    ``import nltk`` runs NLTK's whole package (parsers, taggers, classifiers …); two of its
    modules try scipy.stats (Fisher's exact test for collocations) and scikit-learn (a
    classifier wrapper) and go on without them. Those two cost ~0.5 s of a command that only
    reads WordNet, and nothing here uses either, so they are hidden while NLTK imports
    (``sys.modules[name] = None`` makes their import fail as if absent) and visible again
    afterwards: scipy and scikit-learn themselves still import normally later."""
    import sys

    if "nltk" in sys.modules:
        return sys.modules["nltk"]
    hidden = [name for name in ("scipy.stats", "sklearn") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import nltk
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
    return nltk


def _open_reader(root: Path) -> WordNetCorpusReader:
    nltk = import_nltk()

    # NLTK only opens corpora under a root listed on nltk.data.path.
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    reader: WordNetCorpusReader = _reader_class()(root)
    return reader


def _index_key(root: Path) -> tuple[Any, ...]:
    """What the prebuilt index must have been made from: this format, NLTK's version, and the
    name, size and modification time of each source file."""
    nltk = import_nltk()

    folder = root / "corpora" / "wordnet"
    stats = [(name, (folder / name).stat()) for name in _INDEX_SOURCES if (folder / name).exists()]
    return (
        _INDEX_FORMAT,
        nltk.__version__,
        tuple((name, st.st_size, st.st_mtime_ns) for name, st in stats),
    )


def _read_index(path: Path, key: tuple[Any, ...]) -> tuple[dict[str, Any], set[int]] | None:
    """The (lemma index, adjective satellite offsets) stored at ``path`` for ``key``; None
    when there is none, it is unreadable or it was made from other files."""
    # Some 150,000 small dicts: the cyclic collector, run on their way in, would take
    # three times as long as reading them (they hold no cycles).
    try:
        with collector.paused(), path.open("rb") as handle:
            stored = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
        return None  # none yet, or not one this code wrote: parsed again
    if not isinstance(stored, tuple) or len(stored) != 3 or stored[0] != key:
        return None
    return stored[1], stored[2]


def _write_index(path: Path, key: tuple[Any, ...], index: Any, satellites: set[int]) -> None:
    """Store the parsed index for the next process (atomically; a cache that cannot be
    written only costs the next process the parse)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        with tmp.open("wb") as handle:
            pickle.dump((key, index, satellites), handle, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    except OSError as exc:
        log.warning("WordNet: cannot write the parsed index to %s (%s)", path, exc)
        tmp.unlink(missing_ok=True)


@lru_cache(maxsize=1)
def _reader_class() -> type[WordNetCorpusReader]:
    """NLTK's reader over a prepared root, with the lemma index from :data:`INDEX_FILE`
    (deferred: NLTK loads only when WordNet is asked for)."""
    import_nltk()
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class PrebuiltIndexReader(WordNetCorpusReader):  # type: ignore[misc]
        # lemma -> part of speech -> synset offsets; adjective satellites' offsets
        _lemma_pos_offset_map: dict[str, dict[str, list[int]]]
        satellite_offsets: set[int]

        def __init__(self, root: Path) -> None:
            self._index_path = root / INDEX_FILE
            self._index_key = _index_key(root)
            self._prebuilt = _read_index(self._index_path, self._index_key)
            super().__init__(str(root / "corpora" / "wordnet"), None)

        def _scan_satellites(self) -> None:
            if self._prebuilt is None:
                super()._scan_satellites()
            else:
                self.satellite_offsets = self._prebuilt[1]

        def _load_lemma_pos_offset_map(self) -> None:
            if self._prebuilt is None:
                super()._load_lemma_pos_offset_map()
                _write_index(
                    self._index_path,
                    self._index_key,
                    self._lemma_pos_offset_map,
                    self.satellite_offsets,
                )
            else:
                self._lemma_pos_offset_map = self._prebuilt[0]
            self._prebuilt = None  # the reader owns it now

        def map_wn(self, version: str = "wordnet") -> None:
            # NLTK's map of every synset to WordNet 3.0 serves only the multilingual (OMW)
            # data, which this reader never opens (it has no OMW reader).
            return None

    return PrebuiltIndexReader
