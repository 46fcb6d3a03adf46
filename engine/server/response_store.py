"""The responses a server keeps, so a later request can go on from one (`previous_response_id`) or read it
back (GET /v1/responses/{id}): `store` is the Responses API's default. Kept in memory, the newest
MAX_STORED_RESPONSES (a restart forgets them); each with its conversation as chat messages: the history it
went on from, its input, its reply. The instructions are not kept: as in OpenAI's API, a request's
instructions do not carry over to the next. The prefix cache still holds the conversation's KV, so a request
that goes on from a stored response prefills only its new input.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from deltaserve.engine.server.openai_protocol import AssistantMessage, ChatMessage, MessageToolCall
from deltaserve.engine.server.responses_output import ResponseObject
from deltaserve.errors import APIError

MAX_STORED_RESPONSES = 512


@dataclass(frozen=True)
class StoredResponse:
    response: ResponseObject
    conversation: list[ChatMessage]


def reply_message(reply: AssistantMessage) -> ChatMessage:
    """A reply as the assistant message of the conversation it goes on."""
    calls = [MessageToolCall.model_validate(c.model_dump()) for c in reply.tool_calls or ()]
    return ChatMessage(role="assistant", content=reply.content, tool_calls=calls or None)


class ResponseStore:
    def __init__(self, capacity: int = MAX_STORED_RESPONSES) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[str, StoredResponse] = OrderedDict()

    def put(self, response: ResponseObject, conversation: list[ChatMessage]) -> None:
        self._kept[response.id] = StoredResponse(response, conversation)
        self._kept.move_to_end(response.id)
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)

    def get(self, response_id: str) -> StoredResponse:
        """The stored response; a 404 naming it when this server does not hold it."""
        found = self._kept.get(response_id)
        if found is None:
            raise APIError(404, f"no stored response {response_id!r} on this server (responses are kept in "
                                f"memory, the newest {self.capacity}, and only with store: true)",
                           code="response_not_found")
        return found

    def history(self, previous_response_id: str | None) -> list[ChatMessage]:
        """The conversation a request goes on from: none, or its previous response's (a 400 when unknown)."""
        if previous_response_id is None:
            return []
        try:
            return self.get(previous_response_id).conversation
        except APIError as exc:
            raise APIError(400, f"previous_response_id: {exc.message}", param="previous_response_id",
                           code="previous_response_not_found") from exc

    def delete(self, response_id: str) -> None:
        self.get(response_id)
        del self._kept[response_id]
