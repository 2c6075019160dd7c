"""What ``cta eval --out DIR`` writes: JSON, items, a markdown report with a plot, and the
gold/pred/database layout test-suite-sql-eval reads, so every number can be cross-checked.

``DIR/eval.json`` (the :class:`~cta.evaluation.scoring.EvalReport`), ``DIR/items.jsonl``
(one line per question: prediction, EX, EM, status), ``DIR/report.md`` and
``DIR/pre_post.png`` (per kind: pre vs post, mean ± std over seeds), and
``DIR/test-suite/``: ``gold/<set>.txt`` (``SQL<TAB>db_id`` per line), ``pred/<set>.txt`` (one
SQL per line, same order), ``database`` and ``tables.json`` (links to the perturbed folder's)
and ``run.sh`` with test-suite-sql-eval's command line for each set. For a BIRD folder,
``DIR/bird/`` instead: per set ``<set>_gold.sql`` (``SQL<TAB>db_id``), ``predict_<set>.json``
(BIRD's predictions object), ``<set>.jsonl`` (``difficulty`` a line), ``dev_databases`` (a link)
and ``run.sh`` with the command line of BIRD's ``evaluation_ex.py``.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from cta.evaluation.predictions import BIRD_SEPARATOR
from cta.evaluation.sets import BIRD, EvalDirectory
from cta.formats.spider import gold_line
from cta.formats.spider_grammar import evaluator_problem, spider_tables_of
from cta.reports import EvalReport, ItemResult, KindSummary, Scores, Spread

__all__ = ["markdown", "plot", "write_bird", "write_report", "write_test_suite"]


def _one_line(sql: str | None) -> str:
    return " ".join((sql or "").split())


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _spread(s: Spread | None) -> str:
    if s is None or s.mean is None:
        return "—"
    return f"{100 * s.mean:.1f} ± {100 * (s.std or 0):.1f}"


def _metrics(report: EvalReport) -> list[str]:
    """The figures this report has: EX/EM for a parser, linking for the probe."""
    found = []
    for name in ("ex", "em", "linking_recall", "linking_precision"):
        if any(getattr(s, name) is not None for s in report.original.values()):
            found.append(name)
    return found


_LABELS = {
    "ex": "EX",
    "em": "EM",
    "linking_recall": "link recall",
    "linking_precision": "link precision",
}


def markdown(report: EvalReport, plot_file: str | None = "pre_post.png") -> str:
    """The report a person reads: originals, per kind (mean ± std), per set."""
    metrics = _metrics(report)
    lines = [
        f"# `cta eval` — {report.model}",
        "",
        f"Folder `{report.directory}`. Pre = the original questions of the examples a set holds, "
        "on the original database; post = the perturbed records on their perturbed databases "
        "(Dr.Spider). Figures in %; per kind mean ± sample std over seeds. Relative robustness: "
        "among the pairs right before, the share still right after.",
        "",
    ]
    if report.databases:
        lines += [f"**Databases: {report.databases}.**", ""]
    if report.database_folders:
        folders = ", ".join(f"`{f}`" for f in report.database_folders)
        lines += [f"Databases read from {folders}.", ""]
    if report.convention == "bird":
        lines += [
            "EX as BIRD computes it: the result sets of prediction and gold compared as sets "
            "(`set(pred) == set(gold)`); no EM.",
            "",
        ]
    if report.not_evaluated:
        lines += [
            "## Not evaluated",
            "",
            "These sets are left out and scored nowhere below:",
            "",
            "| set | why |",
            "|---|---|",
            *(f"| {stem} | {why} |" for stem, why in report.not_evaluated.items()),
            "",
        ]
    lines += [
        "## Original questions",
        "",
        "| dataset | questions | " + " | ".join(_LABELS[m] for m in metrics) + " |",
        "|---|---:|" + "---:|" * len(metrics),
    ]
    for name, scores in report.original.items():
        cells = " | ".join(_pct(getattr(scores, m)) for m in metrics)
        lines.append(f"| {name} | {scores.n} | {cells} |")
    lines += _difficulty_lines(report, metrics)
    lines += ["", "## Per kind", ""]
    header = ["kind", "seeds"]
    for m in metrics:
        header += [f"pre {_LABELS[m]}", f"post {_LABELS[m]}", "abs. drop", "rel. drop"]
    robust = [m for m in ("ex", "em") if m in metrics]
    header += [f"robustness {_LABELS[m]}" for m in robust]
    lines += ["| " + " | ".join(header) + " |", "|---|---:|" + "---:|" * (len(header) - 2)]
    for k in report.kinds:
        row = [f"{k.name} {k.kind}", str(len(k.seeds))]
        for m in metrics:
            row += [
                _spread(k.pre.get(m)),
                _spread(k.post.get(m)),
                _spread(k.absolute_drop.get(m)),
                _spread(k.relative_drop.get(m)),
            ]
        row += [_spread(k.relative_robustness.get(m)) for m in robust]
        lines.append("| " + " | ".join(row) + " |")
    if plot_file:
        lines += ["", f"![pre vs post per kind]({plot_file})"]
    lines += ["", "## Per set", ""]
    header = ["set", "kind", "seed", "pairs"]
    for m in metrics:
        header += [f"pre {_LABELS[m]}", f"post {_LABELS[m]}"]
    lines += ["| " + " | ".join(header) + " |", "|---|---|---:|---:|" + "---:|" * 2 * len(metrics)]
    for r in report.sets:
        row = [r.set, r.kind, str(r.seed), str(r.n)]
        for m in metrics:
            row += [_pct(getattr(r.pre, m)), _pct(getattr(r.post, m))]
        lines.append("| " + " | ".join(row) + " |")
    for stem in report.not_evaluated:
        lines.append(f"| {stem} | not evaluated |" + " |" * (len(header) - 2))
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(report.statuses.items()))
    lines += ["", f"Item statuses: {statuses}."]
    if report.skipped_files:
        lines += ["", f"Not evaluation sets (mixed kinds): {', '.join(report.skipped_files)}."]
    return "\n".join(lines) + "\n"


def _difficulty_lines(report: EvalReport, metrics: Sequence[str]) -> list[str]:
    """Per difficulty: the original questions, and each set's pre and post (BIRD)."""
    if not report.original_by_difficulty:
        return []
    levels = list(dict.fromkeys(d for by in report.original_by_difficulty.values() for d in by))

    def cells(scores: Scores | None) -> str:
        if scores is None:
            return "—"
        return " / ".join(_pct(getattr(scores, m)) for m in metrics) + f" ({scores.n})"

    label = " / ".join(_LABELS[m] for m in metrics)
    lines = [
        "",
        "## Per difficulty",
        "",
        f"{label} in %, questions in brackets.",
        "",
        "| set | " + " | ".join(levels) + " |",
        "|---|" + "---:|" * len(levels),
    ]
    for name, by in report.original_by_difficulty.items():
        lines.append(f"| {name} original | " + " | ".join(cells(by.get(d)) for d in levels) + " |")
    for r in report.sets:
        for part, by in (("pre", r.pre_by_difficulty), ("post", r.post_by_difficulty)):
            if by:
                row = " | ".join(cells(by.get(d)) for d in levels)
                lines.append(f"| {r.set} {part} | {row} |")
    several = [k for k in report.kinds if len(k.seeds) > 1 and k.post_by_difficulty]
    if several:
        lines += [
            "",
            f"Per kind over seeds, {label} mean ± std:",
            "",
            "| kind | " + " | ".join(levels) + " |",
            "|---|" + "---:|" * len(levels),
        ]
        for k in several:
            for part, spreads in (
                ("pre", k.pre_by_difficulty),
                ("post", k.post_by_difficulty),
            ):
                row = " | ".join(
                    " / ".join(_spread(spreads.get(d, {}).get(m)) for m in metrics) for d in levels
                )
                lines.append(f"| {k.name} {k.kind} {part} | {row} |")
    return lines


def plot(report: EvalReport, path: str | Path) -> Path | None:
    """Per kind, pre vs post (mean ± std over seeds) of each metric; None without kinds."""
    metrics = [m for m in _metrics(report) if m != "linking_precision"] or _metrics(report)
    if not report.kinds or not metrics:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds: Sequence[KindSummary] = report.kinds
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(max(4.0, 1.2 * len(kinds) + 2) * len(metrics), 3.6), squeeze=False
    )
    x = list(range(len(kinds)))
    for ax, metric in zip(axes[0], metrics, strict=True):
        for offset, (label, part) in ((-0.2, ("pre", "pre")), (0.2, ("post", "post"))):
            means = [
                100 * (getattr(k, part).get(metric, Spread(mean=None, std=None)).mean or 0)
                for k in kinds
            ]
            stds = [
                100 * (getattr(k, part).get(metric, Spread(mean=None, std=None)).std or 0)
                for k in kinds
            ]
            ax.bar([i + offset for i in x], means, 0.4, yerr=stds, capsize=3, label=label)
        ax.set_xticks(x, [k.kind for k in kinds], rotation=30 if len(kinds) > 4 else 0)
        ax.set_ylabel(f"{_LABELS[metric]} (%)")
        ax.set_ylim(0, 105)
        ax.set_title(f"{report.model}: {_LABELS[metric]}")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _link(target: Path, link: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target.resolve())


def _unreadable(
    group: Sequence[ItemResult], directory: EvalDirectory, cache: dict[str, dict[str, set[str]]]
) -> str | None:
    """Why the official evaluator would stop on this set (its first unreadable gold line and
    how many there are), or None when it reads every line."""
    problems = []
    for it in group:
        if it.db_id not in cache:
            cache[it.db_id] = spider_tables_of(directory.entries[it.db_id])
        problem = evaluator_problem(it.gold, cache[it.db_id])
        if problem is not None:
            problems.append((it.position, problem))
    if not problems:
        return None
    line, problem = problems[0]
    return (
        f"{len(problems)} of {len(group)} gold lines are outside the official evaluator's "
        f"grammar (first: line {line + 1}, {problem})"
    )


def write_test_suite(out: Path, directory: EvalDirectory, items: Sequence[ItemResult]) -> list[str]:
    """gold/pred files per set and links to the databases, as test-suite-sql-eval reads them."""
    root = out / "test-suite"
    (root / "gold").mkdir(parents=True, exist_ok=True)
    by_set: dict[str, list[ItemResult]] = {}
    for it in items:
        by_set.setdefault(it.set, []).append(it)
    has_pred = any(it.pred is not None for it in items)
    if has_pred:
        (root / "pred").mkdir(exist_ok=True)
    files = []
    commands = [
        "#!/bin/sh",
        "# test-suite-sql-eval's evaluation.py (its checkout: $TS), every set it can read;",
        "# a set with a gold line outside its grammar is skipped (it would stop on that line)",
        "set -e",
    ]
    grammar: dict[str, dict[str, set[str]]] = {}
    for stem, group in by_set.items():
        group = sorted(group, key=lambda it: it.position)
        gold = "".join(gold_line(it.gold, it.db_id) for it in group)
        (root / "gold" / f"{stem}.txt").write_text(gold, encoding="utf-8")
        files.append(f"test-suite/gold/{stem}.txt")
        if has_pred:
            pred = "".join(f"{_one_line(it.pred) or 'SELECT'}\n" for it in group)
            (root / "pred" / f"{stem}.txt").write_text(pred, encoding="utf-8")
            files.append(f"test-suite/pred/{stem}.txt")
            skip = _unreadable(group, directory, grammar)
            if skip is not None:
                commands.append(f"echo {shlex.quote(f'skip {stem}: {skip}')}")
                continue
            commands.append(
                'python3 "$TS/evaluation.py" --etype all --db database --table tables.json '
                f"--gold gold/{shlex.quote(stem)}.txt --pred pred/{shlex.quote(stem)}.txt"
            )
    # the databases the sets name, one folder each (the layout the evaluator opens:
    # database/<db_id>/*.sqlite), and their schemas in one tables.json
    db_ids = sorted({it.db_id for it in items})
    if (root / "database").is_symlink():
        (root / "database").unlink()
    (root / "database").mkdir(exist_ok=True)
    for db_id in db_ids:
        _link(directory.database(db_id).parent, root / "database" / db_id)
    (root / "tables.json").unlink(missing_ok=True)
    entries = [directory.entries[d] for d in db_ids]
    (root / "tables.json").write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")
    (root / "run.sh").write_text("\n".join(commands) + "\n", encoding="utf-8")
    os.chmod(root / "run.sh", 0o755)
    return [*files, "test-suite/database", "test-suite/tables.json", "test-suite/run.sh"]


def write_report(
    out_dir: str | Path,
    report: EvalReport,
    items: Sequence[ItemResult],
    directory: EvalDirectory,
) -> list[str]:
    """Write everything under ``out_dir``; the files written, relative to it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    with (out / "items.jsonl").open("w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it.model_dump(mode="json"), ensure_ascii=False) + "\n")
    files = ["eval.json", "items.jsonl"]
    image = plot(report, out / "pre_post.png")
    if image is not None:
        files.append("pre_post.png")
    text = markdown(report, image.name if image is not None else None)
    (out / "report.md").write_text(text, encoding="utf-8")
    files.append("report.md")
    if directory.layout == BIRD:
        files += write_bird(out, directory, items)
    else:
        files += write_test_suite(out, directory, items)
    return files


def write_bird(out: Path, directory: EvalDirectory, items: Sequence[ItemResult]) -> list[str]:
    """gold, predictions and difficulties per set and a link to the databases, as BIRD's
    ``evaluation_ex.py`` reads them."""
    root = out / "bird"
    root.mkdir(parents=True, exist_ok=True)
    by_set: dict[str, list[ItemResult]] = {}
    for it in items:
        by_set.setdefault(it.set, []).append(it)
    files = []
    commands = [
        "#!/bin/sh",
        "# BIRD's evaluation/evaluation_ex.py (its checkout: $BIRD), one run per set",
        "set -e",
    ]
    has_pred = any(it.pred is not None for it in items)
    for stem, group in by_set.items():
        group = sorted(group, key=lambda it: it.position)
        gold = "".join(f"{_one_line(it.gold)}\t{it.db_id}\n" for it in group)
        (root / f"{stem}_gold.sql").write_text(gold, encoding="utf-8")
        levels = "".join(json.dumps({"difficulty": it.difficulty}) + "\n" for it in group)
        (root / f"{stem}.jsonl").write_text(levels, encoding="utf-8")
        files += [f"bird/{stem}_gold.sql", f"bird/{stem}.jsonl"]
        if not has_pred:
            continue
        pred = {str(i): f"{it.pred or ''}{BIRD_SEPARATOR}{it.db_id}" for i, it in enumerate(group)}
        (root / f"predict_{stem}.json").write_text(
            json.dumps(pred, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        files.append(f"bird/predict_{stem}.json")
        commands.append(
            'python3 "$BIRD/evaluation/evaluation_ex.py" --db_root_path dev_databases/ '
            f"--predicted_sql_path predict_{shlex.quote(stem)}.json "
            f"--ground_truth_path {shlex.quote(stem)}_gold.sql "
            f"--diff_json_path {shlex.quote(stem)}.jsonl --sql_dialect SQLite "
            f"--output_log_path {shlex.quote(stem)}.log"
        )
    folders = directory.database_folders()
    if len(folders) == 1:
        _link(folders[0], root / "dev_databases")
        files.append("bird/dev_databases")
    (root / "run.sh").write_text("\n".join(commands) + "\n", encoding="utf-8")
    os.chmod(root / "run.sh", 0o755)
    return [*files, "bird/run.sh"]
