"""BIRD in, perturbed BIRD out: the mini-dev's 500 questions through ``--format bird``.

Two actions over a git mirror of ``bird-bench/mini_dev`` (BIRD's mini-dev, CC BY-SA 4.0):

``input`` — build a BIRD input folder from the mirror: ``dev.json`` (the 500 questions of
``llm/data/mini_dev_sqlite.json`` at commit ``f2f6603``, or those of ``--databases``),
``dev_tables.json`` and ``dev_databases/<db>/database_description/<table>.csv`` made from the
dev databases' metadata (``bird_evaluation/data/dev_tables_cleaned.json`` at ``db4f2ac``:
natural names, descriptions, value descriptions, keys) by
:func:`cta.formats.bird.bird_from_metadata`, and ``dev_tables_cleaned.json`` itself (the
column statistics synthesis reads). BIRD's ``.sqlite`` files are not in the mirror: the
databases are synthesised. ``--questions N`` keeps the first N questions of each database
(the test fixture: ``tests/data/bird``).

``run`` — build the whole input in a temporary folder and run ``cta dataset perturb --format
bird --verify`` on it through its library entry point, with the real pipeline (``cta
setup``'s index and the shipped judge) or, with ``--proposer names``, a deterministic
stand-in (every column renamed/extended by a name made from its own), and report:

- gold SQL bound (share of the 500) and every unbound question with its reason;
- per kind: items, items rewritten, checks executed on every synthesis seed, the share with
  equal result sets, every failure with its reason;
- evidence: RPL items whose evidence mentions a renamed column, and the share rewritten so
  that it mentions none (the bar: 100 %);
- the RPL and ADD names drawn for one table per database, for a person to read.

Run: ``nice .venv/bin/python benchmarks/bird.py input --out DIR [--mirror PATH]
[--databases a,b] [--questions N]`` or ``nice .venv/bin/python benchmarks/bird.py run
[--mirror PATH] [--seeds 2] [--verify-seeds 3] [--kinds rpl,add,…] [--proposer
pipeline|names] [--out benchmarks/results/bird]`` → ``PREFIX.json`` and ``PREFIX.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MIRROR = Path("/work/.mirror/bird-bench+mini_dev/repo")
QUESTIONS = ("f2f6603", "llm/data/mini_dev_sqlite.json")
METADATA = ("db4f2ac", "bird_evaluation/data/dev_tables_cleaned.json")
RESULTS = Path(__file__).parent / "results"
LICENCE = """BIRD mini-dev (https://github.com/bird-bench/mini_dev), by the BIRD team
(Li et al., "Can LLM Already Serve as A Database Interface? A BIg Bench for Large-Scale
Database Grounded Text-to-SQLs", NeurIPS 2023), is released under the Creative Commons
Attribution-ShareAlike 4.0 International licence (CC BY-SA 4.0):
https://creativecommons.org/licenses/by-sa/4.0/

The files in this folder are derived from it (see README.md: what was taken, from which
commit, and how it was transformed) and are shared under the same licence.
"""


def git_show(mirror: Path, commit: str, path: str) -> bytes:
    """A file of the mirror at a commit (``git show``)."""
    git_dir = mirror if (mirror / "HEAD").is_file() and not (mirror / ".git").exists() else None
    command = ["git", "--git-dir", str(git_dir)] if git_dir else ["git", "-C", str(mirror)]
    return subprocess.run(
        [*command, "show", f"{commit}:{path}"], check=True, capture_output=True
    ).stdout


def build_input(
    mirror: Path,
    out: Path,
    databases: Sequence[str] | None = None,
    per_database: int | None = None,
) -> dict[str, Any]:
    """Write a BIRD input folder from the mirror (see the module docstring); what it holds."""
    from cta.formats.bird import bird_from_metadata, write_descriptions
    from cta.formats.spider import write_json

    questions = json.loads(git_show(mirror, *QUESTIONS))
    metadata = json.loads(git_show(mirror, *METADATA))
    wanted = list(databases) if databases else [db["name"] for db in metadata]
    kept: list[dict[str, Any]] = []
    count: Counter[str] = Counter()
    for record in questions:
        db_id = record["db_id"]
        if db_id in wanted and (per_database is None or count[db_id] < per_database):
            kept.append(record)
            count[db_id] += 1
    entries, descriptions = bird_from_metadata(metadata, wanted)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "dev.json", kept)
    write_json(out / "dev_tables.json", entries)
    for db_id, rows in descriptions.items():
        write_descriptions(out / "dev_databases", db_id, rows)
    write_json(out / "dev_tables_cleaned.json", [db for db in metadata if db["name"] in wanted])
    return {"questions": len(kept), "databases": wanted, "per_database": dict(count)}


def names_proposer(tables: Sequence[Any]) -> list[Any]:
    """A deterministic stand-in for the pipeline: every target column gets one RPL name and
    one ADD name made from its own (``client segment`` → ``client segment value`` /
    ``client segment note``), so every mentioned column is renamed or extended."""
    from cta.results import ColumnPerturbations, Decision, PerturbationResult

    def judged(column: Any) -> ColumnPerturbations:
        rpl = Decision(
            name=f"{column.name} value", type=column.type, e1=1, e2=1, source="dictionary"
        )
        add = Decision(name=f"{column.name} note", type=column.type, e1=0, e2=0, source="retriever")
        return ColumnPerturbations(column=column.name, replace=[rpl], add=[add])

    return [
        PerturbationResult(
            table_id=table.id,
            primary_entity=table.name or "",
            entity_source="given",
            columns=[judged(c) for c in table.targets()],
        )
        for table in tables
    ]


def _fixture_readme(info: dict[str, Any], command: str) -> str:
    dbs = ", ".join(
        f"`{d}` ({info['per_database'].get(d, 0)} questions)" for d in info["databases"]
    )
    return f"""# BIRD fixture (derived from BIRD's mini-dev, CC BY-SA 4.0)

A small BIRD input for the tests of `--format bird`: {dbs}.

- `dev.json` — those databases' first questions of the mini-dev's
  `llm/data/mini_dev_sqlite.json` (commit `{QUESTIONS[0]}`), every field kept
  (`question_id`, `db_id`, `question`, `evidence`, `SQL`, `difficulty`).
- `dev_tables.json` and `dev_databases/<db>/database_description/<table>.csv` — BIRD's schema
  file and description CSVs, which the mirror lacks, made from the dev databases' metadata
  (`bird_evaluation/data/dev_tables_cleaned.json`, commit `{METADATA[0]}`) by
  `cta.formats.bird.bird_from_metadata`: a column's natural name is its `original_name`
  (its identifier when it has none, as BIRD's own `dev_tables.json` does), its description
  and value description as given, foreign keys from the many-to-one links.
- `dev_tables_cleaned.json` — that metadata for these databases: the column statistics
  (sample values, ranges, null and unique fractions) databases are synthesised from.

There are no `.sqlite` files: BIRD's databases are not in the mirror, so every database is
synthesised. Made by

```bash
{command}
```

Licence: CC BY-SA 4.0, as BIRD's mini-dev (see `LICENSE`).
"""


def _input(args: argparse.Namespace) -> int:
    databases = args.databases.split(",") if args.databases else None
    info = build_input(Path(args.mirror), Path(args.out), databases, args.questions)
    if args.readme:
        command = "python benchmarks/bird.py input " + " ".join(sys.argv[2:])
        (Path(args.out) / "README.md").write_text(_fixture_readme(info, command), encoding="utf-8")
        (Path(args.out) / "LICENSE").write_text(LICENCE, encoding="utf-8")
    print(json.dumps(info))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("input", help="build a BIRD input folder from the mirror")
    build.add_argument("--mirror", default=str(MIRROR), help="git mirror of bird-bench/mini_dev")
    build.add_argument("--out", required=True)
    build.add_argument("--databases", help="comma-separated db_ids (default: all 11)")
    build.add_argument("--questions", type=int, help="the first N questions of each database")
    build.add_argument("--readme", action="store_true", help="write README.md and LICENSE")
    build.set_defaults(func=_input)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
