"""harness/tokens.py: a bundled model's tokens counted with its tokenizer alone (no engine, torch or
litellm), the same counts as the transformers tokenizer the engine uses."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest
from transformers import AutoTokenizer

from deltaserve.engine.model_source import tokenizer_dir
from deltaserve.harness.tokens import TokenCounter

TEXTS = ["", " leading space", "def f():\n\treturn  1\n", "ünïcödé 日本語 😀",
         "<|im_start|>user\nhi<|im_end|>",
         "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n-    return a - b\n+    return a + b\n"]


def test_a_bundled_name_loads_only_its_tokenizer():
    code = ("import sys; from deltaserve.harness import TokenCounter; "
            "c = TokenCounter('local/smollm2-135m'); print(c.count('def add(a, b): return a + b'), "
            "[m for m in ('torch', 'litellm', 'transformers', 'deltaserve.engine.engine') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}).stdout
    reference = AutoTokenizer.from_pretrained(tokenizer_dir("smollm2-135m"))
    assert out.split(" ", 1) == [str(len(reference.encode("def add(a, b): return a + b",
                                                           add_special_tokens=False))), "[]\n"]


@pytest.mark.parametrize("model", ["smollm2-135m", "local/smollm2-135m", "openai/smollm2-135m"])
def test_counts_are_the_engine_tokenizer_s(model):
    reference = AutoTokenizer.from_pretrained(tokenizer_dir("smollm2-135m"))
    counter = TokenCounter(model)
    assert [counter(t) for t in TEXTS] == [len(reference.encode(t, add_special_tokens=False)) for t in TEXTS]


def test_a_model_directory_by_its_path(tiny_llama):
    assert TokenCounter(str(tiny_llama)).count("hello world") == 2


def test_a_loaded_engine_s_tokenizer_comes_first(monkeypatch):
    engine_tokenizer = types.SimpleNamespace(encode=lambda text, add_special_tokens: text.split())
    provider = types.SimpleNamespace(
        loaded_tokenizer=lambda model: engine_tokenizer if model == "local/x" else None)
    monkeypatch.setitem(sys.modules, "deltaserve.harness.local_provider", provider)
    assert TokenCounter("local/x").count("a b c") == 3
    assert TokenCounter("local/smollm2-135m").tokenizer is not engine_tokenizer


def test_a_model_without_a_tokenizer_here_is_counted_by_litellm():
    assert TokenCounter("openai/gpt-4o-mini").tokenizer is None
