"""``cta`` — the command line. Each sub-command lives in its own module with ``register``."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import logging
import sys
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
# Commands registered by a module of another name.
_MODULE_OF = {"worker": "serve", "openapi": "serve"}
# Long-running services log at INFO (started, ready, each job) without -v.
_SERVICES = frozenset({"serve", "worker"})


def build_parser(modules: Sequence[str] = _COMMANDS) -> argparse.ArgumentParser:
    """The parser of ``cta``, with the sub-commands of ``modules`` (default: all)."""
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
    for name in modules:
        module = importlib.import_module(f"cta.cli.{name}")
        module.register(sub)
    return parser


def command_module(argv: Sequence[str]) -> str | None:
    """The module of the sub-command ``argv`` names (its first word that is not an option),
    or None when it names none: a command then imports its own module alone, not the
    libraries of every other command."""
    word = next((a for a in argv if not a.startswith("-")), None)
    if word is None:
        return None
    module = _MODULE_OF.get(word, word)
    return module if module in _COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    module = command_module(words)
    parser = build_parser(_COMMANDS if module is None else (module,))
    args, unknown = parser.parse_known_args(words)
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


def run() -> int:
    """The ``cta`` program: :func:`main`, then everything it loaded frozen for the exit.

    A command's components (the thesaurus, WordNet's index, the entity schemas, the word
    vectors' vocabulary…) are millions of small objects the process drops whole when it
    ends; frozen (:func:`gc.freeze`), the cyclic collector's passes at interpreter shutdown
    skip them instead of scanning them all: 1.3 s of a 5 s ``cta perturb`` on 2 cores.
    Only the program does this, not :func:`main`, which tests and embedders call in a
    process that goes on."""
    code = main()
    gc.freeze()
    return code


__all__ = ["EXIT_USAGE", "build_parser", "main", "run"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run())
