"""``cta bench [--only quality,speed,scale] [--quick]``: the benchmark harness.

The harness lives in ``benchmarks/`` beside the package (it is not installed with it), so this
command works from a source checkout; results go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

# The repository root: benchmarks/ sits beside cta/.
_ROOT = Path(__file__).resolve().parents[2]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="measure quality (ADVETA), speed and index scale; write benchmarks/results",
    )
    if (_ROOT / "benchmarks" / "harness.py").is_file():
        _harness().add_arguments(p)
    p.set_defaults(func=_run)


def _harness() -> Any:
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    from benchmarks import harness

    return harness


def _run(args: argparse.Namespace) -> int:
    if not (_ROOT / "benchmarks" / "harness.py").is_file():
        raise SystemExit(f"cta bench needs a source checkout: no benchmarks/ under {_ROOT}")
    # No model hub here: every model is a local folder.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    harness = _harness()
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(harness.PARTS))
    if unknown:
        raise SystemExit(
            f"cta bench: unknown part(s) {', '.join(unknown)}; choose from {', '.join(harness.PARTS)}"
        )
    results = harness.run(parts, data=args.data, quick=args.quick, results=args.results)
    for part, result in results.items():
        status = f"skipped: {result['skipped']}" if "skipped" in result else "done"
        print(f"{part}: {status}")
    print(f"summary: {args.results / 'SUMMARY.md'}")
    return 0
