"""Decode-token accounting for edits made through the tools by another agent (the MCP server's).

What an edit cost to decode is the tokens of its own text (the diff, or the search/replace arguments'
text; a write_file call is itself a whole-file reply, so it saves 0); what it saved is the difference to
the `whole` counterfactual: the reply that re-types every changed file in full. Both the token counter
and the counterfactual rendering are injected (the tools know no model or edit format): `deltaserve mcp`
passes the harness's token counter and its `whole` format's renderer, so the figures match what the
agent's own step reports say.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pydantic import BaseModel


class EditCost(BaseModel):
    edit_tokens: int  # tokens of the edit as sent (diff, search/replace or file text)
    whole_file_tokens: int  # tokens of the `whole` reply carrying the same changes (0: only deletions)
    decode_saved: int  # whole_file_tokens - edit_tokens; negative when the edit cost more than `whole`

    def line(self) -> str:
        return (f"decode tokens: this edit {self.edit_tokens}, whole-file reply {self.whole_file_tokens}, "
                f"saved {self.decode_saved}")


class SavingsTotals(BaseModel):
    """Running totals over the edits applied (not dry runs) since the server started."""

    tokenizer: str
    started_at: str  # ISO 8601, UTC
    edits: int = 0
    edit_tokens: int = 0
    whole_file_tokens: int = 0
    decode_saved: int = 0


class EditAccounting:
    """Prices edits and keeps the running totals (thread-safe: tool calls may run concurrently)."""

    def __init__(self, count_tokens: Callable[[str], int],
                 render_whole: Callable[[dict[str, str | None]], str], tokenizer: str = ""):
        self._count = count_tokens
        self._render_whole = render_whole
        self._lock = threading.Lock()
        self._totals = SavingsTotals(tokenizer=tokenizer,
                                     started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def cost(self, edit_text: str | None, new_contents: dict[str, str | None]) -> EditCost:
        """`new_contents`: the changed files after the edit (tools.patch.PatchResult.new_contents);
        `edit_text` None: the edit was the whole-file reply itself."""
        whole = self._count(self._render_whole(new_contents)) if new_contents else 0
        edit = whole if edit_text is None else self._count(edit_text) if edit_text else 0
        return EditCost(edit_tokens=edit, whole_file_tokens=whole, decode_saved=whole - edit)

    def record(self, cost: EditCost) -> None:
        with self._lock:
            t = self._totals
            t.edits += 1
            t.edit_tokens += cost.edit_tokens
            t.whole_file_tokens += cost.whole_file_tokens
            t.decode_saved += cost.decode_saved

    def totals(self) -> SavingsTotals:
        with self._lock:
            return self._totals.model_copy()
