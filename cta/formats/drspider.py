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
Dr.Spider's scripts (``copy_pre_perturbation_predictions.py``) hard-code ``Spider-dev`` and
``q_id_spider_dev``, so a file of Spider dev questions is named ``dev`` whatever its file
name (:func:`dataset_name`).
"""

from __future__ import annotations

from collections.abc import Iterable
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
    "SPIDER_DEV_DATABASES",
    "dataset_name",
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
SPIDER_DEV_DATABASES = frozenset(
    {
        "battle_death", "car_1", "concert_singer", "course_teach", "cre_Doc_Template_Mgt",
        "dog_kennels", "employee_hire_evaluation", "flight_2", "museum_visit", "network_1",
        "orchestra", "pets_1", "poker_player", "real_estate_properties", "singer",
        "student_transcripts_tracking", "tvshow", "voter_1", "world_1", "wta_1",
    }
)  # fmt: skip
"""The databases of Spider's dev set (none of them is a training database)."""


def dataset_name(file_stem: str, db_ids: Iterable[str]) -> str:
    """The name a question file's sets take in this layout: ``dev`` when every question is
    asked on a Spider dev database (a subset of Spider dev, under any file name), else the
    file's stem."""
    ids = set(db_ids)
    return "dev" if ids and ids <= SPIDER_DEV_DATABASES else file_stem


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
