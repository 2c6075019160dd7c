"""``cta bench [--only quality,speed,scale] [--quick]``: runs the benchmark harness.

The harness is its own entry point (``python -m benchmarks.harness``, in ``benchmarks/`` beside
the package, not installed with it): this command starts it in a child interpreter with the
checkout on its path and its arguments as given, so nothing in ``cta`` imports ``benchmarks``
(the top layer of the import contract). It needs a source checkout; results go to
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# The repository root: benchmarks/ sits beside cta/.
_ROOT = Path(__file__).resolve().parents[2]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="measure quality (ADVETA), speed and index scale; write benchmarks/results "
        "(python -m benchmarks.harness; `cta bench --help` lists its options)",
        add_help=False,  # --help is the harness's
    )
    # Every argument is the harness's: main() hands over what cta's parser does not know.
    p.set_defaults(func=_run, passes_unknown_arguments=True)


def _run(args: argparse.Namespace) -> int:
    if not (_ROOT / "benchmarks" / "harness.py").is_file():
        raise SystemExit(f"cta bench needs a source checkout: no benchmarks/ under {_ROOT}")
    # No model hub here: every model is a local folder.
    # The checkout on the child's path (not its working directory: a relative --results or
    # --data still means the caller's).
    path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
        "TRANSFORMERS_OFFLINE": os.environ.get("TRANSFORMERS_OFFLINE", "1"),
        "TOKENIZERS_PARALLELISM": os.environ.get("TOKENIZERS_PARALLELISM", "false"),
    }
    command = [sys.executable, "-m", "benchmarks.harness", *args.unknown_arguments]
    return subprocess.run(command, env=env, check=False).returncode
