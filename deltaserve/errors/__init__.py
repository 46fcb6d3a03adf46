"""Every error deltaserve raises on purpose, in one hierarchy.

Each carries `.message`: a sentence written for whoever reads it next, a user at a terminal or a model that
gets it back as feedback. Catch `DeltaserveError` to handle them all; the server maps the engine's kinds to
the OpenAI error shape in one place (engine/server/errors.py). Bad-input kinds also derive from
ValueError, so callers that only know the standard library still catch them.
"""

from __future__ import annotations


class DeltaserveError(Exception):
    """Base class of every deltaserve error."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# engine ---------------------------------------------------------------------------------------------------


class EngineError(DeltaserveError):
    """Base class of the errors the engine raises."""


class InvalidRequestError(EngineError, ValueError):
    """A request the engine refuses: empty prompt, prompt longer than the context, bad sampling params."""


class ContextLengthError(InvalidRequestError):
    """A prompt (with the tokens asked for after it) that does not fit the context a model is served with,
    worded as OpenAI words it ("This model's maximum context length is ..."; `anthropic_message` as Anthropic
    does, "prompt is too long: ..."): clients recognise an overflow by those words (litellm's
    ContextWindowExceededError, agents that compact their history then). `chars`: the prompt was refused
    by its length in characters, before it was tokenized, and prompt_tokens is a lower bound."""

    def __init__(self, prompt_tokens: int, limit: int, completion_tokens: int | None = None,
                 chars: int | None = None):
        self.prompt_tokens, self.limit, self.completion_tokens = prompt_tokens, limit, completion_tokens
        head = f"This model's maximum context length is {limit} tokens. However, "
        if completion_tokens is not None:
            total = prompt_tokens + completion_tokens
            message = (f"{head}you requested {total} tokens ({prompt_tokens} in the messages, "
                       f"{completion_tokens} in the completion). Please reduce the length of the messages or "
                       "completion.")
            self.anthropic_message = (
                f"input length and `max_tokens` exceed context limit: {prompt_tokens} + {completion_tokens} "
                f"> {limit}, decrease input length or `max_tokens` and try again")
        else:
            none_left = prompt_tokens == limit and chars is None  # one token must be left to generate
            counted = (f"{prompt_tokens} tokens" if chars is None
                       else f"more than {prompt_tokens} tokens ({chars} characters)")
            message = (f"{head}your messages resulted in {counted}"
                       f"{', which leaves none to generate' if none_left else ''}. Please reduce the length "
                       "of the messages.")
            self.anthropic_message = (f"prompt is too long: {prompt_tokens} tokens > "
                                      f"{limit - 1 if none_left else limit} maximum")
        super().__init__(message)


class ModelNotFoundError(EngineError, ValueError):
    """A model name or path that does not resolve to local weights."""


class APIError(EngineError):
    """An HTTP error the server answers in the OpenAI error shape (`status`, `type`, `param`, `code`)."""

    def __init__(self, status: int, message: str, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, anthropic_message: str | None = None):
        super().__init__(message)
        self.status, self.type, self.param, self.code = status, type, param, code
        self.anthropic_message = anthropic_message  # the message in Anthropic's shape, where it words it else


class ServerStartError(EngineError):
    """A server that was started did not come up; the message says why (a spawned one's log tail)."""


class TensorFileError(EngineError, ValueError):
    """A weights file that is not a complete safetensors file (truncated, overwritten, not one at all)."""


class EngineOverloadedError(EngineError):
    """Too many requests are already waiting (the server answers 503)."""


class EngineStepError(EngineError):
    """The engine's step loop failed while this request was in flight (the server answers 500)."""


# tools ----------------------------------------------------------------------------------------------------


class ToolError(DeltaserveError, ValueError):
    """Base class of the errors the file, patch and test tools raise."""


class WorkspaceError(ToolError):
    """A path was refused (escape, absolute, NUL, .git, ...) or a file could not be read."""


class PatchError(ToolError):
    """An edit that was not applied (nothing was written). `message` is written for the model."""

    def __init__(self, message: str, path: str | None = None, hunk: int | None = None):
        super().__init__(message)
        self.path = path
        self.hunk = hunk  # 1-based hunk/block number within `path`, when one hunk is to blame


class NoChangesError(PatchError):
    """An edit that would leave every file as it is (a diff with headers only, a hunk with no +/- lines, a
    REPLACE equal to its SEARCH). `paths`: the files it named."""

    def __init__(self, message: str, paths: list[str] | None = None):
        super().__init__(message, paths[0] if paths else None)
        self.paths = list(paths or [])


class DiffParseError(ToolError):
    """Text that does not parse as a unified diff, even after repair."""


class HunkError(ToolError):
    """A hunk could not be placed; `reason` is a sentence for the model, `closest` a numbered excerpt."""

    def __init__(self, reason: str, closest: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.closest = closest
        self.index = 0  # 0-based hunk that failed, set by whoever placed the hunks in order


class AmbiguousHunkError(HunkError):
    """The hunk's text matches several places and no line number tells them apart (the order of a diff's
    hunks, or of a file's SEARCH/REPLACE blocks, still may)."""

    def __init__(self, reason: str, candidates: list[int]):
        super().__init__(reason)
        self.candidates = candidates  # 0-based starts


class SandboxError(ToolError):
    """A sandbox that cannot run here (bubblewrap missing or not permitted), or an unknown sandbox name."""


# harness --------------------------------------------------------------------------------------------------


class HarnessError(DeltaserveError):
    """Base class of the errors the agent harness raises."""


class DirtyWorkspaceError(HarnessError):
    """The repository has uncommitted changes the agent could overwrite."""


class PromptError(HarnessError, ValueError):
    """A prompt built out of order (two messages of one role in a row)."""


class UnknownEditFormatError(HarnessError, ValueError):
    """An edit format name that is not registered."""


class ReplyRejected(HarnessError):
    """A reply whose edits go no further (cut off, unreadable, refused, not applicable, already tried): the
    stage that saw it raises this (harness/pipeline.py). `outcome`: the harness.outcomes.Outcome it ends in;
    the message is what the model is told; `error`: what the step's apply outcome records (None: the reply
    had no edits to apply)."""

    def __init__(self, outcome: str, message: str, error: str | None = None):
        super().__init__(message)
        self.outcome = outcome
        self.error = error


# evals ----------------------------------------------------------------------------------------------------


class EvalError(DeltaserveError, ValueError):
    """Base class of the errors the evals and benchmarks raise (bad tasks, results, options)."""


class GoldReplyError(EvalError):
    """A task's gold patch cannot be turned into a reply in some edit format."""


class TaskError(EvalError):
    """A task folder or task id that is malformed or unknown."""


class InstanceImportError(EvalError):
    """A SWE-bench instance that cannot become a task folder (no clone, unknown commit, bad patch)."""
