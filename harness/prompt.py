"""The prefix-stable prompt: one message list that only ever grows.

Order never changes: system (agent rules + edit-format instructions) -> repository context -> task ->
history (each reply, then the tools' feedback). Nothing already sent is rewritten, so the chat-templated
prompt of step N+1 starts with the prompt of step N plus its reply, and the engine serves all of that from
its prefix cache.
"""

from __future__ import annotations

import copy

from deltaserve.errors import PromptError
from deltaserve.tools.fences import fence_for
from deltaserve.tools.textfile import split_lines

SYSTEM = """You are a careful software engineer fixing a bug in the repository shown below.
Make the smallest change that makes the failing tests pass. Never edit the tests unless the task says so.
If you need more code before editing, reply with only request lines instead of edits:
VIEW path/to/file.py 10-40   (a file, optionally a line range)
GREP regex                   (search every file)
You will then see the result, the outcome of applying your edits, and the test output."""


def render_file(path: str, content: str, numbered: bool, first_line: int = 1,
                line_numbers: tuple[int | None, ...] | None = None) -> str:
    """A file as the model sees it: its path, then its text in a fence (line-numbered for diff formats).
    `line_numbers`: each line's own number (an excerpt's; None for a fold marker), else from first_line."""
    lines = split_lines(content)[0]  # at line ends only: a form feed (^L) or \u2028 inside a line stays
    if numbered:
        numbers = line_numbers or range(first_line, first_line + len(lines))
        width = len(str(max((n for n in numbers if n is not None), default=1)))
        lines = [f"{n:>{width}} | {line}" if n is not None else f"{'':>{width}}   {line}"
                 for n, line in zip(numbers, lines, strict=True)]
    fence = fence_for(lines)
    return f"{path}\n{fence}\n" + "\n".join(lines) + f"\n{fence}"


class Prompt:
    """Append-only chat messages. `messages` returns a copy, so callers cannot rewrite history."""

    def __init__(self, format_instructions: str, context: str, task: str, system: str = SYSTEM):
        self._system = system
        self._messages: list[dict[str, str]] = [
            {"role": "system", "content": f"{system}\n\n{format_instructions}"},
            {"role": "user", "content": f"{context}\n\n{task}" if context else task},
        ]

    @property
    def messages(self) -> list[dict[str, str]]:
        return copy.deepcopy(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def add_to_task(self, text: str) -> None:
        """Append a line to the task message, before anything is sent (then the prefix is fixed)."""
        if len(self._messages) != 2:
            raise PromptError("the task message can only be extended before the first reply")
        if text:
            self._messages[-1]["content"] += f"\n\n{text}"

    def set_format_instructions(self, text: str) -> None:
        """Replace the system message's format instructions, before anything is sent (`auto` describes its
        first step's format there)."""
        if len(self._messages) != 2:
            raise PromptError("the format instructions can only be replaced before the first reply")
        self._messages[0]["content"] = f"{self._system}\n\n{text}"

    def add_reply(self, text: str) -> None:
        """The model's reply, as it wrote it. Leading whitespace is dropped: the template's "assistant\\n"
        precedes it, and a tokenizer could merge the two newlines, breaking the token-level prefix."""
        self._append("assistant", text.lstrip())

    def add_feedback(self, text: str) -> None:
        """What the tools report back (apply errors, test output, requested views), as the next user turn."""
        self._append("user", text)

    def _append(self, role: str, content: str) -> None:
        if self._messages[-1]["role"] == role:
            raise PromptError(f"two {role} messages in a row; a prompt alternates reply and feedback")
        self._messages.append({"role": role, "content": content})
