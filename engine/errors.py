"""Errors the engine raises on bad input. Both user-facing kinds are ValueErrors, so callers that only
know the standard library still catch them."""


class EngineError(Exception):
    """Base class for every error the engine raises on purpose."""


class InvalidRequestError(EngineError, ValueError):
    """A request the engine refuses: empty prompt, prompt longer than the context, bad sampling params."""


class ModelNotFoundError(EngineError, ValueError):
    """A model name or path that does not resolve to local weights."""
