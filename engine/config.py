"""EngineConfig: every knob of the engine in one validated place."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SpeculativeMethod = Literal["ngram", "suffix", "off"]
SPECULATIVE_METHODS: tuple[str, ...] = get_args(SpeculativeMethod)
DEFAULT_SPECULATIVE: SpeculativeMethod = "ngram"
CompileDecode = Literal["off", "on", "auto"]  # engine/compiled_decode.py, engine/background_compile.py


class EngineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "smollm2-135m"
    # Download a hub id missing from the local Hugging Face cache (never under HF_HUB_OFFLINE)
    allow_download: bool = False
    # "auto": bfloat16 on CUDA and on CPUs with native bf16 matmuls (faster than float32 there: bench engine
    # --ours fp32,bf16), float32 on CPUs that would emulate them (engine/quant.py default_dtype).
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str = "auto"  # "auto" -> cuda when available, else cpu
    num_threads: int | None = Field(default=None, ge=1)  # CPU intra-op threads; None keeps torch's default
    # Quantized linear layers (engine/quant.py): int4 / int8 weight-only, w8a8 int8 weights and per-row
    # int8 activations (fbgemm, x86); the KV cache keeps `dtype`.
    # "auto" on CPU: quant.preferred_quant (w8a8 where fbgemm runs, x86; int4 elsewhere); none on CUDA and
    # for a float32 asked for (fp32 is the reference mode).
    quant: Literal["auto", "none", "int8", "int4", "w8a8"] = "auto"
    # int4 inputs per scale/zero. 32 = GGUF's Q4 block, so a 4-bit GGUF keeps its levels: 64 / 128 decode the
    # 1.5B model ~12% faster on AVX-512 but cost perplexity, SmolLM2 +32% / +41%, the 1.5B +3.1% / +5.2%
    # (32: +0.3% / +1.4%; `bench accuracy --ours int4 --group-sizes 32,64,128`; docs/benchmarks.md).
    quant_group_size: Literal[32, 64, 128, 256] = 32
    # The LM head's precision: "auto" = int8 with dynamic int8 activations (fbgemm) when the layers are
    # quantized, where fbgemm runs; bf16 otherwise (engine/quant.py head_quant_for). int4 is the fastest
    # and the least accurate (docs/benchmarks.md, bench accuracy).
    quant_lm_head: Literal["auto", "none", "int8", "int4"] = "auto"

    # Attention over the paged pool (engine/attention/): "auto" = "flex" (flex_attention, compiled) on CUDA,
    # "gather" (the CPU kernels, faster there) on CPU.
    attention: Literal["auto", "gather", "flex", "deterministic"] = "auto"
    # Decode steps replayed as CUDA graphs per batch-size bucket (engine/decode_graphs.py; flex attention
    # only). None: on CUDA. True on CPU runs the same static buffers eagerly (how the tests check them).
    decode_graphs: bool | None = None
    # Batch-1 decode steps through torch.compile on CPU (engine/compiled_decode.py): the small ops between
    # the matmuls fused into C++ kernels. A compile takes tens of seconds on 2 cores (a few with inductor's
    # cache warm). "on": the first decode step compiles, on the step thread. "auto": a thread of its own
    # compiles while the steps run eagerly, and the compiled step is kept only if it wins a timed trial
    # (engine/background_compile.py); nothing off CPU, where CUDA graphs do this. "off" by default here (a
    # one-shot run saves less than a compile costs); `deltaserve serve` defaults to "auto".
    compile_decode: CompileDecode = "off"

    # Paged KV cache: num_blocks wins over kv_cache_memory_mb; both None -> a device-dependent default.
    block_size: int = Field(default=16, ge=1, le=1024)
    num_blocks: int | None = Field(default=None, ge=1)
    kv_cache_memory_mb: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=2)  # capped by the model and by the pool size

    # Scheduler: token budget of one forward pass (the chunked-prefill chunk) and the batch cap.
    max_num_batched_tokens: int = Field(default=2048, ge=1)
    max_num_seqs: int = Field(default=16, ge=1)
    enable_prefix_caching: bool = True
    # Disk tier under the prefix cache (engine/kv_disk.py): full KV blocks under <dir>/kv/<model
    # fingerprint>/, reused by later processes; None = off. Bounded by kv_cache_max_gb (LRU by bytes).
    kv_cache_dir: str | None = None
    kv_cache_max_gb: float = Field(default=10.0, gt=0)
    scheduling_policy: Literal["fcfs", "cache_aware"] = "fcfs"

    # Speculative decoding (engine/speculative.py): drafts verified in one forward pass. The method drafts
    # requests without a `prediction` (and those whose prediction has nothing to offer): "ngram" (prompt
    # lookup, the default: `deltaserve bench spec` measured suffix drafts within 5% of its decode passes on
    # forced edits and agent replays, with wider verify passes), "suffix" (engine/suffix_drafter.py) or
    # "off". True / False (the old boolean) mean the default / "off".
    speculative: SpeculativeMethod = DEFAULT_SPECULATIVE
    num_speculative_tokens: int = Field(default=8, ge=1)  # prompt-lookup and prediction drafts
    prompt_lookup_min: int = Field(default=2, ge=1)
    prompt_lookup_max: int = Field(default=4, ge=1)
    suffix_max_draft_tokens: int = Field(default=32, ge=1)  # a long match may draft this far
    # A draft token's share of a decode pass (its row in the verify pass): drafts go as far as expected tokens
    # per second grow (engine/draft_budget.py). None: the time of a pass of each width is measured from this
    # engine's own batch-1 passes (a row ~0.01 of a pass on a memory-bound GPU, ~0.5 on a compute-bound CPU,
    # plus any fixed cost of a verify pass); a number pins a row's share (and no fixed cost).
    draft_token_cost: float | None = Field(default=None, gt=0.0, lt=1.0)
    suffix_history_tokens: int = Field(default=65536, ge=0)  # recent outputs kept for drafting, all salts

    # Same input, same output: greedy text that does not depend on what the request is batched with or on
    # how much of its prompt came from the cache. Float32 weights and activations, no quantization, attention
    # and linears with fixed shapes and summation orders (engine/attention/deterministic.py); slower.
    deterministic: bool = False

    @model_validator(mode="after")
    def _deterministic_settings(self):
        if not self.deterministic:
            return self
        for name, allowed in (("dtype", ("auto", "float32")), ("quant", ("auto", "none")),
                              ("attention", ("auto", "deterministic"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"deterministic mode computes with {name}={allowed[-1]!r}, not "
                                 f"{getattr(self, name)!r}")
        self.dtype, self.quant, self.attention, self.decode_graphs = "float32", "none", "deterministic", False
        return self

    @field_validator("quant_lm_head", mode="before")
    @classmethod
    def _boolean_means_int4_or_auto(cls, value):  # the field was a bool: True stored the head int4
        if isinstance(value, bool):
            return "int4" if value else "auto"
        return value

    @field_validator("compile_decode", mode="before")
    @classmethod
    def _boolean_means_on_or_off(cls, value):  # the field was a bool
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    @field_validator("speculative", mode="before")
    @classmethod
    def _boolean_means_default_or_off(cls, value):
        if isinstance(value, bool):
            return DEFAULT_SPECULATIVE if value else "off"
        return value
