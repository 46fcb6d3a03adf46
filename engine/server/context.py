"""What every route of one app serves with: the engine, its limits, its metrics, the names it answers to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request

from deltaserve.engine.async_engine import AsyncEngine
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.engine.server.logprobs import TokenTexts
from deltaserve.engine.server.metrics import ServerMetrics
from deltaserve.engine.server.openai_protocol import now
from deltaserve.engine.server.prepare import PromptPreparer
from deltaserve.engine.server.response_store import ResponseStore


@dataclass
class ServingContext:
    """One app's serving state, kept on `app.state.serving`; routes get it as the `Serving` dependency."""

    async_engine: AsyncEngine
    limits: ServerLimits
    metrics: ServerMetrics
    prompts: PromptPreparer  # bounds and tokenizes prompts off the engine thread
    model_name: str  # the name /v1/models lists
    model_names: frozenset[str]  # every name a request may use: the served name and the engine's own
    token_texts: TokenTexts  # token ids as logprobs show them
    tools_refused: str | None = None  # why the chat template serves no tools (None: it serves them)
    # the call blocks' tags as grammar terminals (tool_grammar.tool_tags), where tools are served
    tool_tags: tuple[str, str] | None = None
    started: int = field(default_factory=now)  # /v1/models' `created`
    responses: ResponseStore = field(default_factory=ResponseStore)  # kept for previous_response_id

    @property
    def engine(self) -> Any:
        return self.async_engine.engine


def serving_context(request: Request) -> ServingContext:
    return request.app.state.serving


Serving = Annotated[ServingContext, Depends(serving_context)]
