"""Column names as people write them: words, naturalness, the table's writing style, types.

One module for what every candidate source (retrieved corpus headers, the dictionary, the
thesaurus) must satisfy before a name reaches a user:

* :func:`name_problem` / :func:`is_natural_name` — the one hygiene rule: a candidate is a
  short noun phrase of common English words, not a code (``date1``, ``sale price mm``), a
  fragment (``baker first``, ``of votes``), a sentence (``This item also includes``) or a
  header with a qualifier (``Length (first edition)``, ``Win %``);
* :func:`table_style` / :func:`restyle` — a candidate is written like the table's own columns
  (``first_name`` beside ``last_name``, ``Date of birth`` beside ``Previous club``);
* :func:`name_type` — the type a name implies (``… date`` is a time, ``number of …`` a
  number, ``… name`` text), used for candidates whose source gives none or a wrong one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from cta.table import ColumnType
from cta.words import camel_parts, lemmas, name_key, name_words, word_zipf

__all__ = [
    "EVENT_TIME_HEADS",
    "NameStyle",
    "clean_header",
    "head_index",
    "humanise",
    "is_natural_name",
    "name_problem",
    "name_type",
    "restyle",
    "table_style",
]


def humanise(name: str) -> str:
    """A code-style header written as words: ``"SalePrice"``, ``"sale_price"`` → ``"sale
    price"``. Names already written with spaces, and one-word names, are kept as they are."""
    stripped = name.strip()
    if not stripped or any(ch.isspace() for ch in stripped):
        return name
    words = name_words(stripped)
    return " ".join(words) if len(words) > 1 else name


# -- hygiene -----------------------------------------------------------------------------------
MAX_WORDS = 4
# An ADD name is a new column's header: a retrieved one of more words is a flattened multi-row
# header (``club performance league norway``), not a column one would add.
MAX_ADD_WORDS = 3
# Head words naming when something happened, at a granularity a date subsumes (``publication
# year``, ``date joined``): the ADD guard reads two such names about one event as one column.
EVENT_TIME_HEADS = frozenset({"date", "year", "day", "datetime", "timestamp"})
# Characters a column name may hold besides letters and spaces: word joiners, an apostrophe
# (``player's``), an abbreviation's dot (``no.``) and ``&`` (``R&B``). Anything else is a
# qualifier or a code: ``(km²)``, ``%``, ``#``, ``/``, ``:``, ``*``, ``{``.
_ALLOWED_SYMBOLS = frozenset(" _-'.&")
# A name never starts or ends with these (fragments: ``of votes``, ``date of``, ``the``).
_EDGE_WORDS = frozenset(
    "a an the of and or in on at to for by with from per vs via as than into over under "
    "between within without about after before during".split()
)
# Headers people write with these at an edge: ``From`` / ``To`` (a term of office), ``Goals
# for``, ``Date to``, ``Transferred from``.
_LONE_EDGES = frozenset({"from", "to"})
_TRAILING_EDGES = frozenset({"for", "from", "to"})
# Words of sentences, not of headers (``This item also includes``, ``Is it new``).
_SENTENCE_WORDS = frozenset(
    "this that these those is are was were be been being am has have had do does did also "
    "which who whom whose it its they them their we our you your i me my he him his she her "
    "not will would can could should may might must shall there here if then when where".split()
)
# Multi-word names ending in an ordinal are fragments of longer headers (``baker first``).
_DANGLING = frozenset("first second third fourth fifth last next".split())
# Unit and code fragments of corpus headers (``sale price mm``, ``weight lbs``).
_UNITS = frozenset(
    "mm cm km dm nm um kg mg lb lbs oz ml dl hl ft sq sqm sqft mph kph kmh km2 usd eur gbp "
    "pct hrs hr mins min secs sec yrs yr no2 co2 ppm ppb kw kwh mw mwh gw ha "
    "bn mn million millions billion billions thousand thousands".split()
)
_POSSESSIVE = re.compile(r"(?<=\w)'s\b")
# Two-letter words that are words in headers (``id``, ``no.``, ``TV``).
_SHORT_WORDS = frozenset({"id", "no", "tv", "uk", "us", "eu", "un"})


def name_problem(name: str, min_zipf: float, like: str | None = None) -> str | None:
    """Why ``name`` is not a natural column name, or ``None`` when it is.

    ``like`` is the column the candidate renames: what that column already has (a word, a
    symbol, a length, a first or last word) is allowed in its candidates too — a rename may
    be as unusual as the column it renames, no more. Problems: ``empty``, ``symbol``,
    ``digits``, ``too_long``, ``repeated_word``, ``edge_word``, ``sentence``, ``dangling``,
    ``unit``, ``short_word``, ``rare_word``.
    """
    stripped = name.strip()
    words = name_words(_POSSESSIVE.sub("", stripped))
    if not words:
        return "empty"
    own_words = set(name_words(like)) if like else set()
    own_symbols = set(like) if like else set()
    odd = {ch for ch in stripped if not ch.isalnum() and ch not in _ALLOWED_SYMBOLS}
    if odd - own_symbols:
        return "symbol"
    if any(w.isdigit() and w not in own_words for w in words):
        return "digits"
    if len(words) > max(MAX_WORDS, len(own_words)):
        return "too_long"
    own = name_words(like) if like else []
    if len(set(words)) < len(words) and len(set(own)) == len(own):
        return "repeated_word"  # a flattened header (``total goals total``)
    starts = words[0] in _EDGE_WORDS and not (len(words) == 1 and words[0] in _LONE_EDGES)
    ends = words[-1] in _EDGE_WORDS and words[-1] not in _TRAILING_EDGES
    if (starts and own[:1] != words[:1]) or (ends and own[-1:] != words[-1:]):
        return "edge_word"
    if any(w in _SENTENCE_WORDS and w not in own_words for w in words):
        return "sentence"
    if len(words) > 1 and words[-1] in _DANGLING and own[-1:] != words[-1:]:
        return "dangling"
    for word in words:
        if word in own_words or word.isdigit():
            continue
        if word in _UNITS:
            return "unit"
        if word in _EDGE_WORDS:
            continue  # inside a name (``date of birth``): the edges were checked above
        if len(word) <= 2 and word not in _SHORT_WORDS:
            return "short_word"
        if word_zipf(word) < min_zipf and word not in _SHORT_WORDS:
            return "rare_word"
    return None


_TRAILING_MARKS = re.compile(r"[\s:*†‡]+$")
_TRAILING_QUALIFIER = re.compile(r"\s*[(\[][^()\[\]]*[)\]]$")


def clean_header(name: str) -> str:
    """A corpus header without its trailing footnote marks and its final bracketed
    qualifier (``Gold:`` → ``Gold``, ``Transfer fee (€ million)`` → ``Transfer fee``,
    ``Length (first edition)`` → ``Length``); a name that is only a qualifier is kept."""
    out = _TRAILING_MARKS.sub("", name.strip())
    stripped = _TRAILING_MARKS.sub("", _TRAILING_QUALIFIER.sub("", out))
    out = stripped if stripped else out
    return " ".join(out.split()) or name


def is_natural_name(name: str, min_zipf: float, like: str | None = None) -> bool:
    """A short noun phrase of common English words (see :func:`name_problem`): ``"list
    price"`` is; ``"E nitens"``, ``"date1"``, ``"sale price mm"``, ``"This item also
    includes"``, ``"Length (first edition)"`` are not."""
    return name_problem(name, min_zipf, like) is None


# -- style -------------------------------------------------------------------------------------
Case = Literal["lower", "upper", "title", "sentence", "camel"]
# Words a Title Case name keeps lowercase (``Date of Birth``).
_SMALL_WORDS = frozenset("a an the of and or in on at to for by with from per vs".split())
_PREFERRED_CASES: tuple[Case, ...] = ("lower", "sentence", "title", "camel", "upper")
# Acronyms a capitalised style writes in capitals (``ID``, ``US senate``) even when the
# candidate came in lowercase (``us_senate``).
_ACRONYMS = frozenset("id us uk usa eu un tv isbn gdp nba nfl nhl mlb fifa uefa url".split())


@dataclass(frozen=True)
class NameStyle:
    """How a table writes its column names: the word joiner and the letter case.

    ``joiner`` is ``" "``, ``"_"``, ``"-"`` or ``""`` (camelCase / PascalCase); ``case`` is
    ``lower`` (``first name``), ``upper`` (``FIRST_NAME``), ``title`` (``First Name``,
    ``FirstName``), ``sentence`` (``First name``) or ``camel`` (``firstName``).
    """

    joiner: str = " "
    case: Case = "lower"


def _tokens(name: str) -> list[str]:
    """Words of a name as written (case kept), split on separators, camelCase and an R-style
    dot between words (``price.sunshine``); an apostrophe, a final dot or a hyphen stays
    (``player's``, ``no.``, ``e-mail``)."""
    out: list[str] = []
    for chunk in re.split(r"[\s_]+|(?<=[A-Za-z])\.(?=[A-Za-z])", name.strip()):
        if not chunk:
            continue
        if re.fullmatch(r"[A-Za-z]+", chunk):
            out.extend(chunk[a:b] for a, b in camel_parts(chunk))
        else:
            out.append(chunk)
    return out


def _is_acronym(token: str) -> bool:
    letters = [ch for ch in token if ch.isalpha()]
    return len(letters) > 1 and all(ch.isupper() for ch in letters)


def _column_style(name: str) -> tuple[str | None, set[Case]]:
    """The joiner (None: cannot tell) and the cases a column name is consistent with."""
    stripped = name.strip()
    tokens = _tokens(stripped)
    if not tokens:
        return None, set()
    if "_" in stripped:
        joiner: str | None = "_"
    elif any(ch.isspace() for ch in stripped):
        joiner = " "
    elif len(tokens) > 1:
        joiner = ""
    else:
        joiner = None
    if not any(ch.isalpha() for ch in stripped):
        return joiner, set()  # ``1870``, ``#``: no letters, no case
    has_lower = any(ch.islower() for ch in stripped)
    if not has_lower:
        return joiner, {"upper"}
    words = [t for t in tokens if not _is_acronym(t) and t[:1].isalpha()]
    if not words:
        return joiner, set()
    first_up = words[0][:1].isupper()
    rest = [w for w in words[1:] if w.lower() not in _SMALL_WORDS]
    rest_up = [w[:1].isupper() for w in rest]
    if len(words) == 1:
        return joiner, {"title", "sentence"} if first_up else {"lower", "camel"}
    if joiner == "":
        return joiner, {"title"} if first_up else {"camel"}
    if first_up and rest_up and all(rest_up):
        return joiner, {"title"}
    if first_up and not any(rest_up):
        return joiner, {"sentence"} if rest_up else {"title", "sentence"}
    if not first_up and not any(rest_up):
        return joiner, {"lower"}
    return joiner, set()  # mixed: no evidence


def table_style(names: list[str]) -> NameStyle:
    """The style most of a table's column names follow (ties: lower, sentence, title, camel,
    upper; the joiner of most multi-word names, else a space)."""
    joiners: dict[str, int] = {}
    cases: dict[Case, int] = {}
    for name in names:
        joiner, consistent = _column_style(name)
        if joiner is not None:
            joiners[joiner] = joiners.get(joiner, 0) + 1
        for case in consistent:
            cases[case] = cases.get(case, 0) + 1
    joiner = max(sorted(joiners), key=lambda j: joiners[j]) if joiners else " "
    if not cases:
        return NameStyle(joiner=joiner)
    best = max(cases.values())
    case = next(c for c in _PREFERRED_CASES if cases.get(c) == best)
    if joiner == "" and case in ("lower", "sentence"):
        case = "camel"  # one-word names only: camelCase reads as lower
    if joiner in (" ", "_", "-") and case == "camel":
        case = "lower"
    return NameStyle(joiner=joiner, case=case)


def restyle(name: str, style: NameStyle) -> str:
    """``name`` written in ``style``; acronyms (``GDP``, ``US``) keep their capitals."""
    tokens = _tokens(name)
    if not tokens:
        return name
    out = []
    for i, token in enumerate(tokens):
        code = style.joiner != " " and style.case in ("lower", "camel")  # club_id, clubId
        if _is_acronym(token) and any(ch.islower() for ch in name) and not code:
            out.append(token)
            continue
        word = token.lower()
        if word in _ACRONYMS and style.case in ("title", "sentence", "upper"):
            out.append(word.upper())
            continue
        if style.case == "upper":
            word = word.upper()
        elif style.case == "title":
            if i == 0 or word not in _SMALL_WORDS or style.joiner == "":
                word = word[:1].upper() + word[1:]
        elif style.case == "sentence":
            if i == 0:
                word = word[:1].upper() + word[1:]
        elif style.case == "camel" and i > 0:
            word = word[:1].upper() + word[1:]
        out.append(word)
    return style.joiner.join(out)


# -- the type a name implies -----------------------------------------------------------------------
_TIME_HEADS = frozenset(
    "date dates year month day birthday birthdate dob time timestamp datetime weekday".split()
)
_TIME_LAST = frozenset("born died founded established opened closed built released".split())
_NUMBER_HEADS = frozenset(
    "count total amount quantity sum population percentage percent ratio average".split()
)
_NUMBER_STARTS = (("number", "of"), ("no", "of"), ("num", "of"), ("count", "of"), ("amount", "of"))
_TEXT_HEADS = frozenset(
    "name names title titles description notes note comment comments remarks address".split()
)
# A head noun comes before these (``date of birth``, ``year in office``).
_POSTMODIFIER_STARTS = frozenset("of for in on at to by from per with".split())


def head_index(words: list[str]) -> int:
    """Index of the head noun of a name's words: the last word before a prepositional
    post-modifier (``date of birth`` → ``date``) or a trailing past participle (``date
    joined`` → ``date``), else the last word (``publication year``)."""
    for i, word in enumerate(words):
        if i > 0 and word in _POSTMODIFIER_STARTS:
            return i - 1
    if len(words) > 1 and _is_participle(words[-1]):
        return len(words) - 2
    return len(words) - 1


@lru_cache(maxsize=20_000)
def _is_participle(word: str) -> bool:
    """``joined``, ``founded``; not ``seed``, ``speed``, ``red`` (their own verb lemma)."""
    if not word.endswith("ed") or len(word) < 5:
        return False
    found = lemmas(word, "VERB")
    return bool(found) and found[0] != word


def name_type(name: str) -> ColumnType | None:
    """The type a name implies, or ``None`` when the name does not tell.

    ``… date``, ``year``, ``date of …``, ``born`` → time; ``number of …``, ``total …``,
    ``… count`` → number; ``… name``, ``title`` → text.
    """
    words = name_words(name)
    if not words:
        return None
    head = words[head_index(words)]
    if tuple(words[:2]) in _NUMBER_STARTS or (words[0] == "total" and len(words) > 1):
        return ColumnType.NUMBER
    if head in _TIME_HEADS or words[-1] in _TIME_LAST:
        return ColumnType.TIME
    if head in _NUMBER_HEADS:
        return ColumnType.NUMBER
    if head in _TEXT_HEADS:
        return ColumnType.TEXT
    return None


#: heads of a key column: a name ending in one names an identifier of the thing before it
KEY_HEADS = frozenset({"id", "identifier", "code", "key"})


def names_key_of(candidate: str, column: str) -> bool:
    """Whether ``candidate`` names the key of what ``column`` names, which holds no key: the
    column's words, maybe after other words, then a key head (``department id`` for
    ``department``, ``employee address id`` for ``address``). A key and the thing's name are
    two columns, so no rename; beside the column, one new column (the key)."""
    cand, col = name_key(candidate).split(), name_key(column).split()
    if len(cand) <= len(col) or not col or cand[-1] not in KEY_HEADS or col[-1] in KEY_HEADS:
        return False
    return cand[-1 - len(col) : -1] == col
