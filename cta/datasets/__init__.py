"""Text-to-SQL datasets through the perturbation protocol: one driver per format.

Layering: :mod:`cta.datasets` sits above :mod:`cta.apply` (sampling perturbed tables),
:mod:`cta.sql` (the format-independent SQL machinery: databases, rewriting, verification), :mod:`cta.formats` (reading and
writing each format's files) and :mod:`cta.families`; none of those imports it.

* :mod:`cta.datasets.base` — the protocol core (:func:`run_protocol`, :func:`materialise`,
  :func:`verify`), the :class:`DatasetFormat` protocol and what the drivers share;
* :mod:`cta.datasets.spider`, :mod:`cta.datasets.wikisql`, :mod:`cta.datasets.wtq`,
  :mod:`cta.datasets.bird` — the drivers (BIRD's registers itself where it lives);
* :mod:`cta.datasets.registry` — :data:`FORMATS` and :func:`perturb_dataset`, the entry point
  of ``cta dataset perturb`` and of the service's dataset jobs.
"""

from __future__ import annotations

from cta.datasets.base import (
    DatasetFiles,
    DatasetFormat,
    DatasetRequest,
    DatasetRun,
    Proposer,
    VerificationRecord,
    VerificationReport,
    materialise,
    run_protocol,
    verify,
)
from cta.datasets.bird import BIRD, bird_inputs, perturb_bird_database
from cta.datasets.registry import (
    FORMATS,
    dataset_format,
    perturb_dataset,
    register_format,
    unregister_format,
)
from cta.datasets.spider import (
    perturb_spider,
    perturb_spider_database,
    spider_database,
    spider_inputs,
)
from cta.families.model import Database, ProtocolResult, Variant
from cta.sql.examples import PerturbedExample, SqlExample

__all__ = [
    "BIRD",
    "FORMATS",
    "Database",
    "DatasetFiles",
    "DatasetFormat",
    "DatasetRequest",
    "DatasetRun",
    "PerturbedExample",
    "Proposer",
    "ProtocolResult",
    "SqlExample",
    "Variant",
    "VerificationRecord",
    "VerificationReport",
    "bird_inputs",
    "dataset_format",
    "materialise",
    "perturb_bird_database",
    "perturb_dataset",
    "perturb_spider",
    "perturb_spider_database",
    "register_format",
    "run_protocol",
    "spider_database",
    "spider_inputs",
    "unregister_format",
    "verify",
]
