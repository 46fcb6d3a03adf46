"""Anthropic's Messages API: POST /v1/messages and POST /v1/messages/count_tokens.

A request runs as the chat request it asks for (messages_protocol.py), through the chat pipeline: its tool
plan, grammar, prompt and reply parser. The reply's deltas become content blocks (messages_output.py),
streamed as Anthropic's events (messages_events.py) or answered whole. Errors on these routes come in
Anthropic's shape (errors.py); a refusal raised on the chat request's terms names the Messages field.
count_tokens counts the prompt a message request would be given: the chat template's rendering, tools and
the reply's planned beginning included.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.choices import chat_prompt, submit_chat
from deltaserve.engine.server.context import Serving
from deltaserve.engine.server.errors import AnthropicErrorResponse
from deltaserve.engine.server.messages_events import MessageEvents
from deltaserve.engine.server.messages_output import MessageBlocks, MessageObject
from deltaserve.engine.server.messages_protocol import MessagesInput, MessagesRequest
from deltaserve.engine.server.openapi import NAMED_EVENTS, error_responses, request_body
from deltaserve.engine.server.requests import (
    check_max_tokens,
    check_model,
    params_renamed,
    read_json,
    validated,
)
from deltaserve.engine.server.streaming import event_stream, run_to_end

router = APIRouter()

ANTHROPIC_ERROR = AnthropicErrorResponse  # these routes' error envelope (errors.py)
# the chat request's fields, as the Messages API names them
MESSAGES_PARAMS = {"stop": "stop_sequences", "response_format": "output_config.format",
                   "tool_choice.function.name": "tool_choice.name"}


class TokenCount(BaseModel):
    input_tokens: int


@router.post("/v1/messages", openapi_extra=request_body(MessagesRequest),
             responses={200: {"model": MessageObject, "content": NAMED_EVENTS},
                        **error_responses(400, 404, 413, 499, 500, 503, envelope=ANTHROPIC_ERROR)})
async def create_message(request: Request, ctx: Serving) -> Response:
    arrived = time.perf_counter()
    req = validated(MessagesRequest, await read_json(request, ctx))
    check_model(req.model, ctx)
    check_max_tokens(req.max_tokens, ctx)
    # a max_tokens past what the context holds stops the reply where the context fills (as Anthropic's does)
    with params_renamed(MESSAGES_PARAMS):
        plan, choices = await submit_chat(ctx, req.chat(), arrived, fill_context=True)
    reply, message = ChatReply(plan), MessageObject.started(req.model)
    blocks = MessageBlocks(req.stop_sequences, req.max_tokens, ctx.engine.max_model_len)
    if req.stream:
        return event_stream(choices, MessageEvents(message, reply, blocks), ctx.metrics)
    outputs = await run_to_end(request, choices, ctx.metrics)
    blocks.read(reply, outputs[0].text, choices.streams[0].last)
    return JSONResponse(blocks.finished(message, *choices.usage()).model_dump())


@router.post("/v1/messages/count_tokens", openapi_extra=request_body(MessagesInput),
             responses={200: {"model": TokenCount},
                        **error_responses(400, 404, 413, 500, envelope=ANTHROPIC_ERROR)})
async def count_tokens(request: Request, ctx: Serving) -> TokenCount:
    req = validated(MessagesInput, await read_json(request, ctx))
    check_model(req.model, ctx)
    with params_renamed(MESSAGES_PARAMS):
        _, prompt = chat_prompt(ctx, req.chat())
    return TokenCount(input_tokens=len(await ctx.prompts.tokenize(prompt)))
