"""``POST /v1/perturb`` and ``POST /v1/judge``: the engine, batched across concurrent requests.

A table whose estimated cost (:func:`cta.pipeline.estimate_pairs`) is over
``max_request_pairs`` is refused before it is queued (422 ``max_request_pairs``: a batch job
takes it). While a route awaits its answer it watches its client: when the client has left,
the request is cancelled — taken out of the queue, or its engine call stopped once no
client of it remains.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Request

from cta.results import PerturbationResult
from service.auth import caller
from service.errors import ServiceProblem, invalid, location
from service.limits import LimitExceeded, check_pair_limits, check_table_limits
from service.routes import problems
from service.schemas import JudgeRequest, JudgeResponse, PerturbRequest
from service.settings import ServiceSettings

router = APIRouter(tags=["engine"], dependencies=[Depends(caller)])

_ERRORS = problems(400, 401, 413, 415, 422, 429, 503)

#: how often an awaiting route asks whether its client is still there
DISCONNECT_POLL_SECONDS = 0.25

T = TypeVar("T")


def check_request_budget(cost: int, settings: ServiceSettings) -> None:
    """Raise a 422 ``max_request_pairs`` (at ``body.table``) when a table's estimated judge
    pairs are over the budget of one request."""
    if cost > settings.max_request_pairs:
        raise invalid(
            location("body", "table"),
            "max_request_pairs",
            f"this table needs an estimated {cost} judge pairs; max_request_pairs = "
            f"{settings.max_request_pairs} per request. Fewer columns or target_columns "
            "make it smaller; a batch job (POST /v1/jobs) takes it as it is",
        )


async def until_client_leaves(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` while polling the client's connection; when the client has left,
    cancel ``work`` (the batcher drops or stops the request) and answer 499."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_SECONDS)
            if done:
                return task.result()
            if await request.is_disconnected():
                task.cancel()
                raise ServiceProblem(
                    499,
                    "client_closed_request",
                    "the client closed the connection before the answer was ready",
                )
    finally:
        if not task.done():
            task.cancel()  # this route was cancelled itself (shutdown)


@router.post(
    "/v1/perturb",
    summary="RPL and ADD names for every target column of a table",
    responses=_ERRORS,
)
async def perturb(body: PerturbRequest, request: Request) -> PerturbationResult:
    """The primary entity used (given or predicted) and, per target column, the judged
    ``replace`` (RPL) and ``add`` (ADD) names with their entailment scores ``e1``/``e2`` and
    source. With ``options.samples = k``: k perturbed tables of each kind, every target column
    perturbed once per table (ADVETA protocol, seeded), each with its old → new mapping.
    A table over the per-request budget (``max_request_pairs`` estimated judge pairs) is
    refused with 422; send it as a batch job. Also served at ``/perturb``."""
    settings = request.app.state.settings
    try:
        check_table_limits(body.table, settings)
    except LimitExceeded as exc:
        raise exc.within(location("body", "table")) from None
    batcher = request.app.state.batcher
    cost = batcher.host.estimate_pairs(body.table)
    check_request_budget(cost, settings)
    result: PerturbationResult = await until_client_leaves(
        request, batcher.perturb(body.table, body.options, cost=cost)
    )
    return result


# The short path of the contract; the same operation, kept out of the schema.
router.add_api_route(
    "/perturb", perturb, methods=["POST"], include_in_schema=False, response_model=None
)


@router.post(
    "/v1/judge",
    summary="Bidirectional entailment scores and verdicts of column pairs",
    responses=_ERRORS,
)
async def judge(body: JudgeRequest, request: Request) -> JudgeResponse:
    """Scores ``e1`` (target ⇒ candidate), ``e2`` (candidate ⇒ target) and the single-pair
    verdict (RPL / ADD / NONE) for each pair, in order — as ``cta judge``."""
    try:
        check_pair_limits(body.pairs, request.app.state.settings)
    except LimitExceeded as exc:
        raise exc.within("body") from None
    batcher = request.app.state.batcher
    scores = await until_client_leaves(
        request, batcher.judge(body.pairs, body.rpl_threshold, body.add_threshold)
    )
    return JudgeResponse(scores=scores)
