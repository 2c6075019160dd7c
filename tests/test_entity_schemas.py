"""Entity schemas: the shipped folder and its card, the linker, the entity-schema source, and
what the pipeline does with a link."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cta import registry
from cta.components import (
    CandidateSource,
    ColumnContext,
    EntityLinker,
    SourceProposal,
    TableLink,
)
from cta.entity_schemas import (
    DEFAULT_DIR,
    EntitySchemasError,
    check_card,
    read_entity_schemas,
)
from cta.pipeline import Pipeline
from cta.results import Candidate, PerturbOptions
from cta.settings import SHIPPED_ENTITY_SCHEMAS, Settings
from cta.table import ColumnType, Table
from retriever.entity_linker import EntitySchemaLinker, EntitySchemaSource

# Three small schemas in the shipped format: two of one domain's rows, one of another's.
SCHEMAS = [
    {
        "entity": "book",
        "domain": "books-publishing",
        "groups": [
            {
                "group": "identity",
                "attributes": [
                    {"name": "title", "type": "text", "equivalent": ["book title", "name"]},
                    {"name": "isbn", "type": "text", "equivalent": ["isbn-13"]},
                    {"name": "subtitle", "type": "text", "equivalent": []},
                ],
            },
            {
                "group": "publication",
                "attributes": [
                    {"name": "publisher", "type": "text", "equivalent": ["publishing house"]},
                    {
                        "name": "publication date",
                        "type": "time",
                        "equivalent": ["published", "date"],
                    },
                    {"name": "edition", "type": "text", "equivalent": []},
                    {
                        "name": "page count",
                        "type": "number",
                        "equivalent": ["pages", "number of pages"],
                    },
                ],
            },
            {
                "group": "people",
                "attributes": [
                    {"name": "author", "type": "text", "equivalent": ["writer", "written by"]},
                    {"name": "translator", "type": "text", "equivalent": ["translated by"]},
                ],
            },
            {
                "group": "reception",
                "attributes": [{"name": "copies sold", "type": "number", "equivalent": ["sales"]}],
            },
        ],
    },
    {
        "entity": "film",
        "domain": "film-tv-media",
        "groups": [
            {
                "group": "identity",
                "attributes": [
                    {"name": "title", "type": "text", "equivalent": ["film title", "film"]},
                    {"name": "director", "type": "text", "equivalent": ["directed by"]},
                    {"name": "studio", "type": "text", "equivalent": []},
                    {"name": "release date", "type": "time", "equivalent": ["released"]},
                ],
            }
        ],
    },
    {
        "entity": "football player",
        "domain": "sports",
        "groups": [
            {
                "group": "identity",
                "attributes": [
                    {"name": "player", "type": "text", "equivalent": ["name", "player name"]},
                    {"name": "nationality", "type": "text", "equivalent": ["nation"]},
                    {"name": "date of birth", "type": "time", "equivalent": ["born"]},
                ],
            },
            {
                "group": "career",
                "attributes": [
                    {"name": "club", "type": "text", "equivalent": ["team"]},
                    {"name": "goals", "type": "number", "equivalent": ["goals scored"]},
                    {"name": "assists", "type": "number", "equivalent": []},
                    {"name": "appearances", "type": "number", "equivalent": ["apps", "caps"]},
                ],
            },
        ],
    },
]
ENTITIES = [
    {"entity": "book", "also": ["novel"], "domain": "books-publishing", "hint": "a book"},
    {
        "entity": "film",
        "also": ["movie", "motion picture"],
        "domain": "film-tv-media",
        "hint": "a film",
    },
    {"entity": "football player", "also": ["footballer"], "domain": "sports", "hint": "a player"},
]


def write_schemas(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "schemas.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SCHEMAS))
    (folder / "entities.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ENTITIES))
    return folder / "schemas.jsonl"


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_schemas(tmp_path_factory.mktemp("schemas"))


@pytest.fixture(scope="module")
def linker(tiny_settings: Settings, schema_file: Path) -> EntitySchemaLinker:
    settings = tiny_settings.model_copy(update={"entity_schemas": str(schema_file)})
    made = registry.create("linker", "entity-schemas", settings)
    assert isinstance(made, EntitySchemaLinker) and isinstance(made, EntityLinker)
    return made


BOOKS = Table.parse(
    {
        "name": "books",
        "columns": [
            {"name": "book title", "type": "text"},
            {"name": "author", "type": "text"},
            {"name": "pages", "type": "number"},
            {"name": "shelf", "type": "text"},
        ],
        "rows": [["Dune", "Herbert", 412, "A3"], ["Emma", "Austen", 474, "B1"]],
    }
)


# -- the shipped folder -------------------------------------------------------------------
def test_the_shipped_card_matches_the_files() -> None:
    assert check_card(DEFAULT_DIR) == []
    card = json.loads((DEFAULT_DIR / "card.json").read_text())
    schemas = read_entity_schemas(DEFAULT_DIR)
    assert card["counts"]["entities"] == len(schemas) == 1300
    assert "CC BY-SA 4.0" in card["licence"] and (DEFAULT_DIR / "README.md").is_file()
    assert SHIPPED_ENTITY_SCHEMAS.parent == DEFAULT_DIR


def test_a_changed_file_no_longer_matches_the_card(tmp_path: Path) -> None:
    copy = tmp_path / "schemas"
    shutil.copytree(DEFAULT_DIR, copy)
    path = copy / "schemas.jsonl"
    path.chmod(0o644)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))  # one entity fewer
    problems = check_card(copy)
    assert problems and any("files" in p for p in problems) and any("counts" in p for p in problems)


def test_a_malformed_file_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write_schemas(tmp_path)
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(EntitySchemasError, match=r"schemas.jsonl:4: not JSON"):
        read_entity_schemas(path)
    path.write_text('{"entity": "x", "groups": [{"attributes": [{"name": "a"}]}]}\n')
    with pytest.raises(EntitySchemasError, match=r":1: not an entity schema"):
        read_entity_schemas(path)


def test_a_missing_schema_file_is_one_line_from_the_cli(
    tmp_path: Path, tiny_env: dict[str, str]
) -> None:
    import subprocess
    import sys

    env = {**tiny_env, "CTA_ENTITY_SCHEMAS": str(tmp_path / "none.jsonl")}
    done = subprocess.run(
        [sys.executable, "-m", "cta.cli.main", "perturb", "examples/books.json"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("cta: error:") and "none.jsonl" in lines[-1]
    assert "Traceback" not in done.stderr


def test_schemas_are_read_with_their_facets_types_and_other_names(schema_file: Path) -> None:
    schemas = read_entity_schemas(schema_file)
    book = schemas[schemas.index_of("Books") or 0]
    assert book.entity == "book" and book.also == ("novel",)
    assert book.facets() == ("identity", "publication", "people", "reception")
    pages = next(c for c in book.columns if c.name == "page count")
    assert pages.type is ColumnType.NUMBER and pages.facet == "publication"
    assert schemas.columns_with_header("number of pages") == [(0, 6)]
    assert schemas.entities_named("movie") == [1]


# -- linking ------------------------------------------------------------------------------
def test_a_table_links_to_the_schema_of_its_rows_and_its_columns_align(
    linker: EntitySchemaLinker,
) -> None:
    link = linker.link(BOOKS, "book")
    assert link.entity == "book"
    assert [lk.entity for lk in link.links][0] == "book"
    assert link.links[0].score >= link.links[1].score
    assert link.links[0].aligned_columns == 3 and link.links[0].columns == 4
    aligned = {name: a.column for name, a in link.alignment.items()}
    # through the entity's words in front (book title → title) and same-meaning headers
    assert aligned == {"book title": "title", "author": "author", "pages": "page count"}
    assert link.alignment["pages"].via == "header" and link.alignment["pages"].score == 1.0


def test_a_column_aligns_only_with_a_schema_column_of_its_type(
    linker: EntitySchemaLinker,
) -> None:
    table = Table.parse(
        {
            "name": "books",
            "columns": [
                {"name": "title", "type": "text"},
                {"name": "pages", "type": "text"},  # page ranges ('12-40'), not a count
                {"name": "published", "type": "number"},  # a year kept as a number
            ],
        }
    )
    link = linker.link(table, "book")
    assert "pages" not in link.alignment
    assert link.alignment["published"].column == "publication date"


def test_below_the_threshold_a_table_is_not_linked(linker: EntitySchemaLinker) -> None:
    strict = EntitySchemaLinker(
        linker.schemas, linker.encoder, linker.reranker, threshold=10.0, align_min_similarity=1.0
    )
    link = strict.link(BOOKS, "book")
    assert link.entity is None and link.alignment == {}
    assert link.links and link.links[0].entity == "book"  # still shown, scored


def test_the_schema_vectors_are_cached_per_file_and_encoder(
    linker: EntitySchemaLinker, tiny_settings: Settings
) -> None:
    linker.vectors()
    cached = list((tiny_settings.home / "entity-schemas").glob("*.npy"))
    assert cached
    again = EntitySchemaLinker(
        linker.schemas,
        linker.encoder,
        linker.reranker,
        threshold=0.0,
        align_min_similarity=0.8,
        cache_dir=tiny_settings.home / "entity-schemas",
    )
    assert (again.vectors() == linker.vectors()).all()


def test_a_name_of_another_kind_of_row_contradicts_the_link(linker: EntitySchemaLinker) -> None:
    link = linker.link(BOOKS, "book")
    assert linker.contradicts(link, "film title")
    assert linker.contradicts(link, "movie")
    assert not linker.contradicts(link, "book title")  # the linked entity's own name
    assert not linker.contradicts(link, "novel")  # one of its other names
    assert not linker.contradicts(link, "work title")  # names no entity
    # a header only schemas of other domains hold (sports, film), not one the book domain
    # holds, nor one no schema holds: no new column of a table of books
    assert linker.belongs_elsewhere(link, "assists") and linker.belongs_elsewhere(
        link, "directed by"
    )
    assert not linker.belongs_elsewhere(link, "translated by")
    assert not linker.belongs_elsewhere(link, "shelf")
    assert not linker.belongs_elsewhere(TableLink(), "assists")
    assert not linker.contradicts(TableLink(), "film title")  # no link, no contradiction
    # a kind of row the table itself names is no contradiction (a book table with a film column)
    adapted = Table.parse(
        {"name": "books", "columns": [*BOOKS.model_dump()["columns"], {"name": "film rights"}]}
    )
    adapted_link = linker.link(adapted, "book")
    assert adapted_link.entity == "book"
    assert not linker.contradicts(adapted_link, "film title")


# -- the source ---------------------------------------------------------------------------
def test_an_aligned_column_gets_its_headers_and_the_schema_s_free_columns(
    linker: EntitySchemaLinker,
) -> None:
    source = EntitySchemaSource(max_add=5)
    assert isinstance(source, CandidateSource)
    link = linker.link(BOOKS, "book")
    target = BOOKS.columns[2]  # pages → page count (facet: publication)
    proposal = source.propose(ColumnContext.of(BOOKS, target, "book", link))
    # the column's own name is no rename
    assert [c.name for c in proposal.equivalent] == ["page count", "number of pages"]
    assert {c.type for c in proposal.equivalent} == {ColumnType.NUMBER}  # a rename keeps its type
    added = [(c.name, c.rank_group, c.type) for c in proposal.associated]
    # its own facet first (publication), then the rest; aligned columns never; at most 5
    assert added[:3] == [
        ("publisher", 0, ColumnType.TEXT),
        ("publication date", 0, ColumnType.TIME),
        ("edition", 0, ColumnType.TEXT),
    ]
    assert len(added) == 5 and {g for _, g, _ in added[3:]} == {1}
    assert not {"title", "author", "page count"} & {n for n, _, _ in added}
    assert proposal.typed and all(c.source == "entity-schema" for c in proposal.associated)


def test_a_header_another_column_could_take_is_no_rename(linker: EntitySchemaLinker) -> None:
    table = Table.parse(
        {
            "name": "books",
            "columns": [
                {"name": "title", "type": "text"},
                {"name": "publication date", "type": "time"},
                {"name": "award date", "type": "time"},
            ],
        }
    )
    link = linker.link(table, "book")
    assert link.alignment["publication date"].column == "publication date"
    proposal = EntitySchemaSource(max_add=5).propose(
        ColumnContext.of(table, table.columns[1], "book", link)
    )
    # 'date' is a word of 'award date': another column could take it
    assert [c.name for c in proposal.equivalent] == ["published"]


def test_a_column_that_aligns_with_nothing_gets_no_schema_names(
    linker: EntitySchemaLinker,
) -> None:
    link = linker.link(BOOKS, "book")
    proposal = EntitySchemaSource(max_add=5).propose(
        ColumnContext.of(BOOKS, BOOKS.columns[3], "book", link)  # shelf
    )
    assert proposal.equivalent == [] and proposal.associated == []
    unlinked = EntitySchemaSource(max_add=5).propose(
        ColumnContext.of(BOOKS, BOOKS.columns[0], "book")
    )
    assert unlinked.associated == []


def test_the_link_tells_a_header_of_another_column(linker: EntitySchemaLinker) -> None:
    link = linker.link(BOOKS, "book")
    assert link.alignment["pages"].column == "page count"
    # 'writer' is a header of the schema's author: another column than pages, no rename of it
    assert link.names_other_column("pages", "writer")
    assert link.names_other_column("pages", "Written_By")  # by name key
    assert not link.names_other_column("pages", "number of pages")  # its own header
    assert not link.names_other_column("pages", "leaf count")  # a name the schema lacks
    assert not link.names_other_column("shelf", "writer")  # shelf aligns with nothing
    assert not TableLink().names_other_column("pages", "writer")  # no link
    # a header of a schema column some table column aligns with names that column: no new one
    assert link.names_aligned_column("writer") and link.names_aligned_column("number of pages")
    assert not link.names_aligned_column("translated by")  # a free column of the schema
    assert not TableLink().names_aligned_column("writer")


def test_a_thesaurus_header_of_another_sense_proposes_nothing(linker: EntitySchemaLinker) -> None:
    from cta.annotations import ThesaurusEntry
    from retriever.thesaurus import ThesaurusSource, other_sense

    table = Table.parse(
        {
            "name": "books",
            "columns": [
                {"name": "title", "type": "text"},
                {"name": "author", "type": "text"},
                {"name": "publisher", "type": "text"},
            ],
        }
    )
    # A blog's publisher is whoever posts: ≡ its author, which this table holds apart.
    blog = ThesaurusEntry(
        name="publisher",
        sense="person who posts an article",
        equivalent=("poster", "author"),
        associated=("blog",),
    )
    # A writer of books: the schema's author header among its equivalents, its own sense.
    books = ThesaurusEntry(name="author", equivalent=("writer", "novelist"), associated=("genre",))
    link = linker.link(table, "book")
    assert link.alignment["publisher"].via == "header"
    publisher = ColumnContext.of(table, table.columns[2], "book", link)
    author = ColumnContext.of(table, table.columns[1], "book", link)
    assert other_sense(blog, publisher) and not other_sense(books, author)
    source = ThesaurusSource([blog, books])
    assert source.propose(publisher) == SourceProposal()  # neither renames nor new columns
    assert [c.name for c in source.propose(author).equivalent] == ["writer", "novelist"]
    # unlinked, the header's names are proposed as before
    unlinked = ColumnContext.of(table, table.columns[2], "book")
    assert not other_sense(blog, unlinked)
    assert [c.name for c in source.propose(unlinked).associated] == ["blog"]


# -- the pipeline -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def linked_pipeline(tiny_settings: Settings, schema_file: Path) -> Pipeline:
    return Pipeline.from_settings(
        tiny_settings.model_copy(
            update={"entity_schemas": str(schema_file), "entity_link_threshold": 0.0}
        )
    )


def test_the_pipeline_shows_the_link_and_each_column_s_alignment(linked_pipeline: Pipeline) -> None:
    result = linked_pipeline.perturb(BOOKS, PerturbOptions(samples=1))
    assert result.linked_entity == "book" and result.entity_links[0].entity == "book"
    aligned = {c.column: (c.aligned_to.column if c.aligned_to else None) for c in result.columns}
    assert aligned == {
        "book title": "title",
        "author": "author",
        "pages": "page count",
        "shelf": None,
    }
    report = linked_pipeline.candidates(BOOKS)
    assert report.linked_entity == "book"
    pages = next(c for c in report.columns if c.column == "pages")
    assert {c.source for c in pages.associated} >= {"entity-schema"}
    # the schema's types reach the candidates (a number column is a number)
    sold = [c for c in pages.associated if c.name == "copies sold"]
    assert sold and sold[0].type is ColumnType.NUMBER


def test_the_schema_s_add_names_come_first(linked_pipeline: Pipeline) -> None:
    """Under the association rule the linked schema's names are ranked before every other
    source's (its own facet, then the rest), whatever the judge's association says."""
    pipeline = Pipeline(
        settings=linked_pipeline.settings.model_copy(update={"add_association": 0.0}),
        retriever=linked_pipeline.retriever,
        reranker=linked_pipeline.reranker,
        dictionary=linked_pipeline.dictionary,
        judge_model=linked_pipeline.judge_model,
        sources=linked_pipeline.sources,
        linker=linked_pipeline.linker,
    )
    result = pipeline.perturb(BOOKS)
    for column in result.columns:
        groups = [0 if d.source == "entity-schema" else 1 for d in column.add]
        assert groups == sorted(groups), column


def test_with_entity_schemas_none_nothing_is_linked(tiny_settings: Settings) -> None:
    settings = tiny_settings.model_copy(update={"entity_schemas": "none"})
    assert settings.resolved_entity_schemas() is None
    pipeline = Pipeline.from_settings(settings)
    assert pipeline.linker is None
    result = pipeline.perturb(BOOKS)
    assert result.linked_entity is None and result.entity_links == []
    assert all(c.aligned_to is None for c in result.columns)
    assert all(d.source != "entity-schema" for c in result.columns for d in c.add)


def test_an_unknown_linker_is_refused_by_name(tiny_settings: Settings) -> None:
    with pytest.raises(registry.UnknownNameError, match="CTA_ENTITY_LINKER"):
        Pipeline.from_settings(tiny_settings.model_copy(update={"entity_linker": "nope"}))


# -- training (a recipe knob, off by default) ---------------------------------------------
def test_schema_pairs_teach_equivalents_and_facet_neighbours(schema_file: Path) -> None:
    from cta.training.schemas import schema_examples
    from cta.training.settings import TrainingSettings

    assert TrainingSettings().judge_train_entity_schemas is None  # off unless a recipe names it
    schemas = read_entity_schemas(schema_file)
    examples = schema_examples(schemas, 1000, "three-way", seed=0)
    pairs = {(e.entity, e.premise, e.hypothesis): (e.label, e.relation) for e in examples}
    assert pairs[("book", "author", "writer")] == ("entailment", "schema-equivalent")
    assert pairs[("book", "writer", "author")] == ("entailment", "schema-equivalent")  # both ways
    assert pairs[("book", "author", "translator")] == ("neutral", "schema-associated")
    assert pairs[("football player", "goals", "assists")] == ("neutral", "schema-associated")
    # columns of different facets are not taught as associated
    assert ("book", "author", "isbn") not in pairs and ("book", "isbn", "author") not in pairs
    # deterministic in the seed, capped per relation
    assert schema_examples(schemas, 1000, "three-way", seed=0) == examples
    capped = schema_examples(schemas, 2, "three-way", seed=0)
    assert len(capped) == 2 * 2 * 2


def test_a_header_another_column_could_take_is_not_taught_as_equivalent(tmp_path: Path) -> None:
    from cta.training.schemas import schema_examples

    (tmp_path / "schemas.jsonl").write_text(
        json.dumps(
            {
                "entity": "person",
                "domain": "people-organizations",
                "groups": [
                    {
                        "group": "life",
                        "attributes": [
                            {"name": "birth date", "type": "time", "equivalent": ["date", "born"]},
                            {"name": "death date", "type": "time", "equivalent": ["died"]},
                        ],
                    }
                ],
            }
        )
        + "\n"
    )
    examples = schema_examples(read_entity_schemas(tmp_path), 100, "three-way")
    taught = {(e.premise, e.hypothesis) for e in examples if e.relation == "schema-equivalent"}
    assert ("birth date", "born") in taught
    assert ("birth date", "date") not in taught  # 'date' is a word of 'death date'


def test_the_knob_adds_schema_pairs_to_the_training_rows_and_hashes_the_file(
    tiny_settings: Settings, schema_file: Path, tmp_path: Path
) -> None:
    from conftest import write_tiny_corpus

    from cta.training.recipe import source_hashes
    from cta.training.settings import TrainingSettings
    from cta.training.train import build_training_data

    corpus = write_tiny_corpus(tmp_path / "corpus")
    base = TrainingSettings(
        home=tiny_settings.home,
        judge_train_annotations=False,
        judge_train_corpora=[f"csv-dir:{corpus}"],
    )
    without = build_training_data(base, max_examples=60)
    with_schemas = build_training_data(
        base.model_copy(update={"judge_train_entity_schemas": str(schema_file)}), max_examples=60
    )
    relations = {e.relation for e in [*with_schemas.training, *with_schemas.validation]}
    assert {"schema-equivalent", "schema-associated"} <= relations
    assert not {e.relation for e in without.training} & {"schema-equivalent", "schema-associated"}
    hashes = source_hashes(base.model_copy(update={"judge_train_entity_schemas": str(schema_file)}))
    assert f"entity-schemas:{schema_file}" in hashes


class _FixedSource:
    """A candidate source of fixed names per column (the filters' input, not under test)."""

    name = "fixed"

    def __init__(self, equivalent: dict[str, list[str]], associated: dict[str, list[str]]):
        self.equivalent, self.associated = equivalent, associated

    def propose(self, context: ColumnContext) -> SourceProposal:
        def made(names: list[str]) -> list[Candidate]:
            return [Candidate(name=n, score=1.0, source="fixed") for n in names]

        return SourceProposal(
            equivalent=made(self.equivalent.get(context.name, [])),
            associated=made(self.associated.get(context.name, [])),
        )


def test_the_link_keeps_other_columns_names_from_the_judge(linked_pipeline: Pipeline) -> None:
    """With every name accepted by the judge, a linked table keeps from its renames the headers
    the schema holds for another column, and from its new columns the headers of a column it
    has; unlinked, the same names pass. A key of a column of names is no rename either way."""
    fixed = _FixedSource(
        equivalent={"pages": ["writer", "leaf count"], "author": ["author id", "pen name"]},
        associated={"pages": ["writer", "binding"]},
    )
    names: dict[bool, dict[str, tuple[set[str], set[str]]]] = {}
    for linked in (True, False):
        pipeline = Pipeline(
            settings=linked_pipeline.settings,
            retriever=None,
            reranker=linked_pipeline.reranker,
            dictionary=None,
            judge_model=linked_pipeline.judge_model,
            sources=[fixed],
            linker=linked_pipeline.linker if linked else None,
        )
        result = pipeline.perturb(BOOKS, PerturbOptions(rpl_threshold=0.0, add_threshold=1.0))
        assert (result.linked_entity is not None) is linked
        names[linked] = {
            c.column: ({d.name for d in c.replace}, {d.name for d in c.add})
            for c in result.columns
        }
    linked, unlinked = names[True], names[False]
    assert linked["pages"] == ({"leaf count"}, {"binding"})
    assert unlinked["pages"] == ({"writer", "leaf count"}, {"writer", "binding"})
    assert linked["author"][0] == unlinked["author"][0] == {"pen name"}
