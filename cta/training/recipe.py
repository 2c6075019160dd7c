"""A judge recipe file: the ``judge_train_*`` settings one judge was trained with.

The keys are fields of :class:`~cta.training.settings.TrainingSettings`, by their names
(``{"settings": {"judge_train_labels": "three-way", …}}``).

``models/judge.recipe.json`` names the shipped judge's recipe; ``cta judge train --recipe FILE``
trains it again and :func:`source_hashes` hashes every source it reads, so that a
change of training data without a retrain is caught (``tests/test_shipped_judge.py``). Paths in
a recipe are relative to the directory the command runs in (the repository root).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cta.training.settings import TrainingSettings

RECIPE_KEYS_PREFIX = "judge_train_"


class RecipeError(ValueError):
    """A recipe file that cannot be read or names a setting that is not a training knob."""


def load_recipe(path: Path) -> dict[str, Any]:
    """The recipe's settings (``judge_train_*`` fields only), checked against
    :class:`TrainingSettings`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecipeError(f"{path}: cannot read the recipe ({exc})") from None
    values = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(values, dict):
        raise RecipeError(f"{path}: expected an object with a 'settings' object")
    unknown = sorted(
        k
        for k in values
        if not k.startswith(RECIPE_KEYS_PREFIX) or k not in TrainingSettings.model_fields
    )
    if unknown:
        raise RecipeError(f"{path}: not judge training settings: {', '.join(unknown)}")
    return values


def recipe_settings(path: Path, base: TrainingSettings | None = None) -> TrainingSettings:
    """``base`` (default: the environment's training settings) with the recipe's values in
    force."""
    values = load_recipe(path)
    settings = base or TrainingSettings()
    return TrainingSettings.model_validate({**settings.model_dump(), **values})


def load_abbreviations(path: Path) -> dict[str, tuple[str, ...]]:
    """A pinned abbreviation list (``judge_train_abbreviations``): a JSON object from a full
    word or phrase to its short forms, in the order the generator draws them."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecipeError(f"{path}: cannot read the abbreviation list ({exc})") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str)
        and isinstance(v, list)
        and v
        and all(isinstance(f, str) and f for f in v)
        for k, v in data.items()
    ):
        raise RecipeError(f"{path}: expected an object of full word -> non-empty list of forms")
    return {k: tuple(v) for k, v in data.items()}


def file_sha256(path: Path) -> str:
    """The sha256 of one file, as ``sha256sum`` prints it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_sha256(root: Path, pattern: str = "*.csv") -> str:
    """One sha256 over a folder's matching files: each relative name and its file's sha256."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob(pattern), key=lambda p: p.relative_to(root).as_posix()):
        digest.update(f"{file_sha256(path)}  {path.relative_to(root).as_posix()}\n".encode())
    return digest.hexdigest()


def source_hashes(settings: TrainingSettings) -> dict[str, str]:
    """sha256 per training source: a file's own, or one over a ``csv-dir``'s CSV files."""
    hashes: dict[str, str] = {}
    if settings.judge_train_annotations:
        directory = settings.resolved_annotations_dir()
        for name in ("tables.jsonl", "thesaurus.jsonl"):
            hashes[f"annotations/{name}"] = file_sha256(directory / name)
    for spec in settings.judge_train_corpora:
        kind, _, location = spec.partition(":")
        if not location:
            hashes[spec] = _package_version(kind)
            continue
        path = Path(location)
        hashes[spec] = tree_sha256(path) if path.is_dir() else file_sha256(path)
    if settings.wordnet_dir.is_dir():  # Debian's WordNet 3.0: the lexical relations
        hashes["wordnet"] = tree_sha256(settings.wordnet_dir, "data.*")
    if settings.judge_train_abbreviations:
        path = Path(settings.judge_train_abbreviations)
        hashes[f"abbreviations:{path}"] = file_sha256(path)
    if settings.judge_train_entity_schemas:
        path = Path(settings.judge_train_entity_schemas)
        hashes[f"entity-schemas:{path}"] = file_sha256(path)
    for question_file in settings.judge_train_question_synonyms:
        path = Path(question_file)
        hashes[f"questions:{question_file}"] = file_sha256(path)
        beside = path.parent / "tables.json"
        hashes[f"questions:{beside}"] = file_sha256(beside)
    return hashes


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{name}=={version(name)}"
    except PackageNotFoundError:
        return f"{name} (not installed)"
