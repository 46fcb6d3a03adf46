"""deltaserve engine: a paged-KV, prefix-caching, continuously batching inference engine."""

from deltaserve.engine.config import EngineConfig
from deltaserve.engine.engine import Engine
from deltaserve.engine.errors import EngineError, InvalidRequestError, ModelNotFoundError
from deltaserve.engine.outputs import EngineStats, RequestMetrics, RequestOutput
from deltaserve.engine.sampler import SamplingParams

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
