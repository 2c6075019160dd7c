"""Families that change names or add a column through the CTA machinery: Dr.Spider's schema
abbreviation, schema evolution's table rename, MT-Teql's insert-column and Spider-Syn's
question synonyms.

Each takes its names from the judge or the pipeline, never from a fixed list of outputs:
an abbreviation is kept only when the judge reads it as equivalent to the full name (RPL
rule, both directions); a table's new name is one of the RPL names the pipeline proposes
for the database's table names; an inserted column is one of a table's ADD names; a
question's schema word is replaced by one of its column's RPL names.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cta.apply.sample import candidate_pools
from cta.families.base import FamilyContext, NotApplicable, carried_origin
from cta.families.model import DbEdit, Key
from cta.results import PerturbationResult
from cta.seeding import seeded_rng
from cta.sql.database import (
    ColumnRef,
    NewColumn,
    SchemaPerturbation,
    SqlSchema,
    SqlTable,
    perturb_schema,
    sqlite_fold,
)
from cta.sql.identifiers import identifier_style, sql_identifier
from cta.table import Column, ColumnType, Table
from cta.words import ABBREVIATIONS, name_words

__all__ = [
    "Abbreviation",
    "EquivalenceJudge",
    "InsertColumn",
    "Proposals",
    "QuestionSynonym",
    "TableRename",
    "abbreviations",
    "styled_identifier",
]

EquivalenceJudge = Callable[[Sequence[tuple[str | None, str, str]]], list[bool]]
"""(entity, name, other name) pairs → is each pair equivalent (the judge's RPL rule)?"""


class Proposals:
    """The pipeline's judged candidates, asked once per table and remembered."""

    def __init__(self, proposer: Callable[[Sequence[Table]], list[PerturbationResult]]) -> None:
        self._proposer = proposer
        self._seen: dict[str, PerturbationResult] = {}

    def of(self, tables: Sequence[Table], keys: Sequence[str]) -> list[PerturbationResult]:
        """Results for ``tables`` (``keys`` name them, e.g. ``db/table``), asked once each."""
        missing = [(k, t) for k, t in zip(keys, tables, strict=True) if k not in self._seen]
        if missing:
            results = self._proposer([t for _, t in missing])
            for (k, _), r in zip(missing, results, strict=True):
                self._seen[k] = r
        return [self._seen[k] for k in keys]


# -- abbreviation ----------------------------------------------------------------------------------
# Short forms an identifier can carry: letters (and spaces between words); the table's written
# forms with punctuation (``no.``, ``#``, ``%``) are for headers, not schema identifiers.
_SCHEMA_FORM = re.compile(r"[a-z]+(?: [a-z]+)*")


def _schema_forms(full: str) -> list[str]:
    """The short forms of ``full`` in :data:`cta.words.ABBREVIATIONS` an identifier can carry."""
    return [s for s in ABBREVIATIONS.get(full, ()) if _SCHEMA_FORM.fullmatch(s)]


_VOWELS = set("aeiouy")


def _truncation(word: str) -> str | None:
    """A clipped form of a long word, as schema designers clip (``location`` → ``loc``,
    ``stadium`` → ``stad``): the word up to the consonant that closes its first syllable
    (3 or 4 letters); None for short words or when the clip is a word of its own."""
    if len(word) < 7 or not word.isalpha():
        return None
    for n in (3, 4):
        clip = word[:n]
        if clip[-1] not in _VOWELS and any(ch in _VOWELS for ch in clip[:-1]):
            return clip
    return None


def abbreviations(name: str) -> list[str]:
    """Abbreviated forms of a natural column name, most conventional first (each differs
    from ``name`` in at least one word; multi-word phrases are matched first)."""
    words = [w.lower() for w in name_words(name)]
    if not words:
        return []
    out: list[str] = []
    phrase = " ".join(words)
    for full in ABBREVIATIONS:
        if " " in full and full in phrase:
            out.extend(phrase.replace(full, s) for s in _schema_forms(full))
    options: list[list[str]] = []
    for word in words:
        alts = _schema_forms(word)
        if not alts and word not in ("id", "ids"):
            clip = _truncation(word)
            alts = [clip] if clip else []
        options.append(alts)
    # one word abbreviated at a time, then every word that can be
    for i, alts in enumerate(options):
        for alt in alts:
            out.append(" ".join(words[:i] + [alt] + words[i + 1 :]))
    if sum(1 for alts in options if alts) > 1:
        out.append(" ".join(alts[0] if alts else w for w, alts in zip(words, options, strict=True)))
    seen: set[str] = set()
    unique = []
    for cand in out:
        if cand != phrase and cand not in seen:
            seen.add(cand)
            unique.append(cand)
    return unique


def styled_identifier(natural: str, table: SqlTable, taken: set[str]) -> str | None:
    """``natural`` as an identifier in the style of ``table``'s, or None when it clashes."""
    ident = sql_identifier(natural, identifier_style([c.name for c in table.columns]))
    return None if sqlite_fold(ident) in taken else ident


@dataclass
class Abbreviation:
    """Dr.Spider's schema-abbreviation: every column a gold query mentions whose name has an
    abbreviation the judge reads as equivalent gets one (seeded choice among them)."""

    judge: EquivalenceJudge
    kind: str = "abbreviation"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        rng = seeded_rng(seed, ctx.db_id, self.kind)
        asks: list[tuple[str | None, str, str]] = []
        where: list[tuple[SqlTable, str, str]] = []
        for table in ctx.schema.tables:
            entity = ctx.natural(table.name)
            for column in table.columns:
                key = (sqlite_fold(table.name), sqlite_fold(column.name))
                if key not in ctx.usage.columns:
                    continue
                natural = ctx.natural(table.name, column.name)
                for cand in abbreviations(natural):
                    asks.append((entity, natural, cand))
                    where.append((table, column.name, cand))
        if not asks:
            raise NotApplicable("no mentioned column has an abbreviation")
        accepted: dict[tuple[str, str], list[str]] = {}
        for (table, column_name, cand), ok in zip(where, self.judge(asks), strict=True):
            if ok:
                accepted.setdefault((table.name, column_name), []).append(cand)
        if not accepted:
            raise NotApplicable(
                f"the judge accepted none of the {len(asks)} abbreviations of mentioned columns"
            )
        changes: dict[str, tuple[NewColumn, ...]] = {}
        mapping: dict[str, dict[str, str]] = {}
        labels: dict[Key, str] = {}
        for table in ctx.schema.tables:
            taken = {sqlite_fold(c.name) for c in table.columns}
            new_columns = []
            for column in table.columns:
                options = accepted.get((table.name, column.name))
                new_name = None
                if options:
                    cand = rng.choice(options)
                    new_name = styled_identifier(cand, table, taken)
                if new_name is None:
                    new_columns.append(NewColumn(column.name, column.type, source=column.name))
                    continue
                taken.add(sqlite_fold(new_name))
                new_columns.append(NewColumn(new_name, column.type, source=column.name, label=cand))
                mapping.setdefault(table.name, {})[column.name] = new_name
                labels[(sqlite_fold(table.name), sqlite_fold(new_name))] = cand
            if table.name in mapping:
                changes[table.name] = tuple(new_columns)
        perturbation = SchemaPerturbation(changes)
        schema = perturb_schema(ctx.schema, perturbation)
        column_map = {
            ColumnRef(t, old): new for t, renames in mapping.items() for old, new in renames.items()
        }
        edit = DbEdit(
            schema=schema,
            operation="columns abbreviated: "
            + "; ".join(f"{t}.{o} → {n}" for t, m in mapping.items() for o, n in m.items()),
            labels=labels,
            mapping=mapping,
            column_map=column_map,
        )
        edit.origin = carried_origin(ctx.schema, schema, edit)
        return edit


# -- table rename ------------------------------------------------------------------------------------
def _names_table(ctx: FamilyContext, targets: Sequence[str]) -> Table:
    """The database's table names as the columns of one table (its name: the database's),
    so the pipeline proposes and judges equivalent table names in their domain."""
    return Table(
        name=ctx.db_id.replace("_", " "),
        columns=[Column(name=ctx.natural(t.name), type=ColumnType.TEXT) for t in ctx.schema.tables],
        target_columns=list(targets),
    )


@dataclass
class TableRename:
    """Schema evolution: every table a gold query names is renamed to one of the RPL names
    the pipeline proposes for it (seeded choice); queries follow."""

    proposals: Proposals
    kind: str = "table-rename"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        used = [t for t in ctx.schema.tables if sqlite_fold(t.name) in ctx.usage.tables]
        if not used:
            raise NotApplicable("no gold query names a table")
        # every table a target (the memo is shared with question-synonym: same request)
        names = _names_table(ctx, [ctx.natural(t.name) for t in ctx.schema.tables])
        [result] = self.proposals.of([names], [f"{ctx.db_id}/<tables>"])
        pools = candidate_pools(names, result, "rpl")
        rng = seeded_rng(seed, ctx.db_id, self.kind)
        taken = {sqlite_fold(t.name) for t in ctx.schema.tables}
        style = identifier_style([t.name for t in ctx.schema.tables])
        table_map: dict[str, str] = {}
        labels: dict[Key, str] = {}
        named = {sqlite_fold(t.name) for t in used}
        for i, sql_table in enumerate(ctx.schema.tables):
            if sqlite_fold(sql_table.name) not in named:
                continue  # only the tables a gold query names are renamed
            pool = [d.name for d in pools.get(i, [])]
            rng.shuffle(pool)
            for natural in pool:
                ident = sql_identifier(natural, style)
                if sqlite_fold(ident) not in taken:
                    taken.add(sqlite_fold(ident))
                    table_map[sql_table.name] = ident
                    labels[(sqlite_fold(ident), "")] = natural
                    break
        if not table_map:
            raise NotApplicable("the pipeline proposed no free equivalent name for any table")
        schema = SqlSchema(tuple(_renamed_table(t, table_map) for t in ctx.schema.tables))
        edit = DbEdit(
            schema=schema,
            operation="tables renamed: " + "; ".join(f"{o} → {n}" for o, n in table_map.items()),
            labels=labels,
            mapping={"<tables>": dict(table_map)},
            table_map=table_map,
        )
        edit.origin = carried_origin(ctx.schema, schema, edit)
        return edit


def _renamed_table(table: SqlTable, table_map: dict[str, str]) -> SqlTable:
    fks = tuple(
        fk.model_copy(update={"ref_table": table_map.get(fk.ref_table, fk.ref_table)})
        for fk in table.foreign_keys
    )
    return dataclasses.replace(table, name=table_map.get(table.name, table.name), foreign_keys=fks)


# -- insert column --------------------------------------------------------------------------------
@dataclass
class InsertColumn:
    """MT-Teql's insert-column: one has-a column (an ADD name the pipeline proposes for some
    column of a table) added after that column, with generated values; queries unchanged
    but for ``SELECT *``, spelled out."""

    proposals: Proposals
    kind: str = "insert-column"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        keys = [f"{ctx.db_id}/{t.name}" for t in ctx.schema.tables]
        results = self.proposals.of(ctx.tables, keys)
        options: list[tuple[int, int, str, ColumnType]] = []
        for t, (table, result) in enumerate(zip(ctx.tables, results, strict=True)):
            for i, pool in sorted(candidate_pools(table, result, "add").items()):
                for d in pool:
                    options.append((t, i, d.name, d.type))
        if not options:
            raise NotApplicable("the pipeline proposed no ADD column for any table")
        rng = seeded_rng(seed, ctx.db_id, self.kind)
        rng.shuffle(options)
        for t, i, natural, col_type in options:
            sql_table = ctx.schema.tables[t]
            ident = styled_identifier(
                natural, sql_table, {sqlite_fold(c.name) for c in sql_table.columns}
            )
            if ident is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident):
                continue
            template = sql_table.columns[i].name
            new_columns = [NewColumn(c.name, c.type, source=c.name) for c in sql_table.columns]
            new_columns.insert(
                i + 1, NewColumn(ident, col_type, source=None, template=template, label=natural)
            )
            perturbation = SchemaPerturbation({sql_table.name: tuple(new_columns)})
            schema = perturb_schema(ctx.schema, perturbation)
            edit = DbEdit(
                schema=schema,
                operation=f"column {ident} ({natural}) inserted into {sql_table.name} after {template}",
                labels={(sqlite_fold(sql_table.name), sqlite_fold(ident)): natural},
                mapping={sql_table.name: {template: ident}},
                perturbation=perturbation,
            )
            edit.origin = carried_origin(ctx.schema, schema, edit)
            return edit
        raise NotApplicable("every proposed ADD name clashes with a column")


# -- question synonyms ------------------------------------------------------------------------------
RESERVED = frozenset({"id", "age", "name", "year"})
"""Schema words Spider-Syn leaves as they are (its paper, §3)."""


@dataclass
class QuestionSynonym:
    """Spider-Syn: schema words in the question replaced by synonyms, schema and SQL as they
    are. A column name (or table name) the question spells out is replaced by one of the
    RPL names the pipeline accepted for it (seeded choice); reserved words stay."""

    proposals: Proposals
    kind: str = "question-synonym"

    def plan(self, ctx: FamilyContext, seed: int) -> DbEdit:
        keys = [f"{ctx.db_id}/{t.name}" for t in ctx.schema.tables]
        results = self.proposals.of(ctx.tables, keys)
        synonyms: dict[str, list[str]] = {}
        for table, result in zip(ctx.tables, results, strict=True):
            for i, pool in candidate_pools(table, result, "rpl").items():
                phrase = " ".join(w.lower() for w in name_words(table.columns[i].name))
                if not phrase or phrase in RESERVED:
                    continue
                for d in pool:
                    cand = " ".join(w.lower() for w in name_words(d.name))
                    if cand and cand != phrase:
                        synonyms.setdefault(phrase, [])
                        if cand not in synonyms[phrase]:
                            synonyms[phrase].append(cand)
        names = _names_table(ctx, [ctx.natural(t.name) for t in ctx.schema.tables])
        [result] = self.proposals.of([names], [f"{ctx.db_id}/<tables>"])
        for i, pool in candidate_pools(names, result, "rpl").items():
            phrase = " ".join(w.lower() for w in name_words(names.columns[i].name))
            for d in pool:
                cand = " ".join(w.lower() for w in name_words(d.name))
                if phrase and cand and cand != phrase and phrase not in RESERVED:
                    synonyms.setdefault(phrase, [])
                    if cand not in synonyms[phrase]:
                        synonyms[phrase].append(cand)
        if not synonyms:
            raise NotApplicable("the pipeline accepted no synonym for any column or table name")
        # one pass, longest phrase first at each position: "home city" wins over "city",
        # and a replacement is never matched again
        phrases = sorted(synonyms, key=lambda p: (-len(p), p))
        pattern = re.compile(
            r"(?<!\w)(?:"
            + "|".join("(" + r"\s+".join(map(re.escape, p.split())) + r")(s|es)?" for p in phrases)
            + r")(?!\w)",
            re.IGNORECASE,
        )

        def rewrite(question: str) -> str | None:
            rng = seeded_rng(seed, ctx.db_id, self.kind, question)
            chosen: dict[str, str] = {}

            def swap(match: re.Match[str]) -> str:
                k = next(i for i in range(len(phrases)) if match.group(2 * i + 1) is not None)
                phrase = phrases[k]
                if phrase not in chosen:
                    chosen[phrase] = rng.choice(synonyms[phrase])
                text = chosen[phrase]
                if match.group(2 * k + 2) and not text.endswith("s"):
                    text += "s"
                if match.group(0)[:1].isupper():
                    text = text[:1].upper() + text[1:]
                return text

            out = pattern.sub(swap, question)
            return out if chosen else None

        return DbEdit(
            schema=ctx.schema,
            operation="question words replaced by synonyms",
            question=rewrite,
        )
