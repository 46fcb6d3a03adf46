"""POST /tokenize and POST /detokenize, in vLLM's shapes: their request and response models and routes.

/tokenize takes a text (`prompt`, with `add_special_tokens`, default true) or a chat (`messages`, with
`tools` and `add_generation_prompt`, default true) and answers {count, max_model_len, tokens, token_strs
(with return_token_strs)}; a chat's tokens are the ones a chat completion of it would be prompted with.
/detokenize takes {tokens} and answers {prompt}. `model` is optional on both (when given, one served here).
Both tokenize on the server's tokenizer thread, under the same bounds as prompts.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, RootModel

from deltaserve.engine.server.context import Serving, ServingContext
from deltaserve.engine.server.openai_protocol import REQUEST, ChatMessage, TokenId, ToolDefinition
from deltaserve.engine.server.openapi import error_responses, request_body
from deltaserve.engine.server.prepare import ChatPrompt
from deltaserve.engine.server.requests import check_model, read_json, validated
from deltaserve.engine.server.tool_use import check_history, refuse_tools, template_tools
from deltaserve.errors import APIError

router = APIRouter()


class TokenizeText(BaseModel):
    model_config = REQUEST
    model: str | None = None
    prompt: str
    add_special_tokens: bool = True
    return_token_strs: bool = False


class TokenizeChat(BaseModel):
    model_config = REQUEST
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[ToolDefinition] | None = None
    add_generation_prompt: bool = True
    return_token_strs: bool = False


class TokenizeRequest(RootModel[TokenizeText | TokenizeChat]):
    """A text or a chat (told apart by `messages`)."""


class TokenizeResponse(BaseModel):
    count: int
    max_model_len: int
    tokens: list[int]
    token_strs: list[str] | None = None


class DetokenizeRequest(BaseModel):
    model_config = REQUEST
    model: str | None = None
    tokens: list[TokenId]


class DetokenizeResponse(BaseModel):
    prompt: str


def _text_ids(engine: Any, req: TokenizeText) -> list[int]:
    return list(engine.tokenizer(req.prompt, add_special_tokens=req.add_special_tokens)["input_ids"])


async def _ids(ctx: ServingContext, req: TokenizeText | TokenizeChat) -> list[int]:
    if isinstance(req, TokenizeText):
        ctx.prompts.check_prompt_chars(len(req.prompt))
        return await ctx.prompts.run(_text_ids, ctx.engine, req)
    check_history(req.messages, ctx.tools_refused)
    if req.tools and ctx.tools_refused is not None:
        raise refuse_tools(ctx.tools_refused)
    prompt = ChatPrompt([m.for_template() for m in req.messages], template_tools(req.tools or []) or None,
                        add_generation_prompt=req.add_generation_prompt)
    return await ctx.prompts.tokenize(prompt)


@router.post("/tokenize", openapi_extra=request_body(TokenizeRequest),
             responses={200: {"model": TokenizeResponse}, **error_responses(400, 404, 413, 500)})
async def tokenize(request: Request, ctx: Serving) -> TokenizeResponse:
    data = await read_json(request, ctx)
    req = validated(TokenizeChat if "messages" in data else TokenizeText, data)
    if req.model is not None:
        check_model(req.model, ctx)
    ids = await _ids(ctx, req)
    strs = ctx.engine.tokenizer.convert_ids_to_tokens(ids) if req.return_token_strs else None
    return TokenizeResponse(count=len(ids), max_model_len=ctx.engine.max_model_len, tokens=ids,
                            token_strs=strs)


@router.post("/detokenize", openapi_extra=request_body(DetokenizeRequest),
             responses={200: {"model": DetokenizeResponse}, **error_responses(400, 404, 413, 500)})
async def detokenize(request: Request, ctx: Serving) -> DetokenizeResponse:
    req = validated(DetokenizeRequest, await read_json(request, ctx))
    if req.model is not None:
        check_model(req.model, ctx)
    vocab = len(ctx.engine.tokenizer)
    bad = [t for t in req.tokens if t >= vocab]
    if bad:
        raise APIError(400, f"tokens: token ids out of range [0, {vocab}): {bad[:5]}", param="tokens",
                       code="invalid_value")
    return DetokenizeResponse(prompt=await ctx.prompts.run(ctx.engine.tokenizer.decode, req.tokens))
