"""``cta`` — the command line. Each sub-command lives in its own module with ``register``."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
from collections.abc import Sequence

from cta.cli._io import EXIT_USAGE, describe_error, error
from cta.cli._quiet import configure_output
from cta.table import ProblemError

log = logging.getLogger("cta.cli")

# Sub-command modules, in the order of the method (build → propose → judge → apply → serve).
_COMMANDS = (
    "setup",
    "index",
    "candidates",
    "judge",
    "perturb",
    "corpus",
    "dataset",
    "eval",
    "serve",
    "jobs",
    "review",
    "bench",
)
# Long-running services log at INFO (started, ready, each job) without -v.
_SERVICES = frozenset({"serve", "worker"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cta", description="Adversarial table perturbation (CTA): RPL and ADD columns."
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more detail on stderr: -v INFO logs and library warnings, -vv DEBUG",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _COMMANDS:
        module = importlib.import_module(f"cta.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "passes_unknown_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.unknown_arguments = unknown  # a command that starts another program passes them on
    configure_output(args.verbose + (1 if args.command in _SERVICES else 0))
    try:
        code: int = args.func(args)
    except (OSError, ProblemError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        # Unreadable input, a bad file, a port in use…: one line, not a traceback (-vv has it).
        log.debug("%s failed", args.command, exc_info=True)
        return error(describe_error(exc))
    return code


__all__ = ["EXIT_USAGE", "build_parser", "main"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
