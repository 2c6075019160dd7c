"""Name hygiene, the table's writing style and the type a name implies (cta.names)."""

from __future__ import annotations

import pytest

from cta.names import (
    NameStyle,
    clean_header,
    head_index,
    is_natural_name,
    name_problem,
    name_type,
    names_key_of,
    restyle,
    table_style,
)
from cta.table import ColumnType


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        # names people write
        ("list price", None),
        ("publishing house", None),
        ("publishingHouse", None),
        ("Date of birth", None),
        ("no. of beds", None),
        ("player's name", None),
        ("From", None),  # a term of office: From / To
        ("Goals for", None),
        ("Transferred from", None),
        # corpus junk of the issue
        ("baker first", "dangling"),
        ("sale price mm", "unit"),
        ("sales billion", "unit"),
        ("This item also includes", "sentence"),
        ("Length (first edition)", "symbol"),
        ("Win %", "symbol"),
        ("Title {the rebel", "symbol"),
        ("Album / Name", "symbol"),
        ("date1", "digits"),
        ("2008 club", "digits"),
        ("pieces of mail per cap", "too_long"),
        ("Peak chart positions US Air", "too_long"),
        ("of votes", "edge_word"),
        ("and", "edge_word"),
        ("Goals and", "edge_word"),
        ("date of", "edge_word"),
        ("E nitens", "short_word"),
        ("qxzv total", "rare_word"),
        ("", "empty"),
        ("+/–", "empty"),
    ],
)
def test_name_problems(name: str, problem: str | None) -> None:
    assert name_problem(name, 3.0) == problem
    assert is_natural_name(name, 3.0) is (problem is None)


def test_a_rename_may_keep_what_its_column_has() -> None:
    # The column's own symbol, number, length and edge words are allowed in its renames …
    assert not is_natural_name("Transfer cost (£)", 3.0)
    assert is_natural_name("Transfer cost (£)", 3.0, like="Transfer fee (£)")
    assert is_natural_name("2008 team", 3.0, like="2008 club")
    assert is_natural_name(
        "Total no. of seats in Parliament", 3.0, like="Total no. of seats in Assembly"
    )
    # … nothing else.
    assert not is_natural_name("Transfer cost (£) %", 3.0, like="Transfer fee (£)")
    assert not is_natural_name("2009 team", 3.0, like="2008 club")


@pytest.mark.parametrize(
    ("columns", "style"),
    [
        (["title", "author", "publication year"], NameStyle(" ", "lower")),
        (["Name", "Date joined", "Previous club"], NameStyle(" ", "sentence")),
        (["Name", "Date Joined", "Previous Club"], NameStyle(" ", "title")),
        (["first_name", "last_name", "age"], NameStyle("_", "lower")),
        (["FIRST_NAME", "AGE"], NameStyle("_", "upper")),
        (["firstName", "age"], NameStyle("", "camel")),
        (["FirstName", "LastName"], NameStyle("", "title")),
        (["Song_Name", "Song_Release_Year"], NameStyle("_", "title")),
        (["Pos.", "Name", "Place of Birth", "Date of Birth"], NameStyle(" ", "title")),
        (["Denomination", "1870", "1880", "1890"], NameStyle(" ", "sentence")),  # numbers: no case
        (["#", "Name", "Height"], NameStyle(" ", "sentence")),
    ],
)
def test_table_style(columns: list[str], style: NameStyle) -> None:
    assert table_style(columns) == style


@pytest.mark.parametrize(
    ("name", "style", "written"),
    [
        ("Date of Birth", NameStyle(" ", "lower"), "date of birth"),
        ("date of birth", NameStyle(" ", "sentence"), "Date of birth"),
        ("date of birth", NameStyle(" ", "title"), "Date of Birth"),
        ("date of birth", NameStyle("_", "lower"), "date_of_birth"),
        ("date of birth", NameStyle("", "camel"), "dateOfBirth"),
        ("date of birth", NameStyle("", "title"), "DateOfBirth"),
        ("sale price", NameStyle("_", "upper"), "SALE_PRICE"),
        ("SalePrice", NameStyle(" ", "lower"), "sale price"),
        ("price.sunshine", NameStyle(" ", "sentence"), "Price sunshine"),
        ("GDP growth", NameStyle(" ", "title"), "GDP Growth"),  # an acronym keeps its capitals
        ("us_senate", NameStyle(" ", "sentence"), "US senate"),  # … or gets them back
        ("club id", NameStyle(" ", "title"), "Club ID"),
        ("Club ID", NameStyle("_", "lower"), "club_id"),
        ("no. of pages", NameStyle(" ", "sentence"), "No. of pages"),
    ],
)
def test_restyle(name: str, style: NameStyle, written: str) -> None:
    assert restyle(name, style) == written


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("publication year", "year"),
        ("date of birth", "date"),
        ("date joined", "date"),
        ("year founded", "year"),
        ("team seed", "seed"),  # "seed" is its own verb lemma: not a participle
        ("price", "price"),
    ],
)
def test_head_word(name: str, head: str) -> None:
    words = name.split()
    assert words[head_index(words)] == head


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Date", ColumnType.TIME),
        ("release date", ColumnType.TIME),
        ("year", ColumnType.TIME),
        ("Date of birth", ColumnType.TIME),
        ("born", ColumnType.TIME),
        ("number of pages", ColumnType.NUMBER),
        ("total goals", ColumnType.NUMBER),
        ("page count", ColumnType.NUMBER),
        ("album title", ColumnType.TEXT),
        ("name", ColumnType.TEXT),
        ("phone number", None),  # an identifier, not a count: the corpus type decides
        ("discount", None),
    ],
)
def test_the_type_a_name_implies(name: str, kind: ColumnType | None) -> None:
    assert name_type(name) == kind


@pytest.mark.parametrize(
    ("header", "cleaned"),
    [
        ("Gold:", "Gold"),
        ("Country of origin*", "Country of origin"),
        ("Transfer fee (€ million)", "Transfer fee"),
        ("Length (first edition)", "Length"),
        ("Density [per km²]", "Density"),
        ("Date of Birth (Age) ", "Date of Birth"),
        ("(km²)", "(km²)"),  # nothing but a qualifier: kept (and refused as a name)
        ("Series #", "Series #"),  # "#" is a word here (number), not a mark
        ("Price", "Price"),
    ],
)
def test_clean_header(header: str, cleaned: str) -> None:
    assert clean_header(header) == cleaned


@pytest.mark.parametrize(
    ("candidate", "column", "key_of"),
    [
        ("department id", "department", True),
        ("Department_ID", "department", True),  # any spelling
        ("employee address id", "address", True),  # other words may come first
        ("city code", "city", True),
        ("department", "department id", False),  # the other way round: a name, not a key
        ("department code", "department id", False),  # the column is a key already
        ("department name", "department", False),  # no key head
        ("id", "department", False),  # a bare head is no key of the column
        ("manager id", "department", False),  # the key of another thing
        ("address id", "email address", False),  # not the column's whole name
    ],
)
def test_a_key_of_what_a_column_names(candidate: str, column: str, key_of: bool) -> None:
    assert names_key_of(candidate, column) is key_of
