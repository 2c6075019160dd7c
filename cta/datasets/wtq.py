"""The WikiTableQuestions driver: CSV tables and TSV questions through the protocol.

WTQ questions come with answers, not SQL, so no column is known to be "mentioned":
every column of a table is a target, and all questions of a table share its perturbed
table ``csv/…/<n>_<kind>_s<seed>.csv`` (answers stay valid: RPL renames headers, ADD
inserts a column, no cell of the original columns changes).
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from cta.apply.sample import sample_perturbations
from cta.datasets.base import (
    CtaOnlyFormat,
    DatasetFiles,
    DatasetRequest,
    DatasetRun,
    cta_only,
    summarise,
    write_mappings,
)
from cta.formats.wtq import WtqDataset, load_wtq, write_csv, write_tsv

__all__ = ["WTQ", "WtqFormat", "WtqMapping"]


class WtqMapping(BaseModel):
    """One table under one perturbation (WTQ has no SQL: every column is a target)."""

    context: str
    kind: str
    seed: int
    perturbed_context: str
    mapping: dict[str, str]
    unperturbed: dict[str, str]


class WtqFormat(CtaOnlyFormat):
    """The WTQ driver (:class:`~cta.datasets.base.DatasetFormat`): RPL and ADD.

    Writes the original and perturbed CSVs, per kind and seed (or ``augment``)
    ``<name>_….tsv`` and ``mappings.jsonl`` (one line per table × kind × seed).
    """

    name = "wtq"

    def load(self, files: DatasetFiles) -> WtqDataset:
        return load_wtq(files.tables, files.questions)

    def perturb(self, dataset: WtqDataset, request: DatasetRequest) -> DatasetRun:
        return _perturb(dataset, request)


WTQ = WtqFormat()


def _perturb(dataset: WtqDataset, request: DatasetRequest) -> DatasetRun:
    started = time.perf_counter()
    kinds, seeds, out = cta_only(request.kinds), request.seeds, request.out_dir
    contexts = list(dataset.tables)
    request.say(f"proposer: {len(contexts)} tables")
    results = request.proposer([dataset.tables[c] for c in contexts]) if contexts else []
    if len(results) != len(contexts):
        raise ValueError(f"proposer returned {len(results)} results for {len(contexts)} tables")
    files: list[str] = []
    mappings: list[WtqMapping] = []
    moved: dict[tuple[str, str, int], str] = {}
    for context, proposal in zip(contexts, results, strict=True):
        table = dataset.tables[context]
        write_csv(out / context, table)
        files.append(context)
        for kind in kinds:
            for seed in seeds:
                [pt] = sample_perturbations(table, proposal, kind, 1, seed, values=request.values)
                target = context
                if pt.mapping:
                    target = f"{context.removesuffix('.csv')}_{kind}_s{seed}.csv"
                    write_csv(out / target, pt.table)
                    files.append(target)
                moved[(context, kind, seed)] = target
                mappings.append(
                    WtqMapping(
                        context=context,
                        kind=kind,
                        seed=seed,
                        perturbed_context=target,
                        mapping=dict(pt.mapping),
                        unperturbed=dict(pt.unperturbed),
                    )
                )
    if dataset.records:
        groups: dict[str, list[dict[str, str]]] = {}
        for seed in seeds:
            if request.augment:
                rows = []
                for record in dataset.records:
                    rows.append(record)
                    for kind in kinds:
                        rows.append({**record, "context": moved[(record["context"], kind, seed)]})
                groups[f"{dataset.name}_augmented_s{seed}"] = rows
            else:
                for kind in kinds:
                    groups[f"{dataset.name}_{kind}_s{seed}"] = [
                        {**r, "context": moved[(r["context"], kind, seed)]} for r in dataset.records
                    ]
        for stem, rows in groups.items():
            write_tsv(out / f"{stem}.tsv", dataset.header, rows)
            files.append(f"{stem}.tsv")
    write_mappings(out, mappings, files)
    changed = sum(1 for m in mappings if m.mapping)
    counts = (len(mappings), changed, 0, len(mappings) - changed, changed)
    seconds = {"total": round(time.perf_counter() - started, 3)}
    return summarise(out, len(dataset.records), counts, files, seconds)
