"""What the CLI writes on stderr: quiet by default, ``-v`` for INFO logs, ``-vv`` for DEBUG.

Quiet (no ``-v``) means: our own warnings and errors only. The libraries under the pipeline
are chatty on every load — gensim's lifecycle dicts and sentence-transformers' model paths
(INFO logs), transformers' load reports and "Loading weights" bars, NLTK's warning that
Debian's WordNet has no multilingual data — none of which a person running ``cta perturb``
can act on. With ``-v`` the INFO logs and library warnings come back; ``-vv`` adds DEBUG logs,
library INFO logs and the loading bars.

When stderr is not a terminal (a log file, a CI job), progress bars redraw at most every
:data:`PIPED_BAR_INTERVAL` seconds instead of many times a second, so a long ``cta setup``
leaves a few lines of progress, not thousands of carriage returns.

:func:`configure_output` is called once per process, before any command imports a model
library: transformers and tqdm read the environment variables set here when first imported.
Variables a person set themselves are kept.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

# Seconds between two redraws of a progress bar when stderr is not a terminal.
PIPED_BAR_INTERVAL = 30

# Libraries whose INFO logs are noise at -v (gensim's lifecycle dicts, urllib3, filelock…).
_CHATTY_LOGGERS = (
    "gensim",
    "sentence_transformers",
    "transformers",
    "huggingface_hub",
    "urllib3",
    "filelock",
    "httpx",
    "httpcore",
    "faiss",
    "alembic",
    "sqlalchemy",
)

# Warnings raised inside these packages are hidden unless -v.
_LIBRARY_WARNINGS = (
    r"(nltk|transformers|torch|sentence_transformers|gensim|huggingface_hub|faiss|sklearn)(\..*)?$"
)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_level(verbosity: int) -> int:
    """Root log level for a ``-v`` count: WARNING, INFO (``-v``), DEBUG (``-vv``)."""
    if verbosity <= 0:
        return logging.WARNING
    return logging.INFO if verbosity == 1 else logging.DEBUG


def configure_output(verbosity: int, stderr_is_tty: bool | None = None) -> None:
    """Set up logging, warnings and progress bars for a CLI run at this verbosity."""
    if stderr_is_tty is None:
        stderr_is_tty = _isatty(sys.stderr)
    level = log_level(verbosity)
    root = logging.getLogger()
    if root.handlers:  # a second run in one process (tests): only the level changes
        root.setLevel(level)
    else:
        logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    library_level = logging.DEBUG if verbosity >= 2 else logging.WARNING
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(library_level)

    # NLTK warns on every WordNet load that Debian's files have no multilingual data: true,
    # and irrelevant here (CTA reads English synsets only).
    warnings.filterwarnings(
        "ignore", message="The multilingual functions are not available", category=UserWarning
    )
    if verbosity <= 0:
        warnings.filterwarnings("ignore", module=_LIBRARY_WARNINGS)

    transformers_level = {0: "error", 1: "warning"}.get(verbosity, "info")
    _setdefault_env("TRANSFORMERS_VERBOSITY", transformers_level)
    if verbosity <= 0:
        _setdefault_env("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if verbosity < 2:
        _setdefault_env("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' "Loading weights"
    if not stderr_is_tty:
        _setdefault_env("TQDM_MININTERVAL", str(PIPED_BAR_INTERVAL))
    _configure_loaded_transformers(transformers_level, bars=verbosity >= 2)


def _configure_loaded_transformers(level: str, bars: bool) -> None:
    """Apply the same settings to transformers when it is already imported (tests, embedding)."""
    if "transformers" not in sys.modules:
        return
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity({"error": 40, "warning": 30, "info": 20}[level])
    if bars:
        hf_logging.enable_progress_bar()
    else:
        hf_logging.disable_progress_bar()


def _setdefault_env(name: str, value: str) -> None:
    if name not in _user_env:
        os.environ[name] = value


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


# Variables set before this module configured anything: the user's, never overridden.
_user_env = frozenset(
    name
    for name in (
        "TRANSFORMERS_VERBOSITY",
        "TRANSFORMERS_NO_ADVISORY_WARNINGS",
        "HF_HUB_DISABLE_PROGRESS_BARS",
        "TQDM_MININTERVAL",
    )
    if name in os.environ
)
