"""``POST /v1/perturb`` and ``POST /v1/judge``: the engine, batched across concurrent requests."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from cta.results import PerturbationResult
from service.auth import caller
from service.limits import check_pair_limits, check_table_limits
from service.routes import problems
from service.schemas import JudgeRequest, JudgeResponse, PerturbRequest

router = APIRouter(tags=["engine"], dependencies=[Depends(caller)])

_ERRORS = problems(401, 413, 422, 429, 503)


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
    Also served at ``/perturb``."""
    check_table_limits(body.table, request.app.state.settings)
    result: PerturbationResult = await request.app.state.batcher.perturb(body.table, body.options)
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
    check_pair_limits(body.pairs, request.app.state.settings)
    batcher = request.app.state.batcher
    scores = await batcher.judge(body.pairs, body.rpl_threshold, body.add_threshold)
    return JudgeResponse(scores=scores)
