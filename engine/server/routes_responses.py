"""OpenAI's Responses API: POST /v1/responses, GET and DELETE /v1/responses/{id}.

A request runs as the chat request it asks for (responses_protocol.py), through the chat pipeline: its tool
plan, grammar, prompt and reply parser. The reply's deltas become output items (responses_output.py), streamed
as the API's events (responses_events.py) or answered whole. A refusal raised on the chat request's terms
names the Responses field (`input`, not `messages`). With `store` (the default) the response and its
conversation are kept for `previous_response_id` (response_store.py).
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.choices import submit_chat
from deltaserve.engine.server.context import Serving
from deltaserve.engine.server.openapi import NAMED_EVENTS, error_responses, request_body
from deltaserve.engine.server.requests import (
    check_max_tokens,
    check_model,
    params_renamed,
    read_json,
    validated,
)
from deltaserve.engine.server.response_store import reply_message
from deltaserve.engine.server.responses_events import ResponseEvents
from deltaserve.engine.server.responses_output import OutputItems, ResponseObject
from deltaserve.engine.server.responses_protocol import ResponsesRequest
from deltaserve.engine.server.streaming import event_stream, run_to_end

router = APIRouter()

# the chat request's fields, as the Responses API names them
RESPONSES_PARAMS = {"messages": "input", "response_format": "text.format", "max_tokens": "max_output_tokens",
                    "tool_choice.function.name": "tool_choice.name"}


# a stored response's id, for the routes that read or delete it (schema-driven clients follow these links)
STORED = {name: {"operationId": name, "parameters": {"response_id": "$response.body#/id"}}
          for name in ("get_response", "delete_response")}


@router.post("/v1/responses", openapi_extra=request_body(ResponsesRequest),
             responses={200: {"model": ResponseObject, "content": NAMED_EVENTS, "links": STORED},
                        **error_responses(400, 404, 413, 499, 500, 503)})
async def create_response(request: Request, ctx: Serving) -> Response:
    arrived = time.perf_counter()
    req = validated(ResponsesRequest, await read_json(request, ctx))
    check_model(req.model, ctx)
    check_max_tokens(req.max_output_tokens, ctx, "max_output_tokens")
    history = ctx.responses.history(req.previous_response_id)
    with params_renamed(RESPONSES_PARAMS):
        plan, choices = await submit_chat(ctx, req.chat(history), arrived)
    reply, response = ChatReply(plan), ResponseObject.created(req)

    def keep(done: ResponseObject) -> None:
        if req.store:
            ctx.responses.put(done, [*history, *req.messages(), reply_message(reply.message())])

    items = OutputItems(req.namespaces())
    if req.stream:
        return event_stream(choices, ResponseEvents(response, reply, items, keep), ctx.metrics)
    outputs = await run_to_end(request, choices, ctx.metrics)
    items.read(reply, outputs[0].text, choices.streams[0].last.finish_reason)
    done = response.finished(items, *choices.usage())
    keep(done)
    return JSONResponse(done.model_dump())


@router.get("/v1/responses/{response_id}", operation_id="get_response",
            responses={200: {"model": ResponseObject}, **error_responses(404)})
async def get_response(response_id: str, ctx: Serving) -> JSONResponse:
    return JSONResponse(ctx.responses.get(response_id).response.model_dump())


@router.delete("/v1/responses/{response_id}", operation_id="delete_response", responses=error_responses(404))
async def delete_response(response_id: str, ctx: Serving) -> JSONResponse:
    ctx.responses.delete(response_id)
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})
