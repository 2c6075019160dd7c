"""Provenance: the manifest every output folder carries, so a result traces back to the exact
tool, model and inputs that made it.

``manifest.json`` holds the project's name, version and commit (with whether the checkout had
uncommitted changes), the command, the settings in force (secrets left out), the content
hashes of the judge and of the retriever index, the seeds, and the sha256 of every input file
and of every file written. Hashes of a folder (the judge's, the index's) are over its files'
relative paths and contents, so a copy elsewhere hashes the same. No clock time is recorded:
the same input and seed give the same manifest, byte for byte.

:func:`disagreements` compares manifests (say, of the sets ``cta eval`` is asked to score
together) on what decides the perturbations — the judge and the index.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from cta.settings import Settings

__all__ = [
    "MANIFEST",
    "PROVENANCE_KEYS",
    "build_manifest",
    "disagreements",
    "file_sha256",
    "read_manifest",
    "tool_info",
    "tree_sha256",
    "write_manifest",
]

MANIFEST = "manifest.json"
PROVENANCE_KEYS = ("judge", "index")
"""What makes two runs' perturbations comparable: the same judge and the same index."""
_SECRET_FIELDS = frozenset({"api_keys", "api_key", "database_url", "service_url"})
_REPO = Path(__file__).resolve().parent.parent


def file_sha256(path: str | Path) -> str:
    """sha256 of one file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_sha256(path: str | Path) -> str | None:
    """Content hash of a file or of a folder (its files' relative paths and sha256, sorted);
    None when ``path`` does not exist."""
    root = Path(path)
    if root.is_file():
        return file_sha256(root)
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(root).as_posix()}\0{file_sha256(file)}\n".encode())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def tool_info() -> dict[str, Any]:
    """The project's name, version, commit and whether its checkout has local changes
    (commit and dirty are null outside a git checkout)."""
    try:
        version = metadata.version("cta-perturb")
    except metadata.PackageNotFoundError:
        version = None
    commit, dirty = None, None
    if (_REPO / ".git").exists():
        try:
            commit = subprocess.run(
                ["git", "-C", str(_REPO), "rev-parse", "HEAD"],
                capture_output=True, text=True, check=True, timeout=10,
            ).stdout.strip() or None  # fmt: skip
            status = subprocess.run(
                ["git", "-C", str(_REPO), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True, text=True, check=True, timeout=10,
            ).stdout  # fmt: skip
            dirty = bool(status.strip())
        except (OSError, subprocess.SubprocessError):
            commit, dirty = None, None
    return {"name": "cta-perturb", "version": version, "commit": commit, "dirty": dirty}


def _settings(settings: Settings) -> dict[str, Any]:
    data = settings.model_dump(mode="json")
    return {k: v for k, v in sorted(data.items()) if k not in _SECRET_FIELDS and k != "home"}


def _component(location: str | None) -> dict[str, Any]:
    """A judge or index by where it is: a local path gets its content hash; a hub name only
    its name."""
    if location is None:
        return {"location": None, "sha256": None}
    path = Path(location)
    return {"location": str(location), "sha256": tree_sha256(path) if path.exists() else None}


def build_manifest(
    command: str,
    settings: Settings,
    inputs: Mapping[str, str | Path | None],
    seeds: Sequence[int] = (),
    uses_models: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a run: ``inputs`` by role (``tables``, ``questions``…; a folder is
    hashed as a tree), ``uses_models`` False when no judge or index took part (the structural
    families alone)."""
    manifest: dict[str, Any] = {
        "tool": tool_info(),
        "command": command,
        "settings": _settings(settings),
        "judge": _component(settings.resolved_judge_model() if uses_models else None),
        "index": _component(str(settings.resolved_index_dir()) if uses_models else None),
        "seeds": list(seeds),
        "inputs": {
            role: {"path": str(path), "sha256": tree_sha256(path)}
            for role, path in inputs.items()
            if path is not None
        },
    }
    if extra:
        manifest.update(extra)
    return manifest


def write_manifest(
    out_dir: str | Path, manifest: Mapping[str, Any], outputs: Iterable[str] = ()
) -> Path:
    """Write ``manifest.json`` in ``out_dir`` with the sha256 of each of ``outputs`` (paths
    relative to ``out_dir``; a folder hashed as a tree)."""
    out = Path(out_dir)
    data = dict(manifest)
    data["outputs"] = {name: tree_sha256(out / name) for name in sorted(set(outputs))}
    path = out / MANIFEST
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The manifest of an output folder, or None when it has none (or it is unreadable)."""
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def disagreements(manifests: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Where manifests (by what they describe) differ on the judge or the index: one line
    per key that differs, naming the values; empty when they agree. A run that used no
    judge or index (structural families only) agrees with any."""
    out = []
    for key in PROVENANCE_KEYS:
        values: dict[str, list[str]] = {}
        for name, manifest in manifests.items():
            part = manifest.get(key) or {}
            digest = part.get("sha256") if isinstance(part, dict) else None
            if digest:
                values.setdefault(str(digest)[:12], []).append(name)
        if len(values) > 1:
            described = "; ".join(f"{v} ({', '.join(sorted(n))})" for v, n in values.items())
            out.append(f"{key}: {described}")
    return out
