"""The engine's GPU check, for a bare GPU machine (torch, transformers and tokenizers there; pydantic carried
as a wheel by scripts/gpu_check.sh): no model download, no package registry, one process, a few minutes.

1. A random-weight checkpoint at the Qwen2.5-Coder-1.5B shape, written on the device.
2. Parity with transformers on the same device (float32, no TF32): prefill, batch-1 decode, a decode batch of
   8 (the captured-graph path), a 200-token span over 300 cached tokens, and one mixed batch of 8 (prefill
   chunks, decode tokens, verify spans). Logits compared relative to the reference's spread.
3. Host syncs per engine step at batch 8 with sampling on (torch.cuda.set_sync_debug_mode("warn")).
4. bf16 decode at batch 1, 8, 32 (512-token contexts): our engine's step time against HF generate on the same
   device and against the HBM roofline (weights + KV bytes a step reads / the measured copy bandwidth).
Writes gpu_check.json to --out; exits 1 when parity fails. `--device cpu --shape tiny` runs the same code on
CPU in seconds (tests/engine/test_gpu_check_script.py keeps it from rotting).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.attention import flex as flex_module
from deltaserve.engine.forward_batch import Span
from deltaserve.testing.host_syncs import HostSyncCounter

SHAPES = {
    "qwen2.5-coder-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                               num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                               rope_theta=1e6, rms_norm_eps=1e-6),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=512, rms_norm_eps=1e-6),
}
PARITY_TOL = 2e-3  # max |ours - HF| over the reference logits' standard deviation, float32
BATCHES = (1, 8, 32)
CONTEXT = 512  # prompt tokens of each timed sequence
DECODE_STEPS = 64  # timed decode steps per batch size


def make_checkpoint(path: Path, shape: str, device: str) -> None:
    """Random weights and a word-level tokenizer over the vocabulary ("<t7>" is token 7)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen2Config

    config = Qwen2Config(**SHAPES[shape], max_position_embeddings=4096, tie_word_embeddings=True,
                         use_sliding_window=False, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(path)
    tok = Tokenizer(models.WordLevel({f"<t{i}>": i for i in range(config.vocab_size)}, unk_token="<t0>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<t0>", eos_token="<t2>").save_pretrained(path)
    del model


def engine(path: Path, device: str, dtype: str, **config) -> Engine:
    """The CUDA path whatever the device: flex attention and decode on static buffers (graphs on CUDA)."""
    return Engine.from_pretrained(str(path), device=device, dtype=dtype, max_model_len=2048, num_blocks=1200,
                                  speculative="off", attention="flex", decode_graphs=True, **config)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# ---- 2. parity ----

def parity(path: Path, device: str, vocab: int) -> dict:
    from transformers import AutoModelForCausalLM

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).eval()
    eng = engine(path, device, "float32", enable_prefix_caching=False, max_num_seqs=8)
    gen = torch.Generator().manual_seed(1)
    seqs = [torch.randint(3, vocab, (520,), generator=gen).tolist() for _ in range(8)]
    with torch.inference_mode():
        ref = [hf(torch.tensor([s], device=device)).logits[0].float() for s in seqs]
    del hf
    bs = eng.config.block_size
    tables = [list(range(i * 40, i * 40 + 40)) for i in range(8)]  # 640 slots each, apart
    run = eng.runner.logits
    results = {}

    def check(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
        err = float((got.float() - want).abs().max() / want.std())
        results[name] = {"max_err_over_std": err, "ok": err < PARITY_TOL}

    check("prefill 300", run([Span(seqs[0][:300], 0, tables[0], list(range(300)))]), ref[0][:300])
    check("decode batch 1", run([Span([seqs[0][300]], 300, tables[0], [0])]), ref[0][300:301])
    check("span of 200 over 301 cached", run([Span(seqs[0][301:501], 301, tables[0], list(range(200)))]),
          ref[0][301:501])
    for i in range(1, 8):  # seqs 1..7: a prefix of 40 + 10 i tokens in their KV
        run([Span(seqs[i][:40 + 10 * i], 0, tables[i], [])])
    check("decode batch 8", run([Span([s[40 + 10 * i]], 40 + 10 * i, t, [0]) for i, (s, t)
                                 in enumerate(zip(seqs, tables, strict=True)) if i]
                                + [Span([seqs[0][501]], 501, tables[0], [0])]),
          torch.stack([ref[i][40 + 10 * i] for i in range(1, 8)] + [ref[0][501]]))
    mixed = [Span([seqs[0][502]], 502, tables[0], [0])]  # decode
    mixed += [Span(seqs[i][41 + 10 * i:45 + 10 * i], 41 + 10 * i, tables[i], [0, 1, 2, 3]) for i in (1, 2, 3)]
    mixed += [Span(seqs[i][41 + 10 * i:171 + 10 * i], 41 + 10 * i, tables[i], [129]) for i in (4, 5)]
    mixed += [Span([seqs[i][41 + 10 * i]], 41 + 10 * i, tables[i], [0]) for i in (6, 7)]
    want = [ref[0][502]] + [ref[i][41 + 10 * i + j] for i in (1, 2, 3) for j in range(4)]
    want += [ref[i][170 + 10 * i] for i in (4, 5)] + [ref[i][41 + 10 * i] for i in (6, 7)]
    check("mixed batch of 8", run(mixed), torch.stack(want))
    assert bs == eng.config.block_size
    del eng
    return results


# ---- 3. host syncs ----

def syncs_per_step(path: Path, device: str, vocab: int) -> dict:
    eng = engine(path, device, "bfloat16" if device == "cuda" else "float32", max_num_seqs=8)
    gen = torch.Generator().manual_seed(2)
    for i in range(8):
        eng.add_request(torch.randint(3, vocab, (20 + 30 * i,), generator=gen).tolist(),
                        SamplingParams(max_tokens=16, ignore_eos=True, temperature=0.8 if i % 2 else 0.0,
                                       top_p=0.9, seed=i))
    counts = []
    while eng.has_unfinished():
        if device == "cuda":
            torch.cuda.set_sync_debug_mode("warn")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                eng.step()
            torch.cuda.set_sync_debug_mode("default")
            counts.append(sum("synchroniz" in str(w.message) for w in caught))
        else:
            with HostSyncCounter() as counter:
                eng.step()
            counts.append(len(counter.syncs))
    return {"steps": len(counts), "max_syncs_per_step": max(counts), "ok": max(counts) <= 1}


# ---- 4. speed ----

def copy_bandwidth(device: str) -> float:
    """Bytes moved per second (read + write) by a large device-to-device copy."""
    n = (1 << 30) if device == "cuda" else (1 << 26)
    src = torch.empty(n, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    sync(device)
    began = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    sync(device)
    return 2 * n * 10 / (time.perf_counter() - began)


def our_decode_step_s(eng: Engine, batch: int, vocab: int) -> float:
    gen = torch.Generator().manual_seed(3)
    params = SamplingParams(max_tokens=DECODE_STEPS + 2, ignore_eos=True)
    ids = [eng.add_request(torch.randint(3, vocab, (CONTEXT,), generator=gen).tolist(), params)
           for _ in range(batch)]
    while any(eng.requests[r].in_prefill for r in ids):
        eng.step()
    eng.step()  # a first decode step (captures this bucket's graph)
    sync(eng.device.type)
    began = time.perf_counter()
    for _ in range(DECODE_STEPS):
        eng.step()
    sync(eng.device.type)
    seconds = (time.perf_counter() - began) / DECODE_STEPS
    for r in ids:
        eng.abort(r)
    eng.step()
    return seconds


def hf_decode_step_s(hf, batch: int, vocab: int, device: str) -> float:
    """HF generate's time per decode step: (N new tokens - 1 new token) / (N - 1), prefill cancelled out."""
    ids = torch.randint(3, vocab, (batch, CONTEXT), generator=torch.Generator().manual_seed(4)).to(device)

    def timed(new: int) -> float:
        sync(device)
        began = time.perf_counter()
        hf.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
        sync(device)
        return time.perf_counter() - began

    timed(2)  # warm-up
    return (timed(DECODE_STEPS) - timed(1)) / (DECODE_STEPS - 1)


def speed(path: Path, device: str, vocab: int) -> dict:
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    eng = engine(path, device, str(dtype).removeprefix("torch."), max_num_seqs=max(BATCHES))
    weight_bytes = eng.model.weight_bytes()[0]
    m = eng.model
    kv_per_token = 2 * m.num_layers * m.num_kv_heads * m.head_dim * dtype.itemsize
    bandwidth = copy_bandwidth(device)
    ours = {b: our_decode_step_s(eng, b, vocab) for b in BATCHES}
    del eng
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
    theirs = {b: hf_decode_step_s(hf, b, vocab, device) for b in BATCHES}
    rows = {}
    for b in BATCHES:
        roofline = (weight_bytes + b * (CONTEXT + DECODE_STEPS // 2) * kv_per_token) / bandwidth
        rows[b] = {"ours_ms": ours[b] * 1e3, "hf_ms": theirs[b] * 1e3, "roofline_ms": roofline * 1e3,
                   "of_roofline": roofline / ours[b], "vs_hf": theirs[b] / ours[b],
                   "tokens_per_s": b / ours[b]}
    goals = {"batch 1 at least 50% of the roofline": rows[1]["of_roofline"] >= 0.5,
             "batch 1 at least 3x HF generate": rows[1]["vs_hf"] >= 3.0,
             "batch 32 aggregate at least 10x batch 1":
                 rows[max(BATCHES)]["tokens_per_s"] >= 10 * rows[1]["tokens_per_s"]}
    return {"dtype": str(dtype), "copy_bandwidth_gb_s": bandwidth / 1e9, "weight_bytes": weight_bytes,
            "batches": rows, "goals": goals}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu for a check of the script")
    ap.add_argument("--shape", default="qwen2.5-coder-1.5b", choices=sorted(SHAPES))
    ap.add_argument("--out", default=".", help="folder for gpu_check.json")
    ap.add_argument("--skip-speed", action="store_true", help="parity and syncs only")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: torch sees no CUDA device", file=sys.stderr)
        return 2
    kernel = flex_module.flex_attention
    if args.device == "cpu":  # flex is one compiled kernel on CUDA; on CPU, eager and counted as one op
        flex_module.flex_attention = HostSyncCounter.opaque(kernel)
    try:
        return run_checks(args)
    finally:
        flex_module.flex_attention = kernel


def run_checks(args: argparse.Namespace) -> int:
    report = {"torch": torch.__version__, "python": platform.python_version(), "device": args.device,
              "shape": args.shape}
    if args.device == "cuda":
        report["gpu"] = torch.cuda.get_device_name(0)
    began = time.perf_counter()
    vocab = SHAPES[args.shape]["vocab_size"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model"
        make_checkpoint(path, args.shape, args.device)
        steps = [("parity", parity), ("syncs", syncs_per_step)]
        steps += [] if args.skip_speed else [("speed", speed)]
        for name, step in steps:
            t0 = time.perf_counter()
            report[name] = step(path, args.device, vocab)
            report[name]["seconds"] = round(time.perf_counter() - t0, 1)
            print(f"gpu_check {name}: {json.dumps(report[name])}", flush=True)
            (out / "gpu_check.json").write_text(json.dumps(report, indent=1))
    report["seconds"] = round(time.perf_counter() - began, 1)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1))
    parity_ok = all(case["ok"] for name, case in report["parity"].items() if name != "seconds")
    print(f"gpu_check: parity {'passed' if parity_ok else 'FAILED'}; report in {out / 'gpu_check.json'}")
    return 0 if parity_ok else 1


if __name__ == "__main__":
    sys.exit(main())
