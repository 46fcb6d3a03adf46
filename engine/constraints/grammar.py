"""Grammars compiled by llguidance into per-request matchers.

llguidance (Microsoft's; behind vLLM's, SGLang's and llama.cpp's structured output) computes a token mask
for a JSON schema, regex or Lark grammar in tens of microseconds from its current parser state. Its
tokenizer view costs seconds to build for a large vocabulary, so it is built once per engine, on first use,
by whichever thread asks first (the server asks on its tokenizer thread, off the engine's).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import torch

from deltaserve.engine.constraints.search_replace import SearchReplaceConstraint
from deltaserve.engine.constraints.spec import GrammarSpec
from deltaserve.engine.constraints.token_table import TokenTable
from deltaserve.engine.constraints.udiff import UdiffConstraint
from deltaserve.errors import InvalidRequestError

# edit formats no grammar library expresses ("a run of this file's lines"): our own automata
EDIT_AUTOMATA = {"search_replace": SearchReplaceConstraint, "udiff": UdiffConstraint}
GRAMMARS_KEPT = 64  # checked grammar texts kept, by spec
# JSON without free whitespace: a small model left free to emit whitespace may emit newlines until
# max_tokens; fixed separators also make more of the output forced (drafted whole, verified in one pass).
JSON_OPTIONS: dict[str, Any] = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _llguidance():
    try:
        import llguidance
        import llguidance.hf
    except ImportError as exc:  # an optional part on machines that only run the engine (the GPU check)
        raise InvalidRequestError("constrained decoding needs the llguidance package (pip install "
                                  "llguidance)") from exc
    return llguidance


class GrammarCompiler:
    """One engine's grammar compiler: its tokenizer (as llguidance sees it) and vocabulary size."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: list[int]):
        self.tokenizer, self.vocab_size, self.eos_token_ids = tokenizer, vocab_size, sorted(eos_token_ids)
        self._ll_tokenizer = None
        self._token_table: TokenTable | None = None
        self._grammars: OrderedDict[str, str] = OrderedDict()  # checked grammar texts, least recent first
        self._lock = threading.Lock()

    def ll_tokenizer(self):
        with self._lock:
            if self._ll_tokenizer is None:
                llg = _llguidance()
                self._ll_tokenizer = llg.hf.from_tokenizer(self.tokenizer, n_vocab=self.vocab_size,
                                                           eos_token=self.eos_token_ids or None)
            return self._ll_tokenizer

    def token_table(self) -> TokenTable:
        tokenizer = self.ll_tokenizer()
        with self._lock:
            if self._token_table is None:
                table = TokenTable.from_ll_tokenizer(tokenizer, self.vocab_size, self.eos_token_ids)
                self._token_table = table
            return self._token_table

    def _edit_files(self, spec: GrammarSpec) -> dict[str, str]:
        files = spec.source.get("files") if isinstance(spec.source, dict) else None
        if not isinstance(files, dict) or not files or not all(
                isinstance(k, str) and k and isinstance(v, str) for k, v in files.items()):
            raise InvalidRequestError(f'a {spec.kind} constraint takes {{"files": {{path: text, ...}}}}')
        if not any(text.strip() for text in files.values()):
            raise InvalidRequestError(f"a {spec.kind} constraint needs a file with content to edit")
        return files

    def grammar(self, spec: GrammarSpec) -> str:
        """llguidance's grammar text for the spec, checked; InvalidRequestError naming what is wrong with it.
        Kept by the spec's key: the server checks a request's grammar on its thread, the engine compiles it
        (once per choice) on its own, and agents send the same schema again and again."""
        key = spec.key()
        with self._lock:
            if key in self._grammars:
                self._grammars.move_to_end(key)
                return self._grammars[key]
        grammar = self._checked_grammar(spec)
        with self._lock:
            self._grammars[key] = grammar
            if len(self._grammars) > GRAMMARS_KEPT:
                self._grammars.popitem(last=False)
        return grammar

    def _checked_grammar(self, spec: GrammarSpec) -> str:
        matcher = _llguidance().LLMatcher
        try:
            if spec.kind == "json_schema":
                grammar = matcher.grammar_from_json_schema(spec.source, defaults=JSON_OPTIONS)
            elif not isinstance(spec.source, str):
                raise ValueError(f"a {spec.kind} is a string")
            elif spec.kind == "regex":
                grammar = matcher.grammar_from_regex(spec.source)
            else:
                grammar = matcher.grammar_from_lark(spec.source)
        except ValueError as exc:
            raise InvalidRequestError(f"invalid {spec.kind}: {exc}") from exc
        error = matcher.validate_grammar(grammar, self.ll_tokenizer())
        if error:
            raise InvalidRequestError(f"invalid {spec.kind}: {error}")
        return grammar

    def check(self, spec: GrammarSpec) -> None:
        """Raise InvalidRequestError unless the spec compiles (the tokenizer view is built on this thread)."""
        if spec.kind in EDIT_AUTOMATA:
            self._edit_files(spec)
            self.token_table()
        else:
            self.grammar(spec)

    def compile(self, spec: GrammarSpec) -> GrammarConstraint | SearchReplaceConstraint | UdiffConstraint:
        if spec.kind in EDIT_AUTOMATA:
            tokenize = self.ll_tokenizer().tokenize_bytes
            return EDIT_AUTOMATA[spec.kind](self._edit_files(spec), self.token_table(), tokenize)
        llg = _llguidance()
        matcher = llg.LLMatcher(self.ll_tokenizer(), self.grammar(spec), log_level=0)
        if matcher.is_error():
            raise InvalidRequestError(f"invalid {spec.kind}: {matcher.get_error()}")
        return GrammarConstraint(matcher)


class GrammarConstraint:
    """A TokenConstraint over one llguidance matcher."""

    def __init__(self, matcher: Any):
        self.matcher = matcher

    def fill_mask(self, row: torch.Tensor) -> None:
        self.matcher.unsafe_compute_mask_ptr(row.data_ptr(), row.numel() * row.element_size())

    def accept(self, token: int) -> bool:
        return bool(self.matcher.consume_token(token))

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def valid_prefix(self, tokens: list[int]) -> int:
        return int(self.matcher.validate_tokens(tokens))

    def forced_tokens(self) -> list[int]:
        return list(self.matcher.compute_ff_tokens())

    @property
    def done(self) -> bool:
        return bool(self.matcher.is_stopped())

    @property
    def error(self) -> str | None:
        return self.matcher.get_error() if self.matcher.is_error() else None
