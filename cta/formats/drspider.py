"""Dr.Spider's folder layout (Chang et al., 2023), as its released ``data/`` folder has it.

One folder per perturbation set, named for what it perturbs (``DB_…`` the database,
``NLQ_…`` the question), holding ``questions_pre_perturbation.json`` and
``questions_post_perturbation.json`` (the records before and after, paired by position),
``gold_pre_perturbation.sql`` and ``gold_post_perturbation.sql`` (``SQL<TAB>db_id``) and, for
a database perturbation, ``tables_post_perturbation.json`` with
``database_post_perturbation/<db_id>/<db_id>.sqlite``. The unperturbed databases live once
in ``Spider-<name>/`` (``questions.json``, ``tables.json``, ``databases/``); a question
perturbation is run on them.

This project writes that layout with ``cta dataset perturb --layout drspider`` (set folders
``DB_<kind>_s<seed>`` and ``NLQ_question-synonym_s<seed>``, each record also carrying
``q_id_spider_<name>``, its position in the input file) and reads it back in ``cta eval``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "DATABASES",
    "POST_DATABASES",
    "POST_GOLD",
    "POST_QUESTIONS",
    "POST_TABLES",
    "PRE_GOLD",
    "PRE_QUESTIONS",
    "QUESTION_KINDS",
    "is_drspider",
    "original_folder",
    "question_id_key",
    "set_folder",
    "set_folders",
]

PRE_QUESTIONS = "questions_pre_perturbation.json"
POST_QUESTIONS = "questions_post_perturbation.json"
PRE_GOLD = "gold_pre_perturbation.sql"
POST_GOLD = "gold_post_perturbation.sql"
POST_TABLES = "tables_post_perturbation.json"
POST_DATABASES = "database_post_perturbation"
DATABASES = "databases"
QUESTION_KINDS = frozenset({"question-synonym"})
"""Kinds that perturb only the question (Dr.Spider's ``NLQ_`` sets)."""


def set_folder(kind: str, seed: int) -> str:
    """The folder of one kind and seed: ``DB_rpl_s0``, ``NLQ_question-synonym_s1``."""
    prefix = "NLQ" if kind in QUESTION_KINDS else "DB"
    return f"{prefix}_{kind}_s{seed}"


def original_folder(name: str) -> str:
    """The folder of the unperturbed questions and databases: ``Spider-dev``."""
    return f"Spider-{name}"


def question_id_key(name: str) -> str:
    """The record key pairing a perturbed question with its original: ``q_id_spider_dev``."""
    return f"q_id_spider_{name}"


def set_folders(root: Path) -> list[Path]:
    """The perturbation set folders under ``root`` (sorted by name)."""
    return sorted(p.parent for p in root.glob(f"*/{POST_QUESTIONS}"))


def is_drspider(root: Path) -> bool:
    """Whether ``root`` is laid out as Dr.Spider's ``data/`` folder."""
    return bool(set_folders(root)) and any(root.glob("Spider-*/tables.json"))
