"""WordNet 3.0 from Debian's ``wordnet-base`` files, opened through NLTK without any download.

NLTK's reader wants ``<root>/corpora/wordnet`` on ``nltk.data.path`` and a ``lexnames``
file that Debian does not ship; :func:`load_wordnet` copies the files into the cache and
writes ``lexnames`` once.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from cta.settings import Settings, get_settings

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

# The 45 lexicographer files in WordNet's documented order: (name, part-of-speech number).
_LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1),
    ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1),
    ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1), ("noun.feeling", 1),
    ("noun.food", 1), ("noun.group", 1), ("noun.location", 1), ("noun.motive", 1),
    ("noun.object", 1), ("noun.person", 1), ("noun.phenomenon", 1), ("noun.plant", 1),
    ("noun.possession", 1), ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1),
    ("noun.shape", 1), ("noun.state", 1), ("noun.substance", 1), ("noun.time", 1),
    ("verb.body", 2), ("verb.change", 2), ("verb.cognition", 2), ("verb.communication", 2),
    ("verb.competition", 2), ("verb.consumption", 2), ("verb.contact", 2), ("verb.creation", 2),
    ("verb.emotion", 2), ("verb.motion", 2), ("verb.perception", 2), ("verb.possession", 2),
    ("verb.social", 2), ("verb.stative", 2), ("verb.weather", 2), ("adj.ppl", 3),
)

_REQUIRED = ("data.noun", "index.noun", "data.verb", "index.verb", "data.adj", "index.adj")

_lock = threading.Lock()
_cache: dict[Path, WordNetCorpusReader] = {}


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


def load_wordnet(settings: Settings | None = None) -> WordNetCorpusReader:
    """The WordNet reader (loaded once per process, thread-safe)."""
    root = prepare_wordnet(settings)
    with _lock:
        reader = _cache.get(root)
        if reader is None:
            import nltk
            from nltk.corpus.reader.wordnet import WordNetCorpusReader

            # NLTK only opens corpora under a root listed on nltk.data.path.
            if str(root) not in nltk.data.path:
                nltk.data.path.insert(0, str(root))
            reader = WordNetCorpusReader(str(root / "corpora" / "wordnet"), None)
            _cache[root] = reader
        return reader
