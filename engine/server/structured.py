"""A request's structured-output ask (`response_format`, or the `structured_outputs` extension) as the
GrammarSpec the engine decodes under; one that cannot be served with the request's tools is a 400."""

from __future__ import annotations

import re

from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.constraints.spec import ANY_OBJECT
from deltaserve.engine.server.openai_protocol import (
    ChatCompletionRequest,
    EditsConstraint,
    ResponseFormat,
    SamplingRequest,
    StructuredOutputs,
)
from deltaserve.errors import APIError


def grammar_spec(req: SamplingRequest) -> GrammarSpec | None:
    """The grammar of the request's structured output, or None: none asked, or a response_format beside
    tools the model may call, which the tool plan's grammar holds (an answer in the format, or calls)."""
    fmt = req.response_format if isinstance(req, ChatCompletionRequest) else None
    wants_format = fmt is not None and fmt.type != "text"
    outputs = req.structured_outputs
    if wants_format and outputs is not None:
        raise APIError(400, "response_format and structured_outputs cannot both be given",
                       param="structured_outputs")
    calls_tools = isinstance(req, ChatCompletionRequest) and req.tools and req.tool_choice != "none"
    if outputs is not None and calls_tools:
        raise APIError(400, "structured_outputs cannot be combined with tools the model may call (set "
                            "tool_choice to \"none\", drop the tools, or use response_format)",
                       param="structured_outputs")
    if wants_format:
        return None if calls_tools else format_spec(fmt)
    return None if outputs is None else outputs_spec(outputs)


def answer_schema(fmt: ResponseFormat | None) -> dict | None:
    """The JSON schema a response_format asks of an answer (json_object: any object); None for text."""
    if fmt is None or fmt.type == "text":
        return None
    schema = fmt.json_schema.schema_ if fmt.json_schema is not None else None
    return schema if schema is not None else ANY_OBJECT


def format_spec(fmt: ResponseFormat) -> GrammarSpec | None:
    """A response_format's grammar (None for text)."""
    schema = answer_schema(fmt)
    return None if schema is None else GrammarSpec(kind="json_schema", source=schema)


def outputs_spec(outputs: StructuredOutputs) -> GrammarSpec:
    """The structured_outputs extension's grammar."""
    if outputs.json_ is not None:
        return GrammarSpec(kind="json_schema", source=outputs.json_)
    if outputs.regex is not None:
        return GrammarSpec(kind="regex", source=outputs.regex)
    if outputs.grammar is not None:
        return GrammarSpec(kind="lark", source=outputs.grammar)
    if outputs.edits is not None:
        return edits_spec(outputs.edits)
    return GrammarSpec(kind="regex", source="|".join(map(re.escape, outputs.choice)))


def edits_spec(edits: EditsConstraint) -> GrammarSpec:
    """Our `edits` extension's constraint, per edit format."""
    if edits.format == "search_replace":
        return GrammarSpec.search_replace(edits.files)
    if edits.format == "udiff":
        return GrammarSpec.udiff(edits.files)
    try:
        return GrammarSpec.symbol(edits.files)
    except ValueError as exc:
        raise APIError(400, f"structured_outputs: {exc}", param="structured_outputs",
                       code="invalid_grammar") from exc
