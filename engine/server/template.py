"""The chat template a server renders with: `--chat-template`'s replacement for the tokenizer's own (checked
once, at start), and what it can render: tools, in the `<tool_call>` form tool_parser.py reads.

A template renders tools when it reads the `tools` variable transformers passes; one that does but never
writes `<tool_call>` asks the model for another format (Llama 3.1's bare JSON, Mistral's [TOOL_CALLS]) that
this server does not read, so it serves no tools either: a 400 beats calls left unparsed in the content.
"""

from __future__ import annotations

import re
from typing import Any

from deltaserve.errors import InvalidRequestError

_READS_TOOLS = re.compile(r"\btools\b")
TOOL_CALL_TAG = "<tool_call>"


def use_chat_template(engine: Any, template: str) -> None:
    """Render `engine`'s chats with `template` from now on; raises InvalidRequestError (with Jinja's reason)
    when it cannot render a one-message chat."""
    try:
        engine.tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], chat_template=template,
                                             add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # Jinja's syntax and runtime errors have no common base worth naming
        raise InvalidRequestError(f"the chat template cannot render a chat: {type(exc).__name__}: {exc}") \
            from exc
    engine.tokenizer.chat_template = template


def tool_support(template: Any) -> str | None:
    """None when `template` renders tools in the `<tool_call>` form; else why it does not."""
    if not isinstance(template, str):
        return "the model has no single chat template"
    if not _READS_TOOLS.search(template):
        return "the model's chat template does not render tools"
    if TOOL_CALL_TAG not in template:
        return (f"the model's chat template asks for tool calls in a form other than {TOOL_CALL_TAG}"
                "...</tool_call>, the one this server reads")
    return None
