"""`cta dataset` (placeholder until implemented)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("dataset", help="(not yet implemented)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise SystemExit("cta dataset: not implemented yet")
