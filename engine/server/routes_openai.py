"""The OpenAI endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models[/{id}] (which
Anthropic's SDK reads too)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.choices import submit, submit_chat
from deltaserve.engine.server.chunks import ChatChunks, TextChunks
from deltaserve.engine.server.context import Serving, ServingContext
from deltaserve.engine.server.openai_protocol import (
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
from deltaserve.engine.server.requests import check_model, read_request
from deltaserve.engine.server.streaming import event_stream, run_to_end

router = APIRouter()

# With stream: true, server-sent events: each data field one JSON chunk, the last one "[DONE]".
SSE = {"text/event-stream": {"schema": {"type": "object", "required": ["data"],
                                        "properties": {"data": {"type": "string"}}}}}
GENERATION_ERRORS = error_responses(400, 404, 413, 499, 500, 503)


def _card(ctx: ServingContext, name: str) -> ModelCard:
    created_at = datetime.fromtimestamp(ctx.started, timezone.utc).isoformat().replace("+00:00", "Z")
    window = ctx.engine.max_model_len
    return ModelCard(id=name, created=ctx.started, max_model_len=window, display_name=name,
                     created_at=created_at, max_input_tokens=window, max_tokens=ctx.limits.max_tokens)


@router.get("/v1/models", responses=error_responses(500))
async def models(ctx: Serving) -> ModelList:
    return ModelList(data=[_card(ctx, ctx.model_name)], first_id=ctx.model_name, last_id=ctx.model_name)


@router.get("/v1/models/{model_id:path}", responses=error_responses(404, 500))
async def model(model_id: str, ctx: Serving) -> ModelCard:
    # `:path`: hub ids hold a slash (Qwen/Qwen2.5-...), which the SDK puts in the path as it is
    check_model(model_id, ctx)
    return _card(ctx, model_id)


@router.post("/v1/chat/completions", openapi_extra=request_body(ChatCompletionRequest),
             responses={200: {"model": ChatCompletionResponse, "content": SSE}, **GENERATION_ERRORS})
async def chat_completions(request: Request, ctx: Serving) -> Response:
    arrived = time.perf_counter()
    req = await read_request(request, ChatCompletionRequest, ctx)
    plan, choices = await submit_chat(ctx, req, arrived)
    replies = [ChatReply(plan) for _ in range(len(choices))]
    rid, created = random_id("chatcmpl"), now()
    texts = ctx.token_texts if req.logprobs else None
    if req.stream:
        chunks = ChatChunks(rid, created, req.model, req.include_usage, replies, texts,
                            usage_so_far=choices.usage_so_far if req.continuous_usage else None)
        return event_stream(choices, chunks, ctx.metrics)
    outputs = await run_to_end(request, choices, ctx.metrics)
    usage, rm = choices.usage()
    answers = []
    for i, (output, reply, stream) in enumerate(zip(outputs, replies, choices, strict=True)):
        reply.feed(output.text, final=True)
        reason = reply.finish_reason(stream.last.finish_reason)
        logprobs = texts.chat(output.logprobs) if texts else None
        answers.append(ChatChoice(index=i, message=reply.message(), finish_reason=reason, logprobs=logprobs))
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
    texts = ctx.token_texts if req.logprobs is not None else None
    if req.stream:
        chunks = TextChunks(rid, created, req.model, req.include_usage, len(choices), texts,
                            usage_so_far=choices.usage_so_far if req.continuous_usage else None)
        return event_stream(choices, chunks, ctx.metrics)
    outputs = await run_to_end(request, choices, ctx.metrics)
    usage, rm = choices.usage()
    answers = [TextChoice(index=i, text=o.text, finish_reason=s.last.finish_reason,
                          logprobs=texts.completion(o.logprobs) if texts else None)
               for i, (o, s) in enumerate(zip(outputs, choices, strict=True))]
    response = CompletionResponse(id=rid, created=created, model=req.model, choices=answers, usage=usage,
                                  metrics=rm)
    return JSONResponse(response.model_dump())
