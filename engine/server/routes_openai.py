"""The OpenAI endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from deltaserve.engine.server.choices import submit
from deltaserve.engine.server.chunks import ChatChunks, TextChunks
from deltaserve.engine.server.context import Serving
from deltaserve.engine.server.openai_protocol import (
    AssistantMessage,
    ChatChoice,
    ChatCompletionRequest,
    ChatCompletionResponse,
    CompletionRequest,
    CompletionResponse,
    ModelCard,
    ModelList,
    TextChoice,
    now,
    random_id,
)
from deltaserve.engine.server.openapi import error_responses, request_body
from deltaserve.engine.server.requests import read_request
from deltaserve.engine.server.streaming import event_stream, run_to_end

router = APIRouter()

# With stream: true, server-sent events: each data field one JSON chunk, the last one "[DONE]".
SSE = {"text/event-stream": {"schema": {"type": "object", "required": ["data"],
                                        "properties": {"data": {"type": "string"}}}}}
GENERATION_ERRORS = error_responses(400, 404, 413, 499, 500, 503)


@router.get("/v1/models", responses=error_responses(500))
async def models(ctx: Serving) -> ModelList:
    card = ModelCard(id=ctx.model_name, created=ctx.started, max_model_len=ctx.engine.max_model_len)
    return ModelList(data=[card])


@router.post("/v1/chat/completions", openapi_extra=request_body(ChatCompletionRequest),
             responses={200: {"model": ChatCompletionResponse, "content": SSE}, **GENERATION_ERRORS})
async def chat_completions(request: Request, ctx: Serving) -> Response:
    arrived = time.perf_counter()
    req = await read_request(request, ChatCompletionRequest, ctx)
    choices = await submit(ctx, req, [[m.for_template() for m in req.messages]], arrived)
    rid, created = random_id("chatcmpl"), now()
    if req.stream:
        return event_stream(choices, ChatChunks(rid, created, req.model, req.include_usage), ctx.metrics)
    texts = await run_to_end(request, choices, ctx.metrics)
    usage, rm = choices.usage()
    answers = [ChatChoice(index=i, message=AssistantMessage(content=text), finish_reason=s.last.finish_reason)
               for i, (text, s) in enumerate(zip(texts, choices, strict=True))]
    response = ChatCompletionResponse(id=rid, created=created, model=req.model, choices=answers, usage=usage,
                                      metrics=rm)
    return JSONResponse(response.model_dump())


@router.post("/v1/completions", openapi_extra=request_body(CompletionRequest),
             responses={200: {"model": CompletionResponse, "content": SSE}, **GENERATION_ERRORS})
async def completions(request: Request, ctx: Serving) -> Response:
    arrived = time.perf_counter()
    req = await read_request(request, CompletionRequest, ctx)
    choices = await submit(ctx, req, req.prompts(), arrived)
    rid, created = random_id("cmpl"), now()
    if req.stream:
        return event_stream(choices, TextChunks(rid, created, req.model, req.include_usage), ctx.metrics)
    texts = await run_to_end(request, choices, ctx.metrics)
    usage, rm = choices.usage()
    answers = [TextChoice(index=i, text=text, finish_reason=s.last.finish_reason)
               for i, (text, s) in enumerate(zip(texts, choices, strict=True))]
    response = CompletionResponse(id=rid, created=created, model=req.model, choices=answers, usage=usage,
                                  metrics=rm)
    return JSONResponse(response.model_dump())
