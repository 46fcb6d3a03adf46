"""create_app: one FastAPI app over one Engine; the engine's worker thread starts with it, stops with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from deltaserve.engine.async_engine import AsyncEngine
from deltaserve.engine.server import routes_messages, routes_openai, routes_ops, routes_responses, tokenize
from deltaserve.engine.server.auth import APIKeyCheck
from deltaserve.engine.server.context import ServingContext
from deltaserve.engine.server.errors import install_error_handlers
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.engine.server.logprobs import TokenTexts
from deltaserve.engine.server.metrics import ServerMetrics
from deltaserve.engine.server.openapi import install_openapi
from deltaserve.engine.server.prepare import PromptPreparer
from deltaserve.engine.server.template import tool_support, use_chat_template
from deltaserve.engine.server.tool_grammar import tool_tags


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    app.state.serving.async_engine.shutdown()
    app.state.serving.prompts.close()


def create_app(engine: Any, *, served_model_name: str | None = None, limits: ServerLimits | None = None,
               api_key: str | None = None, chat_template: str | None = None) -> FastAPI:
    """The ASGI app serving `engine`; the engine's worker thread starts now and stops with the app.
    `api_key`: required of every request but /health; `chat_template`: Jinja text replacing the tokenizer's
    own (InvalidRequestError, before anything starts, when it cannot render a chat)."""
    if chat_template is not None:
        use_chat_template(engine, chat_template)
    limits = limits or ServerLimits()
    async_engine = AsyncEngine(engine, max_waiting=limits.max_waiting)
    model_name = served_model_name or str(engine.model_name)
    refused = tool_support(engine.tokenizer.chat_template)
    serving = ServingContext(
        async_engine=async_engine,
        limits=limits,
        metrics=ServerMetrics(lambda: async_engine.latest_stats),
        prompts=PromptPreparer(engine, limits),
        model_name=model_name,
        model_names=frozenset({model_name, str(engine.model_name)}),
        token_texts=TokenTexts(engine.tokenizer),
        tools_refused=refused,
        tool_tags=tool_tags(engine.tokenizer) if refused is None else None,
    )
    app = FastAPI(title="deltaserve", lifespan=_lifespan)
    app.state.serving = serving
    app.state.async_engine = async_engine  # for tests and tools that reach the engine behind a running app
    install_error_handlers(app)
    install_openapi(app, serving, secured=api_key is not None)
    if api_key is not None:
        app.add_middleware(APIKeyCheck, api_key=api_key, metrics=serving.metrics)
    app.include_router(routes_openai.router)
    app.include_router(routes_responses.router)
    app.include_router(routes_messages.router)
    app.include_router(tokenize.router)
    app.include_router(routes_ops.router)
    return app
