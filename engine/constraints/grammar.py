"""Grammars compiled by llguidance into per-request matchers.

llguidance (Microsoft's; behind vLLM's, SGLang's and llama.cpp's structured output) computes a token mask
for a JSON schema, regex or Lark grammar in tens of microseconds from its current parser state. Its
tokenizer view costs seconds to build for a large vocabulary, so it is built once per engine, on first use,
by whichever thread asks first (the server asks on its tokenizer thread, off the engine's).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from deltaserve.engine.constraints.search_replace import SearchReplaceConstraint
from deltaserve.engine.constraints.spec import GrammarSpec
from deltaserve.engine.constraints.symbol_grammar import closes_as_python
from deltaserve.engine.constraints.token_table import TokenTable
from deltaserve.engine.constraints.udiff import UdiffConstraint
from deltaserve.errors import InvalidRequestError

# edit formats no grammar library expresses ("a run of this file's lines"): our own automata
EDIT_AUTOMATA = {"search_replace": SearchReplaceConstraint, "udiff": UdiffConstraint}
CLOSES_AT = {"python": closes_as_python}  # GrammarSpec.closes_at: may the output close here, given its text
GRAMMARS_KEPT = 64  # checked grammar texts kept, by spec
# JSON without free whitespace: a small model left free to emit whitespace may emit newlines until
# max_tokens; fixed separators also make more of the output forced (drafted whole, verified in one pass).
# tokens left at which a grammar's output is closed (CLOSE_MARGIN beyond its closer), and at which one that
# may end here ends rather than begin another block (a block of definitions needs its path, fence and head)
CLOSE_MARGIN = 8
END_ROOM = 48
# tokens left within which an output closes at the first line end its spec's `closes_at` allows (a symbol
# reply whose code parses there), rather than wherever the budget runs out (mid statement, refused). Small: a
# wider window closed a class whose next method had only its docstring yet (the demo: a stub, refused)
EARLY_CLOSE = 48
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

    def compile(self, spec: GrammarSpec, max_tokens: int | None = None
                ) -> GrammarConstraint | SearchReplaceConstraint | UdiffConstraint:
        """The request's constraint; an edit automaton closes its reply within `max_tokens`."""
        if spec.kind in EDIT_AUTOMATA:
            tokenize = self.ll_tokenizer().tokenize_bytes
            return EDIT_AUTOMATA[spec.kind](self._edit_files(spec), self.token_table(), tokenize, max_tokens)
        llg = _llguidance()
        tokenizer = self.ll_tokenizer()
        matcher = llg.LLMatcher(tokenizer, self.grammar(spec), log_level=0)
        if matcher.is_error():
            raise InvalidRequestError(f"invalid {spec.kind}: {matcher.get_error()}")
        closers = [tokenizer.tokenize_str(c) for c in spec.closers]
        closes_here = CLOSES_AT[spec.closes_at] if spec.closes_at else None
        return GrammarConstraint(matcher, self.eos_token_ids, closers, max_tokens, closes_here,
                                 tokenizer.decode_bytes)


class GrammarConstraint:
    """A TokenConstraint over one llguidance matcher; with `closers` (token runs, cheapest first; [] ends
    here) and `max_tokens`, the first closer the grammar takes from here to an end is forced once the
    budget left comes near it (a grammar library cannot say how to close an output; the spec does). With
    `closes_here` (given the output's text, decoded by `decode`), it is forced earlier: at the first line
    end within EARLY_CLOSE tokens of the budget where `closes_here` holds."""

    def __init__(self, matcher: Any, eos_token_ids: list[int] | None = None,
                 closers: list[list[int]] | None = None, max_tokens: int | None = None,
                 closes_here: Callable[[str], bool] | None = None,
                 decode: Callable[[list[int]], bytes] | None = None):
        self.matcher, self.eos_token_ids = matcher, eos_token_ids or []
        self.closers, self.max_tokens = closers or [], max_tokens
        self.closes_here, self.decode = (closes_here, decode) if decode else (None, None)
        self.emitted = 0
        self.tokens: list[int] = []  # the output so far, kept where `closes_here` reads it
        self._closing: list[int] | None = None  # the closer forced, then the end
        self._closing_at = 0
        self._error: str | None = None

    def fill_mask(self, row: torch.Tensor) -> None:
        if self._closing is None:
            self.matcher.unsafe_compute_mask_ptr(row.data_ptr(), row.numel() * row.element_size())
            return
        row.zero_()
        for token in self._closing_next():
            row[token // 32] |= _bit(token % 32)

    def accept(self, token: int) -> bool:
        if self._error is not None:
            return False
        if self._closing is not None and token not in self._closing_next():
            self._error = "the reply's token budget is left only for closing it"
            return False
        if not self.matcher.consume_token(token):
            return False
        self.emitted += 1
        if self.closes_here:
            self.tokens.append(token)
        self._maybe_close()
        return True

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)
        self.emitted -= num_tokens
        if self.closes_here and num_tokens:
            del self.tokens[-num_tokens:]
        if self._closing is not None and self.emitted < self._closing_at:
            self._closing = None

    def valid_prefix(self, tokens: list[int]) -> int:
        if not self.closers:
            return int(self.matcher.validate_tokens(tokens))
        # accepted and rolled back: acceptance may start the closing, which changes what comes after
        error, n = self._error, 0
        for token in tokens[:self.matcher.validate_tokens(tokens)]:
            if self.matcher.is_stopped() or not self.accept(token):
                break
            n += 1
        self.rollback(n)
        self._error = error
        return n

    def forced_tokens(self) -> list[int]:
        if self._closing is not None:
            return self._closing[self.emitted - self._closing_at:]
        return list(self.matcher.compute_ff_tokens())

    def _closing_next(self) -> list[int]:
        k = self.emitted - self._closing_at
        return [self._closing[k]] if k < len(self._closing) else self.eos_token_ids

    def _maybe_close(self) -> None:
        """Force the first closer that takes the output to an end once the budget left is near its cost
        (ending here: once a further block could not be closed in time)."""
        if self.max_tokens is None or self._closing is not None or self.matcher.is_stopped():
            return
        left = self.max_tokens - self.emitted
        early = left <= EARLY_CLOSE and self._closes_here()
        for closer in self.closers:
            room = (END_ROOM if not closer else CLOSE_MARGIN) + len(closer)
            if (left > room and not (early and closer)) or self.matcher.validate_tokens(closer) < len(closer):
                continue
            self.matcher.consume_tokens(closer)
            accepting = self.matcher.is_accepting()
            self.matcher.rollback(len(closer))
            if accepting:
                self._closing, self._closing_at = closer, self.emitted
                return

    def _closes_here(self) -> bool:
        """At a line end, whether the spec lets the output close here."""
        if not self.closes_here or b"\n" not in self.decode(self.tokens[-1:]):
            return False
        return self.closes_here(self.decode(self.tokens).decode("utf-8", errors="replace"))

    @property
    def done(self) -> bool:
        return bool(self.matcher.is_stopped())

    @property
    def closed_by_budget(self) -> bool:
        return self._closing is not None

    @property
    def error(self) -> str | None:
        if self._error is not None:
            return self._error
        return self.matcher.get_error() if self.matcher.is_error() else None


def _bit(i: int) -> int:
    """Bit i of an int32 word, as the signed value torch stores."""
    return -(1 << 31) if i == 31 else 1 << i
