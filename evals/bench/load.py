"""Bounded load run against a real `deltaserve serve` on 127.0.0.1.

N streaming chat requests, at most C in flight; a fraction of clients disconnect mid-stream at a random
point; prompts mix a long shared prefix (the agent case: same repo context, different tail) with short
ones; a few invalid requests are mixed in and must be refused with a 4xx. Reports completed / aborted /
errors, p50/p95 TTFT and inter-token latency (client-side), and the KV pool afterwards (which must be
empty of requests). Bounded by count and by a wall-clock deadline; it stops by itself.

    python -m deltaserve.evals.bench.load --tiny                      # spawn a server on a tiny random model
    python -m deltaserve.evals.bench.load --model smollm2-135m --requests 40 --concurrency 8
    python -m deltaserve.evals.bench.load --url http://127.0.0.1:8000 # an already running server
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from deltaserve.errors import ServerStartError

# A shared "repository context" the long prompts start with: the same tokens every time, so a prefix
# cache serves it after the first request.
LONG_PREFIX = "You are a careful coding agent. Here is the repository you are working on.\n\n" + "\n".join(
    f"def function_{i}(x):\n    '''Return x transformed by rule {i}.'''\n"
    f"    return (x * {i} + {i % 7}) % {97 + i}\n"
    for i in range(40)
)
TOPICS = ["sorting", "parsing dates", "a cache", "retries", "paths", "JSON", "tests", "logging", "regex",
          "a CLI"]


@dataclass
class LoadConfig:
    requests: int = 200
    concurrency: int = 32
    disconnect_fraction: float = 0.2
    invalid_every: int = 40  # every k-th request is a malformed one (expect a 4xx)
    long_fraction: float = 0.5
    max_tokens: int = 32
    seed: int = 0
    deadline_s: float = 600.0  # the whole run stops after this, whatever is left is reported as errors
    request_timeout_s: float = 120.0


@dataclass
class RequestResult:
    kind: str  # "long" | "short" | "invalid"
    outcome: str  # "completed" | "aborted" | "rejected" | "error"
    status: int | None = None
    detail: str = ""
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    completion_tokens: int | None = None
    cached_tokens: int | None = None


@dataclass
class LoadReport:
    requests: int
    completed: int
    aborted: int
    rejected_invalid: int
    errors: int
    error_details: list[str]
    wall_s: float
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    itl_p50_ms: float | None
    itl_p95_ms: float | None
    completion_tokens: int
    cached_prompt_tokens: int
    kv_after: dict[str, Any]

    @property
    def ok(self) -> bool:
        return (self.errors == 0 and self.completed + self.aborted + self.rejected_invalid == self.requests
                and self.kv_after.get("blocks_in_use") == 0 and self.kv_after.get("requests_in_flight") == 0)


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _invalid_request(rng: random.Random, model: str) -> tuple[dict | str, str]:
    kind = rng.choice(["negative_max_tokens", "unknown_model", "empty_messages", "bad_json"])
    good = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    if kind == "negative_max_tokens":
        return {**good, "max_tokens": -5}, kind
    if kind == "unknown_model":
        return {**good, "model": "no-such-model"}, kind
    if kind == "empty_messages":
        return {**good, "messages": []}, kind
    return '{"model": "' + model + '", "messages": [', kind


async def _one(client: httpx.AsyncClient, model: str, index: int, cfg: LoadConfig,
               rng: random.Random) -> RequestResult:
    if cfg.invalid_every and index % cfg.invalid_every == cfg.invalid_every - 1:
        return await _send_invalid(client, model, rng)
    long = rng.random() < cfg.long_fraction
    topic = rng.choice(TOPICS)
    leave = rng.random() < cfg.disconnect_fraction
    disconnect_after = rng.randint(1, max(1, cfg.max_tokens // 2)) if leave else None
    body = _chat_request(model, index, topic, long, cfg, rng)
    return await _stream(client, body, RequestResult("long" if long else "short", "error"), disconnect_after)


async def _send_invalid(client: httpx.AsyncClient, model: str, rng: random.Random) -> RequestResult:
    """A malformed request: rejected means a 4xx in the OpenAI error shape."""
    body, why = _invalid_request(rng, model)
    content = body if isinstance(body, str) else json.dumps(body)
    r = await client.post("/v1/chat/completions", content=content,
                          headers={"content-type": "application/json"})
    shape_ok = isinstance(r.json().get("error", {}).get("message"), str)
    if 400 <= r.status_code < 500 and shape_ok:
        return RequestResult("invalid", "rejected", r.status_code, why)
    return RequestResult("invalid", "error", r.status_code, f"{why}: got {r.status_code} {r.text[:200]}")


def _chat_request(model: str, index: int, topic: str, long: bool, cfg: LoadConfig,
                  rng: random.Random) -> dict:
    messages = ([{"role": "system", "content": LONG_PREFIX},
                 {"role": "user", "content": f"Request {index}: add a helper for {topic}."}] if long
                else [{"role": "user", "content": f"Say one sentence about {topic} ({index})."}])
    max_tokens = rng.randint(4, cfg.max_tokens)
    return {"model": model, "messages": messages, "stream": True, "max_tokens": max_tokens,
            "temperature": rng.choice([0.0, 0.7]), "seed": index, "stream_options": {"include_usage": True}}


async def _stream(client: httpx.AsyncClient, body: dict, result: RequestResult,
                  disconnect_after: int | None) -> RequestResult:
    """Read one streamed completion into `result`, timing each content chunk; leave after
    `disconnect_after` chunks when given."""
    t0 = time.perf_counter()
    last = None
    chunks = 0
    finish_reason = None
    async with client.stream("POST", "/v1/chat/completions", json=body) as r:
        result.status = r.status_code
        if r.status_code != 200:
            result.detail = (await r.aread()).decode(errors="replace")[:300]
            return result
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                if finish_reason is None:
                    result.detail = "stream ended without a finish_reason"
                else:
                    result.outcome = "completed"
                return result
            event = json.loads(data)
            if "error" in event:
                result.detail = f"error event: {event['error'].get('message')}"
                return result
            if event.get("usage"):
                result.completion_tokens = event["usage"]["completion_tokens"]
                result.cached_tokens = event["usage"]["prompt_tokens_details"]["cached_tokens"]
            for choice in event.get("choices", []):
                if choice.get("delta", {}).get("content"):
                    now = time.perf_counter()
                    if last is None:
                        result.ttft_s = now - t0
                    else:
                        result.itl_s.append(now - last)
                    last = now
                    chunks += 1
                finish_reason = choice.get("finish_reason") or finish_reason
            if disconnect_after is not None and chunks >= disconnect_after and finish_reason is None:
                result.outcome = "aborted"  # leaving the `async with` closes the connection mid-stream
                return result
        result.detail = "stream closed without [DONE]"
    return result


async def _kv_after(client: httpx.AsyncClient, wait_s: float = 15.0) -> dict[str, Any]:
    """Engine stats once the server has settled (aborts are processed between steps)."""
    deadline = time.monotonic() + wait_s
    while True:
        stats = (await client.get("/stats")).json()
        settled = stats.get("requests_in_flight") == 0 and stats.get("blocks_in_use") == 0
        if settled or time.monotonic() > deadline:
            return stats
        await asyncio.sleep(0.1)


async def run_load(url: str, model: str | None = None, cfg: LoadConfig | None = None) -> LoadReport:
    cfg = cfg or LoadConfig()
    rng = random.Random(cfg.seed)
    limits = httpx.Limits(max_connections=cfg.concurrency + 4, max_keepalive_connections=cfg.concurrency)
    timeout = httpx.Timeout(cfg.request_timeout_s, connect=10.0)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        model = model or (await client.get("/v1/models")).json()["data"][0]["id"]
        gate = asyncio.Semaphore(cfg.concurrency)
        seeds = [rng.randrange(1 << 30) for _ in range(cfg.requests)]

        async def guarded(i: int) -> RequestResult:
            async with gate:
                try:
                    return await _one(client, model, i, cfg, random.Random(seeds[i]))
                except Exception as exc:  # transport failures are errors, never crashes of the run
                    return RequestResult("?", "error", None, f"{type(exc).__name__}: {exc}")

        t0 = time.perf_counter()
        tasks = [asyncio.create_task(guarded(i)) for i in range(cfg.requests)]
        done, pending = await asyncio.wait(tasks, timeout=cfg.deadline_s)
        for task in pending:
            task.cancel()
        wall = time.perf_counter() - t0
        results = [t.result() for t in done]
        results += [RequestResult("?", "error", None, "deadline") for _ in pending]
        kv = await _kv_after(client)

    ttfts = [r.ttft_s * 1000 for r in results if r.ttft_s is not None]
    itls = [g * 1000 for r in results for g in r.itl_s]
    errors = [r for r in results if r.outcome == "error"]
    return LoadReport(
        requests=cfg.requests,
        completed=sum(r.outcome == "completed" for r in results),
        aborted=sum(r.outcome == "aborted" for r in results),
        rejected_invalid=sum(r.outcome == "rejected" for r in results),
        errors=len(errors),
        error_details=[f"{r.kind} {r.status}: {r.detail}" for r in errors[:10]],
        wall_s=wall,
        ttft_p50_ms=_percentile(ttfts, 50),
        ttft_p95_ms=_percentile(ttfts, 95),
        itl_p50_ms=_percentile(itls, 50),
        itl_p95_ms=_percentile(itls, 95),
        completion_tokens=sum(r.completion_tokens or 0 for r in results),
        cached_prompt_tokens=sum(r.cached_tokens or 0 for r in results),
        kv_after={k: kv.get(k) for k in ("num_blocks", "blocks_in_use", "blocks_cached", "blocks_free",
                                         "num_running", "num_waiting", "requests_in_flight", "preemptions",
                                         "prefix_cache_queries", "prefix_cache_hits", "step_failures")},
    )


# ---------------------------------------------------------------- a real `deltaserve serve` subprocess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """`deltaserve serve` in a subprocess on 127.0.0.1; waits for /health; terminated on exit."""

    def __init__(self, model: str, extra_args: list[str] | None = None,
                 startup_timeout_s: float = 180.0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="deltaserve-serve-", suffix=".log", delete=False)
        cmd = [sys.executable, "-c", "import sys; from deltaserve.cli import main; sys.exit(main())", "serve",
               "--model", model, "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
               *(extra_args or [])]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"deltaserve serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise ServerStartError(
                    f"deltaserve serve did not come up in {startup_timeout_s}s:\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 3000) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-chars:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--url", help="an already running server, e.g. http://127.0.0.1:8000 (default: spawn "
                     "`deltaserve serve` on a free port and stop it afterwards)")
    src.add_argument("--tiny", action="store_true", help="spawn a server on a tiny random-weight model")
    p.add_argument("--model", default="smollm2-135m",
                   help="model for the spawned server (default: %(default)s)")
    d = LoadConfig()
    p.add_argument("--requests", type=int, default=d.requests, metavar="N",
                   help="streaming requests in all (default: %(default)s)")
    p.add_argument("--concurrency", type=int, default=d.concurrency, metavar="N",
                   help="requests in flight at most (default: %(default)s)")
    p.add_argument("--disconnect-fraction", type=float, default=d.disconnect_fraction, metavar="F",
                   help="share of clients that leave mid-stream (default: %(default)s)")
    p.add_argument("--invalid-every", type=int, default=d.invalid_every, metavar="K",
                   help="every K-th request is malformed and must get a 4xx (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=d.max_tokens, metavar="N",
                   help="max_tokens per request (default: %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed, help="seed for the request mix (default: %(default)s)")
    p.add_argument("--deadline", type=float, default=d.deadline_s, metavar="SECONDS",
                   help="the run stops after this; unfinished requests count as errors "
                        "(default: %(default)s)")
    p.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the spawned `deltaserve serve` (repeatable)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the report here (default: none)")


def run(args: argparse.Namespace) -> int:
    cfg = LoadConfig(requests=args.requests, concurrency=args.concurrency,
                     disconnect_fraction=args.disconnect_fraction, invalid_every=args.invalid_every,
                     max_tokens=args.max_tokens, seed=args.seed, deadline_s=args.deadline)
    try:
        if args.url:
            report = asyncio.run(run_load(args.url, None, cfg))
        else:
            model = args.model
            if args.tiny:
                # only here: the fixture pulls in torch and transformers, which the HTTP client never needs
                from deltaserve.testing.tiny_model import make_tiny_model_dir

                model = str(make_tiny_model_dir(Path(tempfile.gettempdir()) / "deltaserve-load-tiny"))
            with ServeProcess(model, args.serve_arg) as server:
                report = asyncio.run(run_load(server.url, None, cfg))
    except httpx.TransportError as exc:  # before the run: the server is not there
        print(f"load: cannot reach {args.url or 'the spawned server'}: {exc}", file=sys.stderr)
        return 2
    except ServerStartError as exc:  # the spawned server did not come up; its log tail is in the message
        print(f"load: {exc}", file=sys.stderr)
        return 2
    body = {**asdict(report), "ok": report.ok}
    print(json.dumps(body, indent=2))
    if args.json:
        args.json.write_text(json.dumps(body, indent=2))
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.load",
                                description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
