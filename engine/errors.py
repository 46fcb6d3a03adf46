"""The engine's errors, defined with the rest of the project's in deltaserve.errors."""

from deltaserve.errors import (
    ContextLengthError,
    EngineError,
    EngineOverloadedError,
    EngineStepError,
    InvalidRequestError,
    ModelNotFoundError,
    TensorFileError,
)

__all__ = [
    "ContextLengthError", "EngineError", "EngineOverloadedError", "EngineStepError", "InvalidRequestError",
    "ModelNotFoundError", "TensorFileError",
]
