"""Per-request decoding constraints: which tokens a request may emit next, as a bitmask the batched sampler
applies to its logits row (engine/sampler.py), advanced by every token the request emits.

  spec.py     what a request asks for (a JSON schema, a regex, a Lark grammar): plain data on SamplingParams
  base.py     TokenConstraint, the protocol the engine drives (fill a mask, accept, roll back, forced tokens)
  grammar.py  grammars compiled by llguidance (the library vLLM, SGLang and llama.cpp use) into matchers
  masks.py    bitmask rows on the host, filled per wanted logits row (drafts included), unpacked on the device
"""

from deltaserve.engine.constraints.base import TokenConstraint
from deltaserve.engine.constraints.grammar import GrammarCompiler, GrammarConstraint
from deltaserve.engine.constraints.masks import fill_span_masks, unpack_bitmask, words_per_row
from deltaserve.engine.constraints.spec import GrammarSpec

__all__ = ["GrammarCompiler", "GrammarConstraint", "GrammarSpec", "TokenConstraint", "fill_span_masks",
           "unpack_bitmask", "words_per_row"]
