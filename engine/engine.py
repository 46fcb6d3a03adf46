"""Engine: requests in, tokens out, one scheduler step (= one forward pass) at a time.

Low level (the server drives this from one worker thread; the engine is not thread-safe):
    rid = eng.add_request(prompt, params); outs = eng.step(); eng.abort(rid); eng.has_unfinished()
High level: eng.generate(prompts, params) and eng.stream(prompt, params).

Speculative decoding plugs in through `self.drafter` (built by engine.speculative.make_drafter(engine)
unless config.speculative is "off"): before each step `drafter.propose(seq) -> list[int]` may give a
decoding sequence draft tokens (naming their drafter in `seq.draft_source`, for the counters), and
`drafter.finished(seq)` hears of every request that ends; a drafter with a `cost`
(engine/draft_budget.py's DraftCost) is told the time of every lone decoding sequence's pass, so it drafts
only as far as drafts pay on this machine. The step computes the drafts in the same pass
(a verify span), accepts the longest prefix that matches what the sampler picks at each position, and
rolls the KV back past the first mismatch by truncating the sequence's computed length.
Sampling-then-comparing is exact for deterministic drafts: a draft d is kept with probability p(d),
otherwise the sampled token is distributed as p without d.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Iterator
from collections.abc import Sequence as Seq

import torch
from pydantic import ValidationError

from deltaserve.engine.config import EngineConfig
from deltaserve.engine.constraints import GrammarCompiler, fill_span_masks, words_per_row
from deltaserve.engine.errors import ContextLengthError, EngineError, InvalidRequestError
from deltaserve.engine.forward_batch import Span
from deltaserve.engine.kv_cache import KVCache, bytes_per_block, default_num_blocks
from deltaserve.engine.kv_disk import DiskKVStore, DiskTier, model_fingerprint
from deltaserve.engine.loader import LoadedModel, load_model
from deltaserve.engine.model import LlamaModel, max_positions_for
from deltaserve.engine.model_runner import ModelRunner
from deltaserve.engine.outputs import DraftCounts, EngineStats, RequestOutput, TokenLogprob, add_drafts
from deltaserve.engine.passing_thread import on_passing_thread
from deltaserve.engine.prefix_cache import BlockManager
from deltaserve.engine.quant import QuantMode, default_dtype, resolve_quant
from deltaserve.engine.sampler import Sampled, SamplingBatch, SamplingParams, position_generator, request_seed
from deltaserve.engine.scheduler import ScheduledSpan, Scheduler
from deltaserve.engine.sequence import Sequence, Status
from deltaserve.engine.speculative import make_drafter

log = logging.getLogger(__name__)

# Drafts a constrained request makes of its forced tokens (the grammar's fixed text) when speculation is off
MAX_FORCED_DRAFTS = 16
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
PromptLike = str | list[int]


def next_token(seq: Sequence, sampled: int) -> int:
    """The token `seq` emits at its next position: forced (teacher forcing), else the one sampled for it."""
    forced = seq.params.forced_token_ids
    return sampled if forced is None else forced[seq.num_output_tokens]


def _counted(rows: list[tuple[Sequence, int]]) -> list[list[int]] | None:
    """The tokens each wanted row's penalties count: its request's generated ones, then the drafts before it
    (row j of a verify span follows drafts[:j], so drafting never changes a penalised request's tokens)."""
    if not any(seq.params.penalized for seq, _ in rows):
        return None
    return [seq.output_token_ids + seq.draft_token_ids[:j] if seq.params.penalized else [] for seq, j in rows]


def resolve_precision(config: EngineConfig) -> tuple[torch.device, torch.dtype, QuantMode]:
    """The device, dtype and quantization `config` comes to on this machine (probing the CPU's kernels)."""
    device = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if config.device == "auto" else config.device
    )
    dtype = default_dtype(device) if config.dtype == "auto" else DTYPES[config.dtype]
    return device, dtype, resolve_quant(config.quant, device, dtype, dtype_chosen=config.dtype == "auto")


class Engine:
    def __init__(self, loaded: LoadedModel, config: EngineConfig,
                 precision: tuple[torch.device, torch.dtype, QuantMode] | None = None):
        self.config = config
        self.model_name = loaded.name
        self.hf_config = loaded.hf_config
        self.device, self.dtype, self.quant = precision or resolve_precision(config)
        if config.num_threads:
            torch.set_num_threads(config.num_threads)

        max_positions = max_positions_for(loaded.hf_config, config.max_model_len)
        self.model = LlamaModel(loaded.hf_config, loaded.weights, self.dtype, self.device, max_positions,
                                self.quant, config.quant_group_size, config.quant_lm_head)
        loaded.weights = {}  # the model holds its own (fused, cast) copies
        self.tokenizer = loaded.tokenizer  # loaded meanwhile on a thread of its own
        self.eos_token_ids = set(loaded.eos_token_ids)
        m = self.model
        per_block = bytes_per_block(m.num_layers, config.block_size, m.num_kv_heads, m.head_dim, m.kv_dtype)
        num_blocks = config.num_blocks
        if num_blocks is None:  # a memory budget, but no more than max_num_seqs full-length sequences need
            useful = config.max_num_seqs * -(-max_positions // config.block_size)
            budget = default_num_blocks(per_block, self.device, config.kv_cache_memory_mb, self.dtype)
            num_blocks = min(useful, budget)
        self.max_model_len = min(max_positions, num_blocks * config.block_size)
        self.kv = KVCache(m.num_layers, num_blocks, config.block_size, m.num_kv_heads, m.head_dim,
                          m.kv_dtype, self.device)
        self.runner = ModelRunner(m, self.kv, config.block_size, config.attention, config.decode_graphs,
                                  config.max_num_seqs, config.compile_decode)
        use_disk = config.kv_cache_dir and config.enable_prefix_caching
        self.kv_disk = self._disk_store(loaded) if use_disk else None
        tier = DiskTier(self.kv_disk, self.kv) if self.kv_disk is not None else None
        self.blocks = BlockManager(num_blocks, config.block_size, config.enable_prefix_caching, tier, self.kv)
        self.scheduler = Scheduler(config, self.blocks)
        self.requests: dict[str, Sequence] = {}
        self._finished_pending: list[Sequence] = []  # aborted since the last step
        self._ids = itertools.count()
        self.draft_tokens = 0
        self.accepted_draft_tokens = 0
        self.draft_counts: dict[str, DraftCounts] = {}
        self.drafter = make_drafter(self) if config.speculative != "off" else None
        self.grammars = GrammarCompiler(self.tokenizer, m.vocab_size, sorted(self.eos_token_ids))

    def _disk_store(self, loaded: LoadedModel) -> DiskKVStore:
        c = self.config
        # KV computed with quantized weights is not another model's KV; the device too ("auto" resolves by it)
        quant = f"{self.quant}:{c.quant_group_size}:{c.quant_lm_head}:{self.device.type}"
        kv_dtype = self.model.kv_dtype
        fingerprint = model_fingerprint(loaded.source_dir, loaded.hf_config, kv_dtype, c.block_size, quant)
        return DiskKVStore(c.kv_cache_dir, fingerprint, int(c.kv_cache_max_gb * 2**30))

    @classmethod
    def from_pretrained(cls, name_or_path: str = "smollm2-135m", **config) -> Engine:
        cfg = config.pop("config", None) or EngineConfig(model=str(name_or_path), **config)
        if cfg.num_threads:  # for this thread too: each thread takes torch's thread count when it first runs
            torch.set_num_threads(cfg.num_threads)

        def load() -> Engine:
            # the precision first: its probes take milliseconds alone, but ~0.9 s of waits for the GIL
            # beside the tokenizer's thread that load_model starts (the 1.5B model's second start, 2 cores)
            precision = resolve_precision(cfg)
            return cls(load_model(cfg.model, cfg.allow_download), cfg, precision)

        # loaded on a thread that ends: the thread that steps the engine keeps the only OpenMP pool
        return on_passing_thread(load)

    # ---- requests ----

    def apply_chat_template(self, messages: list[dict], tools: list[dict] | None = None,
                            add_generation_prompt: bool = True) -> list[int]:
        """The prompt ids of `messages` through the model's chat template; `tools` (OpenAI's function tools)
        are rendered by the template itself, as transformers passes them."""
        try:
            ids = self.tokenizer.apply_chat_template(messages, tools=tools, tokenize=True,
                                                     add_generation_prompt=add_generation_prompt)
        except Exception as exc:  # template errors (bad roles, missing content) are the caller's
            raise InvalidRequestError(f"cannot apply the chat template: {exc}") from exc
        if not isinstance(ids, list):
            ids = ids["input_ids"]
        return list(ids)

    def tokenize(self, prompt: PromptLike) -> list[int]:
        if isinstance(prompt, str):
            ids = self.tokenizer(prompt)["input_ids"]
        elif isinstance(prompt, list | tuple) and all(
                isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            ids = list(prompt)
            bad = [t for t in ids if not 0 <= t < self.model.vocab_size]
            if bad:
                raise InvalidRequestError(f"token ids out of range [0, {self.model.vocab_size}): {bad[:5]}")
        else:
            raise InvalidRequestError("a prompt is a string or a list of token ids")
        if not ids:
            raise InvalidRequestError("the prompt is empty")
        return ids

    def add_request(self, prompt: PromptLike, params: SamplingParams | dict | None = None,
                    request_id: str | None = None, cache_salt: str | None = None) -> str:
        """Validate and queue a request; return its id. Raises InvalidRequestError, changing nothing."""
        params = self._params(params)
        ids = self.tokenize(prompt)
        if len(ids) >= self.max_model_len:  # at least one token must be left to generate
            raise ContextLengthError(len(ids), self.max_model_len)
        if params.forced_token_ids is not None:
            bad = [t for t in params.forced_token_ids if not 0 <= t < self.model.vocab_size]
            if not params.forced_token_ids or bad:
                raise InvalidRequestError(
                    f"forced_token_ids must be non-empty token ids in range; bad: {bad[:5]}")
            if params.logprobs is not None:
                raise InvalidRequestError("forced_token_ids and logprobs cannot be combined")
        if cache_salt is not None and not isinstance(cache_salt, str):
            raise InvalidRequestError("cache_salt must be a string")
        rid = request_id if request_id is not None else f"req-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        if rid in self.requests:
            raise InvalidRequestError(f"request id {rid!r} is already in use")
        constraint = None
        if params.grammar is not None:
            if params.forced_token_ids is not None:
                raise InvalidRequestError("forced_token_ids and a grammar cannot be combined")
            budget = min(params.max_tokens, self.max_model_len - len(ids))
            constraint = self.grammars.compile(params.grammar, budget)
        seq = Sequence(rid, ids, params, cache_salt, request_seed(params), constraint)
        self.requests[rid] = seq
        self.scheduler.add(seq)
        return rid

    def _params(self, params) -> SamplingParams:
        if params is None:
            return SamplingParams()
        if isinstance(params, SamplingParams):
            try:
                return SamplingParams.model_validate(params.model_dump())
            except ValidationError as exc:
                raise InvalidRequestError(f"invalid sampling params: {exc}") from exc
        if isinstance(params, dict):
            try:
                return SamplingParams(**params)
            except ValidationError as exc:
                raise InvalidRequestError(f"invalid sampling params: {exc}") from exc
        raise InvalidRequestError(f"params must be SamplingParams or a dict, not {type(params).__name__}")

    def abort(self, request_id: str) -> None:
        """Free the request's KV blocks now; the next step() reports it finished with reason "abort"."""
        seq = self.requests.get(request_id)
        if seq is None or seq.finished:
            return
        self.scheduler.remove(seq)
        seq.finish("abort")
        self._finished_pending.append(seq)

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished() or bool(self._finished_pending)

    def stats(self) -> EngineStats:
        return EngineStats(
            **self.blocks.counts(),
            num_running=len(self.scheduler.running),
            num_waiting=len(self.scheduler.waiting),
            preemptions=self.scheduler.num_preemptions,
            draft_tokens=self.draft_tokens,
            accepted_draft_tokens=self.accepted_draft_tokens,
            drafts={name: c.model_copy() for name, c in self.draft_counts.items()},
        )

    # ---- one step ----

    def step(self) -> list[RequestOutput]:
        """One scheduler step = one forward pass: schedule -> run (the model runner) -> postprocess."""
        outputs = [self._emit(seq) for seq in self._finished_pending]
        self._finished_pending.clear()
        if self.drafter is not None or any(seq.constraint for seq in self.scheduler.running):
            self._propose_drafts()
        plan = self.scheduler.schedule()
        if not plan.spans:
            return outputs
        try:
            sampled = self._run(plan.spans)
        except Exception as exc:  # the whole pass failed: fail its requests, keep the engine alive
            log.exception("forward pass failed")
            return outputs + self._fail(plan.spans, f"forward pass failed: {type(exc).__name__}: {exc}")
        return outputs + self._postprocess(plan.spans, sampled)

    def _run(self, scheduled: list[ScheduledSpan]) -> list[Sampled]:
        """Each span's sampled tokens (and logprobs), one per wanted row (the model runner: inputs, forward,
        sampling)."""
        spans = [self._span(sp) for sp in scheduled]
        rows = [(sp.seq, j) for sp, span in zip(scheduled, spans, strict=True)
                for j in range(len(span.logits_offsets))]
        generators = [None if seq.seed is None
                      else position_generator(seq.seed, seq.num_output_tokens + j, self.device)
                      for seq, j in rows]
        masks = self._masks(scheduled, len(rows))
        began = time.perf_counter()
        batch = SamplingBatch([s.params for s, _ in rows], generators, self.device, masks, _counted(rows))
        sampled = self.runner.sample(spans, batch)
        self._time_pass(scheduled, time.perf_counter() - began)
        per_span, row = [], 0
        for span in spans:
            end = row + len(span.logits_offsets)
            per_span.append(Sampled(sampled.tokens[row:end], sampled.logprobs and sampled.logprobs[row:end]))
            row = end
        return per_span

    def _masks(self, scheduled: list[ScheduledSpan], num_rows: int) -> torch.Tensor | None:
        """The wanted rows' allowed-token bitmasks when any constrained request samples this step."""
        if not any(sp.seq.constraint is not None and sp.completes for sp in scheduled):
            return None
        masks = torch.full((num_rows, words_per_row(self.model.vocab_size)), -1, dtype=torch.int32,
                           pin_memory=self.device.type == "cuda")
        row = 0
        for sp in scheduled:
            if not sp.completes:
                continue
            width = sp.num_drafts + 1
            if sp.seq.constraint is not None:
                drafts = sp.seq.draft_token_ids[:sp.num_drafts]
                fill_span_masks(sp.seq.constraint, drafts, masks[row:row + width])
            row += width
        return masks

    def _fail(self, scheduled: list[ScheduledSpan], error: str) -> list[RequestOutput]:
        outputs = []
        for sp in scheduled:
            sp.seq.finish("error", error)
            self.scheduler.remove(sp.seq)
            outputs.append(self._emit(sp.seq))
        return outputs

    def _postprocess(self, scheduled: list[ScheduledSpan], sampled: list[Sampled]) -> list[RequestOutput]:
        """Accept drafts, append tokens, finish requests; the step's outputs."""
        outputs = []
        for sp, tokens in zip(scheduled, sampled, strict=True):
            seq = sp.seq
            produced = False
            try:
                produced = self._advance(sp, tokens)
            except Exception as exc:  # this request alone fails; the batch goes on
                log.exception("request %s failed", seq.request_id)
                seq.finish("error", f"{type(exc).__name__}: {exc}")
            if seq.finished:
                self.scheduler.remove(seq)
                outputs.append(self._emit(seq))
            else:
                self.blocks.cache_full_blocks(seq)
                if produced:
                    outputs.append(self._emit(seq))
        return outputs

    def _span(self, sp: ScheduledSpan) -> Span:
        seq = sp.seq
        width = sp.num_tokens + sp.num_drafts
        wanted = list(range(sp.num_tokens - 1, width)) if sp.completes else []
        return Span(sp.token_ids, sp.start, seq.block_table, wanted)

    def _time_pass(self, spans: list[ScheduledSpan], seconds: float) -> None:
        """A lone decoding sequence's pass (plain or verifying drafts) teaches the drafter what a draft row
        costs here."""
        cost = getattr(self.drafter, "cost", None)  # a plugged-in drafter may not budget its drafts
        if cost is not None and len(spans) == 1 and spans[0].num_tokens == 1 and spans[0].completes \
                and not spans[0].seq.in_prefill:
            cost.observe(1 + spans[0].num_drafts, seconds)

    def _propose_drafts(self) -> None:
        """Drafts for every decoding sequence: the drafter's, cut where a request's constraint would refuse
        them; a constrained request whose next tokens the constraint alone decides drafts those instead."""
        k = self.drafter.max_draft_tokens if self.drafter is not None else MAX_FORCED_DRAFTS
        for seq in self.scheduler.running:
            seq.draft_token_ids = []
            if seq.in_prefill or seq.num_tokens - seq.num_computed_tokens != 1:
                continue
            room = min(k, seq.params.max_tokens - seq.num_output_tokens - 1,
                       self.max_model_len - seq.num_tokens - 1)
            if room <= 0:
                continue
            try:
                if self.drafter is not None:
                    seq.draft_token_ids = list(self.drafter.propose(seq))[:room]
                if seq.constraint is not None:
                    self._constrain_drafts(seq, room)
            except Exception:
                log.exception("drafter failed for %s; no drafts this step", seq.request_id)
                seq.draft_token_ids = []

    @staticmethod
    def _constrain_drafts(seq: Sequence, room: int) -> None:
        drafts = seq.draft_token_ids[:seq.constraint.valid_prefix(seq.draft_token_ids)]
        if not drafts:
            drafts = seq.constraint.forced_tokens()[:room]
            seq.draft_source = "grammar"
        seq.draft_token_ids = drafts

    def _advance(self, sp: ScheduledSpan, sampled: Sampled) -> bool:
        """Account for a computed span; sample (and verify drafts) if it completed. True if tokens came."""
        seq = sp.seq
        was_prefill = seq.in_prefill
        seq.num_computed_tokens += sp.num_tokens
        if was_prefill:
            seq.metrics.prefill_tokens_computed += sp.num_tokens
        if not sp.completes:
            return False
        drafts = seq.draft_token_ids[: sp.num_drafts]
        tokens: list[int] = []
        for j in range(len(drafts) + 1):
            tokens.append(next_token(seq, sampled.tokens[j]))
            if j == len(drafts) or tokens[-1] != drafts[j]:
                break
            seq.num_computed_tokens += 1  # draft j confirmed: its KV (computed in this pass) is valid
            seq.token_ids.append(tokens[-1])  # provisional, so forced/max checks see the right count
        accepted = len(tokens) - 1
        del seq.token_ids[len(seq.token_ids) - accepted:]
        seq.draft_token_ids = []
        if drafts:
            self.blocks.trim(seq)
        if not was_prefill:
            seq.metrics.decode_passes += 1
        now = time.perf_counter()
        if not was_prefill and not drafts and seq.first_token_time is not None:
            seq.metrics.plain_passes += 1
            seq.metrics.plain_pass_s += now - seq.last_token_time
        if seq.first_token_time is None:
            seq.first_token_time = now
            seq.metrics.ttft_s = now - seq.arrival_time
            seq.metrics.prefill_s = now - (seq.first_scheduled_time or seq.arrival_time)
        else:
            seq.metrics.itl_s.append(now - seq.last_token_time)
        seq.last_token_time = now
        emitted = 0
        for j, tok in enumerate(tokens):
            self._append_token(seq, tok, None if sampled.logprobs is None else sampled.logprobs[j])
            emitted += 1
            if seq.finished:
                break
        if drafts:  # a stop/EOS/limit inside the run cuts it: the last emitted token counts as the pass's own
            self.draft_tokens += len(drafts)
            self.accepted_draft_tokens += emitted - 1
            seq.metrics.accepted_draft_tokens += emitted - 1
            seq.metrics.rejected_draft_tokens += len(drafts) - (emitted - 1)
            source = seq.draft_source or "unknown"
            add_drafts(seq.metrics.drafts, source, len(drafts), emitted - 1)
            add_drafts(self.draft_counts, source, len(drafts), emitted - 1)
        return True

    def _append_token(self, seq: Sequence, tok: int, logprob: TokenLogprob | None = None) -> None:
        seq.append_token(tok, logprob)
        old_len = len(seq.text)
        self._detokenize(seq)
        p = seq.params
        if seq.constraint is not None:
            if not seq.constraint.accept(tok):
                seq.finish("error", f"the output cannot meet its constraint: {seq.constraint.error}")
                return
            if seq.constraint.done:
                seq.finish("length" if seq.constraint.closed_by_budget else "stop")
                return
        if p.stop and len(seq.text) > old_len:
            longest = max(len(s) for s in p.stop)
            start = max(0, old_len - longest + 1)
            hits = [(i, s) for i, s in ((seq.text.find(s, start), s) for s in p.stop if s) if i >= 0]
            if hits:
                at, stop = min(hits, key=lambda hit: hit[0])
                seq.text = seq.text[:at]
                seq.finish("stop", stop_string=stop)
                return
        if tok in self.eos_token_ids and not p.ignore_eos:
            seq.finish("stop")
        elif p.forced_token_ids is not None and seq.num_output_tokens >= len(p.forced_token_ids):
            seq.finish("stop")
        elif seq.num_output_tokens >= p.max_tokens or seq.num_tokens >= self.max_model_len:
            seq.finish("length")

    def _detokenize(self, seq: Sequence) -> None:
        """Incremental: decode from a trailing offset so multi-token characters and spaces come out right."""
        ids, p0 = seq.token_ids, seq.num_prompt_tokens  # offsets count output tokens; no per-token copy
        dec = self.tokenizer.decode
        prefix = dec(ids[p0 + seq.prefix_offset:p0 + seq.read_offset], skip_special_tokens=True)
        full = dec(ids[p0 + seq.prefix_offset:], skip_special_tokens=True)
        if len(full) > len(prefix) and not full.endswith("\ufffd"):
            seq.text += full[len(prefix):]
            seq.prefix_offset = seq.read_offset
            seq.read_offset = seq.num_output_tokens

    def _emit(self, seq: Sequence) -> RequestOutput:
        held = 0
        if seq.params.stop and not seq.finished:  # hold back a tail that may still become a stop string
            for s in seq.params.stop:
                for n in range(min(len(s) - 1, len(seq.text)), 0, -1):
                    if seq.text.endswith(s[:n]):
                        held = max(held, n)
                        break
        out = seq.make_output(held)
        if seq.finished:
            self.requests.pop(seq.request_id, None)
            if self.drafter is not None:
                self.drafter.finished(seq)
        return out

    # ---- high level ----

    def generate(self, prompts: PromptLike | Seq[PromptLike],
                 params: SamplingParams | Seq[SamplingParams] | None = None) -> list[RequestOutput]:
        batch = self._as_prompt_list(prompts)
        plist = list(params) if isinstance(params, list | tuple) else [params] * len(batch)
        if len(plist) != len(batch):
            raise InvalidRequestError(f"{len(batch)} prompts but {len(plist)} sampling params")
        ids: list[str] = []
        try:
            for prompt, p in zip(batch, plist, strict=True):
                ids.append(self.add_request(prompt, p))
        except Exception:
            for rid in ids:  # all or nothing
                self.abort(rid)
            self.step_until_idle(ids)
            raise
        return self.step_until_idle(ids)

    def step_until_idle(self, request_ids: list[str]) -> list[RequestOutput]:
        wanted = set(request_ids)
        done: dict[str, RequestOutput] = {}
        while len(done) < len(wanted):
            for out in self.step():
                if out.finished and out.request_id in wanted:
                    done[out.request_id] = out
            if len(done) < len(wanted) and not self.has_unfinished():
                raise EngineError("requests vanished without finishing")
        return [done[r] for r in request_ids]

    def stream(self, prompt: PromptLike, params: SamplingParams | None = None, *,
               cache_salt: str | None = None) -> Iterator[RequestOutput]:
        rid = self.add_request(prompt, params, cache_salt=cache_salt)
        finished = False
        try:
            while not finished:
                for out in self.step():
                    if out.request_id == rid:
                        finished = out.finished
                        yield out
        finally:
            if not finished:  # the consumer stopped early: free its blocks
                self.abort(rid)

    @staticmethod
    def _as_prompt_list(prompts) -> list[PromptLike]:
        if isinstance(prompts, str):
            return [prompts]
        if isinstance(prompts, list | tuple):
            if prompts and all(isinstance(t, int) for t in prompts):
                return [list(prompts)]
            if not prompts:
                raise InvalidRequestError("no prompts given")
            return list(prompts)
        raise InvalidRequestError("prompts must be a string, a list of token ids, or a list of those")

    @property
    def numerics(self) -> dict:
        """How this engine computes (what an eval records beside its figures)."""
        return {"dtype": str(self.dtype).removeprefix("torch."), "quant": self.quant,
                "attention": self.runner.attention.backend, "deterministic": self.config.deterministic,
                "compile_decode": self.runner.compile_decode}

    def __repr__(self) -> str:
        return (f"Engine(model={self.model_name!r}, device={self.device}, dtype={self.dtype}, "
                f"quant={self.quant}, blocks={self.blocks.num_blocks}x{self.config.block_size}, "
                f"max_model_len={self.max_model_len})")


__all__ = ["Engine", "next_token", "Status"]
