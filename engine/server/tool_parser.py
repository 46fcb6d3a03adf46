"""Tool calls read from a reply as it streams: the Hermes / Qwen2.5 form, `<tool_call>{"name": ...,
"arguments": {...}}</tool_call>` blocks among the content, and the fenced form small models fall back to
(```json {"name": ..., "arguments": {...}} ```; Qwen2.5-Coder-1.5B answers so despite its template), and a
reply that is nothing but such JSON (the same model's answer after a tool result: `{"name": ...}` bare).
Qwen2.5-Coder's own chat template shows its models the call as `{{"name": <function-name>, "arguments":
<args-json-object>}}` (doubled braces inside a Jinja string are printed as they are), and the 1.5B model
copies them: a call written with its outer braces doubled is read as the call it means, where every name
is one of the request's tools.

One parser serves streaming and plain responses: a plain one feeds the whole reply at once and merges the
deltas, so the two always agree, however the text arrived in pieces. The rules depend on the text alone:
  * outside a block the text is content; a whitespace run is held back until text follows it, and dropped
    where a call begins, before content that starts after a call, and at the end of a reply that made calls
    (a reply with no call keeps every byte);
  * a `<tool_call>` block whose JSON opens with "name" and then "arguments": {...} (the order chat templates
    show the model) is a call as soon as that `{` arrives: its id and name go out, then the arguments' own
    characters as they come, up to the end of that object (a `</tool_call>` in an argument string ends
    nothing);
  * any other block is read whole when it closes, or when the reply ends: a JSON object with a string
    "name" and "arguments" (an object, or JSON text) is a call, and so are several (one after another, or
    in a list); a fenced block, or a reply that begins with `{"name"` (read whole at its end), only when every
    name is one of the request's tools (else it is code the model showed); so is a call whose outer braces
    are doubled, in any of these forms. Anything else is content, as written.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

from deltaserve.engine.server.openai_protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    FunctionCall,
    ToolCall,
)

OPEN, CLOSE = "<tool_call>", "</tool_call>"
FENCE_OPEN, FENCE_CLOSE = "```json", "```"
CLOSES = {OPEN: CLOSE, FENCE_OPEN: FENCE_CLOSE}
BARE = ""  # the tag of a reply that is a call's JSON alone (no tag, no close: read at the reply's end)
_BARE_HEAD = re.compile(r'\s*\{\{?\s*"name"')  # a second brace: the doubled form (see undoubled)
_BARE_HEAD_SO_FAR = re.compile(r'\s*(?:\{\{?\s*(?:"(?:n(?:a(?:m(?:e)?)?)?)?)?)?')
# The head of a call written in the templates' order, up to the colon after "arguments".
_HEAD = re.compile(r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:')


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _one_call(obj: object) -> tuple[str, str] | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    arguments = obj.get("arguments", {})
    if isinstance(arguments, str):
        return obj["name"], arguments
    if isinstance(arguments, dict):
        return obj["name"], json.dumps(arguments, ensure_ascii=False)
    return None


def _json_values(text: str) -> list[object] | None:
    """The JSON values `text` holds one after another (whitespace between), or None if it holds others."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return None
        values.append(value)
    return values


def undoubled(body: str) -> str | None:
    """A block's body with one layer of doubled outer braces removed (`{{"name": ..., "arguments": {...}}}`
    -> `{"name": ..., "arguments": {...}}`), or None when its braces are not doubled."""
    text = body.strip()
    return text[1:-1] if text.startswith("{{") and text.endswith("}}") else None


def parse_calls(body: str) -> list[tuple[str, str]] | None:
    """[(name, arguments JSON text)] of a whole block's body (calls, or lists of them, one after another),
    or None when it holds anything else."""
    values = _json_values(body) or []
    calls = [_one_call(o) for v in values for o in (v if isinstance(v, list) else [v])]
    return calls if calls and None not in calls else None  # type: ignore[return-value]


class ObjectScan:
    """Where the JSON object starting at `start` ends, each character read once as the text grows."""

    def __init__(self, start: int) -> None:
        self.pos, self.depth, self.in_string, self.escaped = start, 0, False, False
        self.end: int | None = None

    def advance(self, text: str) -> int | None:
        """The object's end (exclusive) once `text` holds all of it, else None."""
        i = self.pos
        while self.end is None and i < len(text):
            c = text[i]
            i += 1
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif c == "\\":
                    self.escaped = True
                elif c == '"':
                    self.in_string = False
            elif c == '"':
                self.in_string = True
            elif c in "{[":
                self.depth += 1
            elif c in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.end = i
        self.pos = i
        return self.end


@dataclass
class _Block:
    tag: str  # OPEN or FENCE_OPEN
    start: int  # where the block's body begins (after the tag)
    held: str  # the whitespace before OPEN: dropped if the block is a call, content if not
    close_from: int  # where to look for CLOSE next
    call: ToolCall | None = None  # set once the head is read (the streamed form)
    index: int = 0  # the call's index among the reply's calls
    scan: ObjectScan | None = None
    sent: int = 0  # the arguments' characters sent so far end here


class ToolCallParser:
    """Feed a reply's text as it arrives; get the deltas to send (content, tool call pieces). `tools`: the
    request's tool names (a fenced block is a call only to one of them)."""

    def __init__(self, tools: frozenset[str] = frozenset(), one_call: bool = False) -> None:
        self.tools, self.one_call = tools, one_call  # one_call: the reply ends with its first call
        self.text = ""
        self.pos = 0  # the text before this is settled
        self.held = ""  # whitespace held back outside blocks
        self.block: _Block | None = None
        self.calls: list[ToolCall] = []
        self.content = ""

    def feed(self, piece: str, final: bool = False) -> list[DeltaMessage]:
        """The deltas `piece` settles; `final` (the reply's end) settles everything."""
        self.text += piece
        out: list[DeltaMessage] = []
        while self._step_block(out, final) if self.block else self._step_outside(out, final):
            pass
        if self.one_call and self.calls and self.block is None:
            self.pos = len(self.text)  # what follows the call is not part of the reply
        if final and self.held and not self.calls:
            self._send_content(out, self.held)
        if final:
            self.held = ""
        return out

    # ---- outside a block

    def _step_outside(self, out: list[DeltaMessage], final: bool) -> bool:
        if self.one_call and self.calls:
            self.pos = len(self.text)
            return False
        if self.tools and self.pos == 0 and not self.calls and not self.content:
            if _BARE_HEAD.match(self.text):
                start = self.text.index("{")
                self.block = _Block(tag=BARE, start=start, held=self.text[:start], close_from=start)
                self.pos = start
                return True
            if _BARE_HEAD_SO_FAR.fullmatch(self.text) and not final:
                return False  # it may still become a bare call: settle nothing yet
        found = [(i, tag) for tag in CLOSES if (i := self.text.find(tag, self.pos)) >= 0]
        if found:
            i, tag = min(found)
            self._content(out, self.text[self.pos:i])
            start = i + len(tag)
            self.block = _Block(tag=tag, start=start, held=self.held, close_from=start)
            self.held, self.pos = "", start
            return True
        end = len(self.text) if final else len(self.text) - self._tag_start_at_end()
        self._content(out, self.text[self.pos:end])
        self.pos = end
        return False

    def _tag_start_at_end(self) -> int:
        """How many characters at the end could still become a tag."""
        for k in range(max(map(len, CLOSES)) - 1, 0, -1):
            if len(self.text) - k >= self.pos and any(self.text.endswith(tag[:k]) for tag in CLOSES):
                return k
        return 0

    def _content(self, out: list[DeltaMessage], text: str) -> None:
        body = text.rstrip()
        if body:
            if self.calls and not self.content:  # content starting after a call: not with whitespace
                self.held, text, body = "", text.lstrip(), body.lstrip()
            self._send_content(out, self.held + body)
            self.held = text[len(body):]
        else:
            self.held += text

    def _send_content(self, out: list[DeltaMessage], text: str) -> None:
        self.content += text
        out.append(DeltaMessage(content=text))

    # ---- inside a block

    def _step_block(self, out: list[DeltaMessage], final: bool) -> bool:
        block = self.block
        assert block is not None
        if block.call is None and (block.tag != OPEN or not self._read_head(out, block)):
            close_tag = CLOSES.get(block.tag)
            close = self.text.find(close_tag, block.close_from) if close_tag else -1
            if close < 0:
                block.close_from = max(block.start, len(self.text) - len(close_tag or " ") + 1)
                if not final:
                    return False
                self._read_whole(out, block, len(self.text), closed=False)
            else:
                self._read_whole(out, block, close, closed=True)
            return True
        return self._stream_arguments(out, block, final)

    def _read_head(self, out: list[DeltaMessage], block: _Block) -> bool:
        """Start the streamed form of a call once its head and the `{` of its arguments are in."""
        m = _HEAD.match(self.text, block.start)
        if m is None:
            return False
        value = m.end()
        while value < len(self.text) and self.text[value].isspace():
            value += 1
        if value >= len(self.text) or self.text[value] != "{" or CLOSE in self.text[block.start:value]:
            return False
        try:
            name = json.loads(f'"{m.group(1)}"')
        except ValueError:
            return False
        block.call, block.index = self._add_call(out, name, ""), len(self.calls) - 1
        block.scan, block.sent = ObjectScan(value), value
        return True

    def _stream_arguments(self, out: list[DeltaMessage], block: _Block, final: bool) -> bool:
        assert block.call is not None and block.scan is not None
        end = block.scan.advance(self.text)
        upto = len(self.text) if end is None else end
        if upto > block.sent:
            piece = self.text[block.sent:upto]
            block.call.function.arguments += piece
            out.append(DeltaMessage(tool_calls=[DeltaToolCall(index=block.index,
                                                              function=DeltaFunctionCall(arguments=piece))]))
            block.sent = upto
        close = -1 if end is None else self.text.find(CLOSE, max(end, block.close_from))
        if close >= 0:
            self.block, self.pos = None, close + len(CLOSE)
            return True
        if end is not None:
            block.close_from = max(end, len(self.text) - len(CLOSE) + 1)
        if final:
            self.block, self.pos = None, len(self.text)
        return False

    def _read_whole(self, out: list[DeltaMessage], block: _Block, end: int, closed: bool) -> None:
        body, close_tag = self.text[block.start:end], CLOSES.get(block.tag, "")
        self.block, self.pos = None, end + (len(close_tag) if closed else 0)
        calls, doubled = parse_calls(body), False
        if calls is None and (inner := undoubled(body)) is not None:
            calls, doubled = parse_calls(inner), True
        if calls and (block.tag != OPEN or doubled) and any(name not in self.tools for name, _ in calls):
            calls = None  # JSON the model showed, not a call
        if calls is None:  # no call: the block is content, the whitespace before it too
            self.held = block.held
            self._content(out, block.tag + body + (close_tag if closed else ""))
            return
        for name, arguments in calls[:1] if self.one_call else calls:
            self._add_call(out, name, arguments)

    def _add_call(self, out: list[DeltaMessage], name: str, arguments: str) -> ToolCall:
        call = ToolCall(id=new_call_id(), function=FunctionCall(name=name, arguments=arguments))
        self.calls.append(call)
        head = DeltaToolCall(index=len(self.calls) - 1, id=call.id, type="function",
                             function=DeltaFunctionCall(name=name, arguments=arguments))
        out.append(DeltaMessage(tool_calls=[head]))
        return call


class PlainText:
    """The reply of a request without tools: every piece is content as it comes."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.content = ""

    def feed(self, piece: str, final: bool = False) -> list[DeltaMessage]:
        self.content += piece
        return [DeltaMessage(content=piece)] if piece else []
