"""The operator endpoints: GET /health, GET /stats (engine stats as JSON), GET /metrics (Prometheus)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel

from deltaserve.engine.server.context import Serving
from deltaserve.engine.server.errors import error_response
from deltaserve.engine.server.openapi import error_responses
from deltaserve.errors import APIError, EngineStepError

SCRAPE_STATS_TIMEOUT_S = 5.0  # a scrape waits this long for fresh engine stats, then serves the last ones

router = APIRouter()


class Health(BaseModel):
    status: Literal["ok"] = "ok"


STATS = {"description": "The engine's counters and gauges (EngineStats), requests in flight, step failures",
         "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True}}}}
PROMETHEUS = {"description": "Prometheus text exposition format",
              "content": {"text/plain": {"schema": {"type": "string"}}}}


@router.get("/health", responses={200: {"model": Health}, **error_responses(503)})
async def health(ctx: Serving) -> Response:
    if not ctx.async_engine.worker_alive:
        return error_response(APIError(503, "engine worker is not running", type="server_error"), ctx.metrics)
    return JSONResponse(Health().model_dump())


@router.get("/stats", responses={200: STATS, **error_responses(500)})
async def stats(ctx: Serving) -> JSONResponse:
    body = _as_dict(await ctx.async_engine.stats())
    body["requests_in_flight"] = ctx.async_engine.num_unfinished
    body["step_failures"] = ctx.async_engine.step_failures
    return JSONResponse(body)


@router.get("/metrics", response_class=PlainTextResponse, responses={200: PROMETHEUS})
async def prometheus_metrics(ctx: Serving) -> Response:
    engine = ctx.async_engine
    try:
        engine.latest_stats = await asyncio.wait_for(engine.stats(), timeout=SCRAPE_STATS_TIMEOUT_S)
    except (TimeoutError, asyncio.TimeoutError, EngineStepError):
        pass  # a slow step: serve the last snapshot
    return Response(ctx.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def _as_dict(obj: Any) -> dict:
    if isinstance(obj, BaseModel):
        return obj.model_dump()
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    if isinstance(obj, dict):
        return dict(obj)
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
