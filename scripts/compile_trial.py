"""torch.compile on the batch-1 decode step, against the eager step, in one run (issue 14's trial).

The compiled step is the whole decode forward for one sequence held in consecutive KV blocks (all layers:
norms, projections, rotary, KV writes, one-token SDPA on a view of the pool) as one graph, the context
length dynamic; anything else (prefill, batches, scattered blocks) stays eager. Decode ms/token at ~50 and
~2,000 tokens of context, medians of rounds that alternate eager and compiled, and the greedy tokens of both.

    python scripts/compile_trial.py smollm2-135m --threads 2

Measured 2026-12-01 (AMD EPYC, 1 thread, torch 2.13 CPU, int4 weights, the box also running an eval):
SmolLM2-135M eager 10.5 / 21.6 ms, compiled 12.0 / 22.9 ms, 88 s of warm-up, the same 64 greedy tokens;
compiling each layer's two halves apart (attention eager) was slower too (12.9 / 27.0 vs 11.8 / 24.5 ms).
So the engine does not compile: Inductor keeps torch's int4 kernel as an extern call and its fused
elementwise kernels do not make up for its wrapper per call. Measured 2026-12-03 (2-core AMD EPYC Zen 1,
AVX2, 1 thread, `--dtype auto` = float32 + w8a8): eager 49.6 / 71.1 ms, compiled 66.7 / 88.1 ms, the same
64 greedy tokens: dynamo cannot trace fbgemm's packed weights (a TorchScript object; "Missing as_proxy()"),
so the frame falls back to eager around small compiled pieces. On CUDA, compiling with CUDA graphs
(mode="reduce-overhead") is the case to try when a GPU is at hand.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine import model as model_module
from deltaserve.evals.bench.reference import synthetic_prompt

EAGER_FORWARD = model_module.LlamaModel.forward


def decode_step(model, ids, positions, slots, start: int, keys: int, k_layers, v_layers):
    """The batch-1 decode forward up to the final norm, the context at pool slots start .. start + keys."""
    nh, nkv, hd = model.num_heads, model.num_kv_heads, model.head_dim
    x = F.embedding(ids, model.embed)
    cos, sin = model.cos[positions], model.sin[positions]
    width = (nh + nkv) * hd
    for i, layer in enumerate(model.layers):
        h = F.rms_norm(x, (model.hidden_size,), layer.in_norm, model.eps)
        qkv = layer.qkv(h)
        qk = qkv[:, :width].view(1, nh + nkv, hd)
        if layer.qk_norm is not None:
            qk = F.rms_norm(qk, (hd,), None, model.eps) * layer.qk_norm
        qk = qk * cos + torch.roll(qk, hd // 2, dims=-1) * sin
        q, k, v = qk[:, :nh], qk[:, nh:], qkv[:, width:].view(1, nkv, hd)
        k_layers[i].index_copy_(1, slots, k.transpose(0, 1))
        v_layers[i].index_copy_(1, slots, v.transpose(0, 1))
        keys_i, values_i = k_layers[i].narrow(1, start, keys), v_layers[i].narrow(1, start, keys)
        o = F.scaled_dot_product_attention(q.reshape(1, nkv, -1, hd), keys_i[None], values_i[None], scale=1.0)
        x = x + layer.o(o.reshape(1, -1))
        h = F.rms_norm(x, (model.hidden_size,), layer.post_norm, model.eps)
        gate, up = layer.gu(h).chunk(2, dim=-1)
        x = x + layer.down(F.silu(gate) * up)
    return x


compiled_step = torch.compile(decode_step, dynamic=True)


def compiled_forward(self, batch, kv):
    group = batch.groups[0] if len(batch.groups) == 1 else None
    if batch.input_ids.shape[0] != 1 or group is None or group.kv_start is None or group.kv_index is None:
        return EAGER_FORWARD(self, batch, kv)
    x = compiled_step(self, batch.input_ids, batch.positions, batch.slots, group.kv_start,
                      group.kv_index.shape[1], kv.k_layers, kv.v_layers)
    return self.lm_head(F.rms_norm(x, (self.hidden_size,), self.final_norm, self.eps)).float()


def decode(engine: Engine, ids: list[int], tokens: int) -> tuple[float, list[int]]:
    out = engine.generate(ids, SamplingParams(max_tokens=tokens, ignore_eos=True))[0]
    return 1000 * out.metrics.decode_s / out.metrics.decode_passes, out.token_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="bundled name, HF dir or .gguf")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=64, help="decode tokens per measurement")
    parser.add_argument("--dtype", default="auto", help="auto (the engine's per-CPU choice), bfloat16, ...")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = Engine.from_pretrained(args.model, dtype=args.dtype, enable_prefix_caching=False,
                                    speculative="off", max_num_batched_tokens=2048, max_num_seqs=1,
                                    num_blocks=140)
    short, long = synthetic_prompt(engine, 50), synthetic_prompt(engine, 2000)
    decode(engine, short, 8)
    forwards = {"eager": EAGER_FORWARD, "compiled": compiled_forward}
    model_module.LlamaModel.forward = compiled_forward
    began = time.perf_counter()
    decode(engine, short, 4)
    decode(engine, long, 4)
    print(f"compile warm-up {time.perf_counter() - began:.1f} s")
    ms: dict[str, list[tuple[float, float]]] = {name: [] for name in forwards}
    tokens: dict[str, list[int]] = {}
    for _ in range(args.rounds):
        for name, forward in forwards.items():
            model_module.LlamaModel.forward = forward
            (a, tokens[name]), (b, _) = decode(engine, short, args.tokens), decode(engine, long, args.tokens)
            ms[name].append((a, b))
    model_module.LlamaModel.forward = EAGER_FORWARD
    for name, rows in ms.items():
        d50, d2k = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"{name:9s} decode ms/token ~50 ctx {d50:6.2f}   ~2k ctx {d2k:6.2f}")
    same = sum(a == b for a, b in zip(tokens["eager"], tokens["compiled"], strict=True))
    print(f"greedy tokens equal: {same} of {len(tokens['eager'])}")


if __name__ == "__main__":
    main()
