"""Per-request decoding constraints: which tokens a request may emit next, as a bitmask the batched sampler
applies to its logits row (engine/sampler.py), advanced by every token the request emits.

  spec.py            what a request asks for (a JSON schema, a regex, a Lark grammar, or SEARCH/REPLACE edits
                     of given files): plain data on SamplingParams
  base.py            TokenConstraint, the protocol the engine drives (mask, accept, roll back, forced tokens)
  grammar.py         the compiler: grammars through llguidance (behind vLLM's, SGLang's and llama.cpp's
                     structured output) into matchers; edit constraints into our own automata
  threads.py         the machinery of our own automata: sets of threads fed byte by byte
  search_replace.py  our automaton: SEARCH/REPLACE blocks whose SEARCH text is a run of the file's lines
  udiff.py           our automaton: a unified diff whose hunks' old lines are runs of the file's lines
  symbol_grammar.py  the symbol edit format as a Lark grammar: blocks of Python definitions of given files
  token_table.py     every token's bytes, indexed for the automaton's masks
  masks.py           bitmask rows on the host, one per wanted logits row (drafts included), unpacked on device
"""

from deltaserve.engine.constraints.base import TokenConstraint
from deltaserve.engine.constraints.grammar import GrammarCompiler, GrammarConstraint
from deltaserve.engine.constraints.masks import fill_span_masks, unpack_bitmask, words_per_row
from deltaserve.engine.constraints.spec import GrammarSpec

__all__ = ["GrammarCompiler", "GrammarConstraint", "GrammarSpec", "TokenConstraint", "fill_span_masks",
           "unpack_bitmask", "words_per_row"]
