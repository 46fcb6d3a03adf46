"""Head-of-line blocking: how long a streaming request stalls while another client sends a huge prompt.

One client streams a long completion from a real `deltaserve serve` on 127.0.0.1; once its tokens flow,
a second client sends one chat message of --prompt-mb megabytes (under the server's body limit, far over
its context, so the right answer is a quick 400). The stream's inter-chunk gaps are timed client-side:
the worst gap before the big request (the baseline) and while it is in flight (the stall it causes).
Bounded: --runs rounds, each stream capped by max_tokens and a deadline; it stops by itself.

    python -m deltaserve.evals.bench.head_of_line --tiny            # spawn a server on a tiny random model
    python -m deltaserve.evals.bench.head_of_line --model smollm2-135m --runs 3
    python -m deltaserve.evals.bench.head_of_line --url http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import string
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from deltaserve.errors import ServerStartError
from deltaserve.evals.bench.load import ServeProcess
from deltaserve.evals.bench.table import table

CHAT = "/v1/chat/completions"
STREAM_WARMUP_CHUNKS = 30  # the big request goes out once this many chunks have arrived
GOAL_S = 0.5  # the worst gap a stream should see while the big request is in flight


@dataclass
class Round:
    big_status: int = 0
    big_latency_s: float = 0.0
    chunk_times: list[float] = field(default_factory=list)
    big_sent: float = 0.0
    big_answered: float = 0.0

    def gaps(self, start: float, end: float) -> list[float]:
        """Gaps between consecutive chunks whose later chunk arrived in [start, end]."""
        t = self.chunk_times
        return [b - a for a, b in zip(t, t[1:], strict=False) if start <= b <= end]

    @property
    def baseline_gap_s(self) -> float:
        return max(self.gaps(0.0, self.big_sent), default=0.0)

    @property
    def worst_gap_s(self) -> float:
        """The worst gap from sending the big request until the next chunk after its answer."""
        after = [c for c in self.chunk_times if c >= self.big_answered]
        end = after[0] if after else float("inf")
        return max(self.gaps(self.big_sent, end), default=float("inf"))

    @property
    def stream_outlived_big_request(self) -> bool:
        return bool(self.chunk_times) and self.chunk_times[-1] >= self.big_answered


def huge_prompt(megabytes: float, seed: int) -> str:
    """Varied words (a tokenizer's word cache does not shortcut them), `megabytes` MB of them."""
    rng = random.Random(seed)
    words, size, target = [], 0, int(megabytes * 1_000_000)
    while size < target:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:target]


async def _stream(client: httpx.AsyncClient, model: str, max_tokens: int, rnd: Round,
                  started: asyncio.Event, stop: asyncio.Event) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "Tell a long story."}],
            "max_tokens": max_tokens, "ignore_eos": True, "stream": True}
    async with client.stream("POST", CHAT, json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                rnd.chunk_times.append(time.perf_counter())
                if len(rnd.chunk_times) == STREAM_WARMUP_CHUNKS:
                    started.set()
                if stop.is_set():
                    return  # leaving aborts the request on the server
    started.set()  # a stream shorter than the warm-up: let the round end


def _send(url: str, body: bytes) -> int:
    with httpx.Client(base_url=url, timeout=300) as client:
        return client.post(CHAT, content=body, headers={"content-type": "application/json"}).status_code


async def one_round(url: str, model: str, prompt: str, max_tokens: int, linger_s: float) -> Round:
    rnd = Round()
    started, stop = asyncio.Event(), asyncio.Event()
    # Encoded up front and sent from another thread: the client's own work must not delay the stream's reads.
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}],
                       "max_tokens": 4}).encode()
    async with httpx.AsyncClient(base_url=url, timeout=300) as streamer:
        task = asyncio.create_task(_stream(streamer, model, max_tokens, rnd, started, stop))
        await started.wait()
        rnd.big_sent = time.perf_counter()
        rnd.big_status = await asyncio.to_thread(_send, url, body)
        rnd.big_answered = time.perf_counter()
        rnd.big_latency_s = rnd.big_answered - rnd.big_sent
        await asyncio.sleep(linger_s)  # a few chunks after the answer close the stall window
        stop.set()
        await task
    return rnd


def report(rounds: list[Round], prompt_mb: float) -> str:
    rows = [[str(i + 1), str(r.big_status), r.big_latency_s, r.baseline_gap_s, r.worst_gap_s,
             statistics.median(r.gaps(0.0, float("inf")) or [0.0]) * 1000,
             "yes" if r.stream_outlived_big_request else "NO"]
            for i, r in enumerate(rounds)]
    header = ["round", "big status", "big latency s", "gap before s", "worst gap during s", "median gap ms",
              "stream outlived it"]
    worst = max(r.worst_gap_s for r in rounds)
    verdict = "meets" if worst < GOAL_S else "misses"
    return (table(f"head-of-line: one stream while a {prompt_mb:g} MB prompt arrives", header, rows)
            + f"\nworst gap during the big request: {worst:.3f} s ({verdict} the goal of < {GOAL_S} s)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--url", help="an already running server (default: spawn `deltaserve serve`)")
    src.add_argument("--tiny", action="store_true", help="spawn a server on a tiny random-weight model")
    p.add_argument("--model", default="smollm2-135m",
                   help="model for the spawned server (default: %(default)s)")
    p.add_argument("--served-name", default="default",
                   help="the model name to request from --url (default: %(default)s)")
    p.add_argument("--prompt-mb", type=float, default=8.0,
                   help="size of the big prompt, in MB (default: %(default)s)")
    p.add_argument("--runs", type=int, default=3, help="rounds (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=1500, help="the stream's length (default: %(default)s)")
    p.add_argument("--linger", type=float, default=0.3, metavar="SECONDS",
                   help="how long the stream goes on after the big request's answer (default: %(default)s)")


async def _rounds(url: str, model: str, args: argparse.Namespace) -> list[Round]:
    return [await one_round(url, model, huge_prompt(args.prompt_mb, seed=i), args.max_tokens, args.linger)
            for i in range(args.runs)]


def run(args: argparse.Namespace) -> int:
    try:
        if args.url:
            rounds = asyncio.run(_rounds(args.url, args.served_name, args))
        else:
            model = args.model
            if args.tiny:  # only here: the fixture pulls in torch and transformers
                from deltaserve.testing.tiny_model import make_tiny_model_dir

                model = str(make_tiny_model_dir(Path(tempfile.gettempdir()) / "deltaserve-hol-tiny"))
            with ServeProcess(model, ["--served-model-name", "bench"]) as server:
                rounds = asyncio.run(_rounds(server.url, "bench", args))
    except (httpx.TransportError, ServerStartError) as exc:
        print(f"head_of_line: {exc}", file=sys.stderr)
        return 2
    print(report(rounds, args.prompt_mb))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.head_of_line",
                                description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
