"""deltaserve engine: a paged-KV, prefix-caching, continuously batching inference engine.

    from deltaserve.engine import Engine, EngineConfig, SamplingParams

The names load on first use (PEP 562), so a module that needs no model, such as
`deltaserve.engine.model_source` (where a model's files and tokenizer are), is imported without torch.
"""

from deltaserve.engine.lazy_names import lazy_getattr

# name -> the module defining it
_EXPORTS = {
    "Engine": "engine",
    "EngineConfig": "config",
    "EngineError": "errors",
    "EngineStats": "outputs",
    "InvalidRequestError": "errors",
    "ModelNotFoundError": "errors",
    "RequestMetrics": "outputs",
    "RequestOutput": "outputs",
    "SamplingParams": "sampler",
    "TokenLogprob": "outputs",
}
__all__ = list(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
