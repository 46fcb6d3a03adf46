"""deltaserve engine: a paged-KV, prefix-caching, continuously batching inference engine."""

from engine.config import EngineConfig
from engine.engine import Engine
from engine.errors import EngineError, InvalidRequestError, ModelNotFoundError
from engine.outputs import EngineStats, RequestMetrics, RequestOutput
from engine.sampler import SamplingParams

__all__ = [
    "Engine",
    "EngineConfig",
    "EngineError",
    "EngineStats",
    "InvalidRequestError",
    "ModelNotFoundError",
    "RequestMetrics",
    "RequestOutput",
    "SamplingParams",
]
