"""Other layouts of a perturbed Spider dataset, made from the one the Spider driver writes.

* ``drspider`` — Dr.Spider's ``data/`` folder (:mod:`cta.formats.drspider`): a folder per set
  with its pre/post questions and gold files, a database perturbation's tables and databases
  beside them, the unperturbed ones in ``Spider-<name>/``.
* ``hf`` — a Hugging Face dataset repository: ``data/<set>.parquet`` per set, a dataset card
  ``README.md`` whose YAML header has a ``configs:`` block (one config per kind, one split per
  seed; no loading script), the licence and the manifest, ``tables.json`` and the databases
  zipped beside (``databases.zip``).

Both are written from a finished default-layout folder (``source``), moving its databases
rather than copying where a database belongs to one place only.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cta.datasets.spider import question_text
from cta.formats.drspider import (
    DATABASES,
    POST_DATABASES,
    POST_GOLD,
    POST_QUESTIONS,
    POST_TABLES,
    PRE_GOLD,
    PRE_QUESTIONS,
    QUESTION_KINDS,
    dataset_name,
    original_folder,
    question_id_key,
    set_folder,
)
from cta.formats.spider import gold_line, write_json
from cta.table import InvalidTableError

__all__ = ["LAYOUTS", "PARQUET_TYPES", "write_drspider", "write_hf"]

LAYOUTS = ("cta", "drspider", "hf")
_SET = re.compile(r"^(?P<name>.+)_(?P<kind>[a-z][a-z-]*)_s(?P<seed>\d+)$")


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _sets(source: Path, name: str) -> list[tuple[str, str, int, list[dict[str, Any]]]]:
    """(stem, kind, seed, records) of every per-kind set of ``source`` (not the augmented
    training files), in file-name order."""
    out = []
    for path in sorted(source.glob(f"{name}_*_s*.json")):
        match = _SET.match(path.stem)
        if match is None or match["name"] != name or match["kind"] == "augmented":
            continue
        out.append((path.stem, match["kind"], int(match["seed"]), _read(path)))
    return out


def _gold(records: Sequence[Mapping[str, Any]]) -> str:
    return "".join(gold_line(str(r["query"]), str(r["db_id"])) for r in records)


def _copy_db(source: Path, db_id: str, target_dir: Path, move: bool) -> None:
    src, dst = source / "database" / db_id, target_dir / db_id
    if dst.exists():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    if move:
        shutil.move(str(src), str(dst))
    else:
        shutil.copytree(src, dst)


def write_drspider(source: Path, out: Path, name: str, as_name: str | None = None) -> list[str]:
    """Dr.Spider's layout of the default-layout folder ``source`` (sets ``<name>_…``) in
    ``out``, the sets named ``as_name`` there (``Spider-<as_name>/``,
    ``q_id_spider_<as_name>``; default :func:`~cta.formats.drspider.dataset_name`: ``dev``
    for Spider dev questions); the paths written (relative to ``out``)."""
    entries = {e["db_id"]: e for e in _read(source / "tables.json")}
    originals = _read(source / f"{name}_original.json")
    if as_name is None:
        as_name = dataset_name(name, (r["db_id"] for r in originals))
    qid = question_id_key(as_name)
    pre_by_index = {r["source_index"]: {**r, qid: r["source_index"]} for r in originals}
    original_ids = sorted({r["db_id"] for r in originals})
    sets = _sets(source, name)
    if not sets:
        raise InvalidTableError("no_sets", f"{source}: no perturbed sets to lay out")
    written: list[str] = []
    # every database a set's post questions name, and which sets name each
    uses: dict[str, int] = {}
    for _, _, _, records in sets:
        for db_id in {r["db_id"] for r in records}:
            uses[db_id] = uses.get(db_id, 0) + 1
    base = out / original_folder(as_name)
    write_json(base / "questions.json", [pre_by_index[i] for i in sorted(pre_by_index)])
    write_json(base / "tables.json", [entries[d] for d in original_ids])
    for db_id in original_ids:
        _copy_db(source, db_id, base / DATABASES, move=False)
    written.append(original_folder(as_name))
    for _, kind, seed, records in sets:
        folder = out / set_folder(kind, seed)
        post = [{**r, qid: r["source_index"]} for r in records]
        pre = [pre_by_index[r["source_index"]] for r in records]
        write_json(folder / POST_QUESTIONS, post)
        write_json(folder / PRE_QUESTIONS, pre)
        (folder / POST_GOLD).write_text(_gold(post), encoding="utf-8")
        (folder / PRE_GOLD).write_text(_gold(pre), encoding="utf-8")
        if kind not in QUESTION_KINDS:
            db_ids = sorted({r["db_id"] for r in post})
            write_json(folder / POST_TABLES, [entries[d] for d in db_ids])
            for db_id in db_ids:
                own = db_id not in original_ids and uses.get(db_id) == 1
                _copy_db(source, db_id, folder / POST_DATABASES, move=own)
        written.append(folder.name)
    return written


def _parquet_rows(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Columns of one set: the fields every consumer reads, and the whole record as JSON
    (nested parses, tokens) so nothing is lost."""
    columns: dict[str, list[Any]] = {k: [] for k in PARQUET_TYPES}
    for r in records:
        columns["db_id"].append(r["db_id"])
        columns["question"].append(question_text(r))
        columns["query"].append(r["query"])
        columns["kind"].append(r.get("kind"))
        columns["seed"].append(r.get("seed"))
        columns["source_index"].append(r.get("source_index"))
        columns["evaluator_reads"].append(r.get("evaluator_reads"))
        columns["evaluator_problem"].append(r.get("evaluator_problem"))
        columns["record"].append(json.dumps(r, ensure_ascii=False, sort_keys=True))
    return columns


#: the Parquet columns and their types (a column whose every value is null keeps its type)
PARQUET_TYPES = {
    "db_id": "string",
    "question": "string",
    "query": "string",
    "kind": "string",
    "seed": "int64",
    "source_index": "int64",
    "evaluator_reads": "bool",
    "evaluator_problem": "string",
    "record": "string",
}


def _write_parquet(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(name, pa.type_for_alias(t)) for name, t in PARQUET_TYPES.items()])
    table = pa.table(_parquet_rows(records), schema=schema)
    # no wall-clock metadata, a fixed writer: the same records give the same bytes
    pq.write_table(table, path, compression="zstd", store_schema=False)


def _zip_databases(source: Path, target: Path) -> None:
    """``source/database`` zipped with fixed timestamps and order (reproducible bytes)."""
    files = sorted(p for p in (source / "database").rglob("*") if p.is_file())
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for file in files:
            info = zipfile.ZipInfo(
                f"database/{file.relative_to(source / 'database').as_posix()}",
                date_time=(1980, 1, 1, 0, 0, 0),
            )
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, file.read_bytes())


HF_LICENCE = "cc-by-sa-4.0"


def _card(name: str, sets: Sequence[tuple[str, str, int, int]], manifest: Mapping[str, Any]) -> str:
    """The dataset card: YAML header (licence, configs), then what is where."""
    by_kind: dict[str, list[tuple[int, str]]] = {}
    for stem, kind, seed, _ in sets:
        by_kind.setdefault(kind, []).append((seed, stem))
    lines = ["---", f"license: {HF_LICENCE}", "configs:"]
    lines += [
        "- config_name: original",
        "  data_files:",
        f"  - split: {name}",
        f"    path: data/{name}_original.parquet",
    ]
    for kind in sorted(by_kind):
        lines += [f"- config_name: {kind}", "  data_files:"]
        for seed, stem in sorted(by_kind[kind]):
            lines += [f"  - split: seed_{seed}", f"    path: data/{stem}.parquet"]
    lines += ["---", ""]
    counts = "\n".join(
        f"| `{kind}` | {seed} | {n} | `data/{stem}.parquet` |" for stem, kind, seed, n in sets
    )
    tool = manifest.get("tool", {})
    body = f"""# Perturbed Spider `{name}` sets (cta)

Schema perturbations of the Spider `{name}` questions made by `cta dataset perturb`
({tool.get("name")} {tool.get("version")}, commit `{tool.get("commit")}`): per kind and seed
one Parquet file of question records whose gold SQL was rewritten for the perturbed
database. Load a kind with `datasets.load_dataset("<this repo>", "<kind>")`; each seed is a
split (`seed_0`, …), the unperturbed questions are the config `original`.

Columns: `db_id` (the perturbed database), `question`, `query` (gold SQL), `kind`, `seed`,
`source_index` (the position of the original question: pairs pre and post),
`evaluator_reads` / `evaluator_problem` (whether the official Spider evaluator parses the
gold query, and why not), `record` (the whole Spider record as JSON, parsed `sql` and tokens
included).

`tables.json` holds the schema of every database (original and perturbed);
`databases.zip` the SQLite files (`database/<db_id>/<db_id>.sqlite`).

| kind | seed | questions | file |
|---|---|---|---|
{counts}

## Licence

Spider (Yu et al., 2018) is released under CC BY-SA 4.0; these derived sets are too.

## Provenance

`manifest.json` beside this card: the tool's version and commit, the settings in force,
the judge's and index's content hashes, the seeds and the sha256 of every input file.
"""
    return "\n".join(lines) + body


def write_hf(source: Path, out: Path, name: str, manifest: Mapping[str, Any]) -> list[str]:
    """A Hugging Face dataset repository of the default-layout folder ``source`` in ``out``;
    the paths written (relative to ``out``)."""
    sets = _sets(source, name)
    if not sets:
        raise InvalidTableError("no_sets", f"{source}: no perturbed sets to lay out")
    _write_parquet(
        out / "data" / f"{name}_original.parquet", _read(source / f"{name}_original.json")
    )
    summary = []
    for stem, kind, seed, records in sets:
        _write_parquet(out / "data" / f"{stem}.parquet", records)
        summary.append((stem, kind, seed, len(records)))
    shutil.copyfile(source / "tables.json", out / "tables.json")
    _zip_databases(source, out / "databases.zip")
    (out / "README.md").write_text(_card(name, summary, manifest), encoding="utf-8")
    return ["README.md", "data", "tables.json", "databases.zip"]
