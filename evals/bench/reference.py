"""What the engine-vs-HF benchmarks share: the HF reference model, prompts of real text, their options."""

from __future__ import annotations

import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from deltaserve.engine import Engine
from deltaserve.engine.loader import resolve_model_dir


def hf_model(name: str, dtype: str):
    """The same checkpoint as ours, loaded by transformers (a GGUF is converted first)."""
    return AutoModelForCausalLM.from_pretrained(resolve_model_dir(name), dtype=getattr(torch, dtype)).eval()


def hf_generate_s(hf, ids: list[int], new_tokens: int, streamer=None) -> float:
    """Wall seconds of HF greedy generate() producing exactly new_tokens tokens."""
    x = torch.tensor([ids])
    t = time.perf_counter()
    with torch.inference_mode():
        hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens,
                    min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, streamer=streamer)
    return time.perf_counter() - t


def synthetic_prompt(eng: Engine, n_tokens: int) -> list[int]:
    """Real text (the benchmarks' own source files), cut to n_tokens."""
    text = "".join(p.read_text() for p in sorted(Path(__file__).parent.glob("*.py")))
    ids = eng.tokenizer(text)["input_ids"]
    while len(ids) < n_tokens:
        ids = ids + ids
    return ids[:n_tokens]


def dtype_list(text: str) -> list[str]:
    """`--dtype bfloat16,float32` as a list."""
    return [d.strip() for d in text.split(",") if d.strip()]


def add_engine_arguments(parser) -> None:
    """The options both engine-vs-HF benchmarks take."""
    parser.add_argument("--model", default="smollm2-135m", help="model name or path (default: %(default)s)")
    parser.add_argument("--dtype", default="bfloat16,float32",
                        help="comma-separated dtypes; prefix uses the first (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="timed repeats, the median is shown (default: %(default)s)")
