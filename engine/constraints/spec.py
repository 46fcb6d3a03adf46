"""GrammarSpec: what a request's output must match, as plain data (it travels on SamplingParams)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from deltaserve.engine.constraints.symbol_grammar import SYMBOL_CLOSERS, python_files, symbol_grammar

# OpenAI's response_format json_object: any JSON object
ANY_OBJECT: dict[str, Any] = {"type": "object"}


class GrammarSpec(BaseModel):
    """The output matches a JSON schema (a dict), a regular expression or a Lark grammar (llguidance's
    dialect) from its first token; or it is SEARCH/REPLACE blocks that apply to the given files (source:
    {"files": {path: text}}; engine/constraints/search_replace.py), or a unified diff whose hunks are found
    in them (udiff.py). The symbol edit format is a Lark grammar (`symbol`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["json_schema", "regex", "lark", "search_replace", "udiff"]
    source: str | dict[str, Any]
    # a grammar's ways to close its output, cheapest first ("" = end here): forced near max_tokens, so a
    # reply ends whole rather than cut (the edit automata work theirs out themselves)
    closers: tuple[str, ...] = ()
    # where the output may close early (within EARLY_CLOSE tokens of its budget): "python" = at a line end
    # where the open fence's code parses; None = only at the budget
    closes_at: Literal["python"] | None = None

    @classmethod
    def json_object(cls) -> GrammarSpec:
        return cls(kind="json_schema", source=ANY_OBJECT)

    @classmethod
    def search_replace(cls, files: dict[str, str]) -> GrammarSpec:
        return cls(kind="search_replace", source={"files": dict(files)})

    @classmethod
    def udiff(cls, files: dict[str, str]) -> GrammarSpec:
        return cls(kind="udiff", source={"files": dict(files)})

    @classmethod
    def symbol(cls, paths) -> GrammarSpec:
        """Whole definitions of these files' Python ones (symbol_grammar.py); ValueError without one."""
        return cls(kind="lark", source=symbol_grammar(python_files(paths)), closers=SYMBOL_CLOSERS,
                   closes_at="python")

    def key(self) -> str:
        """A stable text of the spec (compiled grammars are cached by it)."""
        source = self.source if isinstance(self.source, str) else json.dumps(self.source, sort_keys=True)
        return f"{self.kind}:{source}"
