"""Batch runs at scale: many tables through the pipeline, in-process or on Ray, with a ledger
in the output folder so that a rerun resumes and writes every item exactly once.

The pipeline knows nothing of Ray: :mod:`cta.scale.runner` cuts the items into shards and
maps a worker over them; :mod:`cta.scale.ray_backend` (the optional ``ray`` extra) does that
mapping with a Ray Data actor pool.
"""

from cta.scale.items import Item, read_items
from cta.scale.ledger import ItemOutcome, Ledger, LedgerMismatchError
from cta.scale.runner import (
    SHARD_SIZE,
    ProposalError,
    RunReport,
    ShardMapper,
    ShardPerturber,
    in_process,
    ledger_proposer,
    perturb_corpus,
    run_shards,
)

__all__ = [
    "SHARD_SIZE",
    "Item",
    "ItemOutcome",
    "Ledger",
    "LedgerMismatchError",
    "ProposalError",
    "RunReport",
    "ShardMapper",
    "ShardPerturber",
    "in_process",
    "ledger_proposer",
    "perturb_corpus",
    "read_items",
    "run_shards",
]
