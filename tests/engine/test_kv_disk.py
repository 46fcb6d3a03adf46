"""The disk tier under the prefix cache: warm output equals cold output (fp32) across engines and processes,
bad files are recomputed and counted, a changed model gets no hits, the size bound evicts by bytes, and a
failing disk leaves the engine memory-only with one warning."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from deltaserve.engine import kv_disk
from deltaserve.engine.prefix_cache import block_hash

PROMPT = [(7 * i + 3) % 4000 + 5 for i in range(200)]  # 12 full blocks of 16 and a tail
GREEDY = {"max_tokens": 6, "temperature": 0}
FULL_BLOCKS = (len(PROMPT) - 1) // 16


def block_files(root: Path) -> list[Path]:
    return sorted(root.glob("kv/*/*/*.safetensors"))


def run_once(make_engine, kv_dir, **config):
    eng = make_engine(kv_cache_dir=str(kv_dir), **config)
    out = eng.generate(PROMPT, GREEDY)[0]
    eng.kv_disk.flush()
    return eng, out


def test_a_second_engine_serves_the_prompt_from_disk_with_the_same_output(make_engine, tmp_path):
    cold_eng = make_engine()
    cold = cold_eng.generate(PROMPT, GREEDY)[0]
    first, out1 = run_once(make_engine, tmp_path)
    assert out1.metrics.cached_tokens == 0
    s1 = first.stats()
    assert s1.kv_disk_bytes_written > 0 and s1.kv_disk_hits == 0
    assert len(block_files(tmp_path)) == (len(PROMPT) + len(out1.token_ids)) // 16  # generated blocks too

    second, out2 = run_once(make_engine, tmp_path)
    assert out2.token_ids == out1.token_ids == cold.token_ids
    assert out2.metrics.cached_tokens == out2.metrics.cached_tokens_disk == FULL_BLOCKS * 16
    s2 = second.stats()
    assert s2.kv_disk_hits == FULL_BLOCKS and s2.kv_disk_bytes_read > 0 and s2.kv_disk_bytes_written == 0
    assert s2.prefix_cache_hits == FULL_BLOCKS * 16
    # the loaded blocks are now memory-cached: a repeat is a memory hit, not a disk read
    again = second.generate(PROMPT, GREEDY)[0]
    assert again.metrics.cached_tokens == FULL_BLOCKS * 16 and again.metrics.cached_tokens_disk == 0
    assert second.stats().kv_disk_hits == FULL_BLOCKS


def test_the_cache_salt_is_part_of_the_key(make_engine, tmp_path):
    run_once(make_engine, tmp_path)
    eng = make_engine(kv_cache_dir=str(tmp_path))
    rid = eng.add_request(PROMPT, GREEDY, cache_salt="tenant-b")
    out = eng.step_until_idle([rid])[0]
    assert out.metrics.cached_tokens == 0


SCRIPT = """
import json, sys
from deltaserve.engine import Engine
eng = Engine.from_pretrained(sys.argv[1], dtype="float32", num_blocks=64, speculative=False,
                             kv_cache_dir=sys.argv[2])
out = eng.generate(json.loads(sys.argv[3]), {"max_tokens": 6, "temperature": 0})[0]
print(json.dumps({"tokens": out.token_ids, "cached": out.metrics.cached_tokens,
                  "disk": out.metrics.cached_tokens_disk}))
"""  # no flush: blocks still queued when the process ends are written at exit


def test_a_second_process_on_the_same_dir_reuses_the_first_ones_blocks(tiny_llama, tmp_path):
    def run() -> dict:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        argv = [sys.executable, "-c", SCRIPT, str(tiny_llama), str(tmp_path), json.dumps(PROMPT)]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    a, b = run(), run()
    assert a["cached"] == 0
    assert b["cached"] == b["disk"] == FULL_BLOCKS * 16
    assert a["tokens"] == b["tokens"]


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_block_file_is_dropped_recomputed_and_counted(make_engine, tmp_path, damage, caplog):
    _, cold = run_once(make_engine, tmp_path)
    key = None  # the chained hash of block 5 (prompt tokens 80..95): blocks 0-4 still come from disk
    for b in range(6):
        key = block_hash(key, tuple(PROMPT[b * 16:(b + 1) * 16]), None)
    victim = next(p for p in block_files(tmp_path) if p.stem == key.hex())
    data = victim.read_bytes()
    if damage == "flip":
        victim.write_bytes(data[:-40] + bytes(b ^ 0xFF for b in data[-40:]))
    else:
        victim.write_bytes(data[: len(data) // 2])

    with caplog.at_level(logging.WARNING, logger="deltaserve.engine.kv_disk"):
        eng, out = run_once(make_engine, tmp_path)
    assert out.token_ids == cold.token_ids
    s = eng.stats()
    assert s.kv_disk_corrupt_blocks == 1
    assert out.metrics.cached_tokens_disk == 5 * 16  # the five blocks before the damaged one
    assert "will be recomputed" in caplog.text
    # the recomputed block was written again, whole
    assert victim.exists() and victim.read_bytes() != data[: len(data) // 2]
    _, out3 = run_once(make_engine, tmp_path)
    assert out3.metrics.cached_tokens_disk == FULL_BLOCKS * 16 and out3.token_ids == cold.token_ids


def test_a_changed_model_gets_no_hits(make_engine, tiny_llama, tmp_path):
    run_once(make_engine, tmp_path)
    other = tmp_path / "model-copy"
    shutil.copytree(tiny_llama, other)
    weights = other / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))  # new weights
    for changed in ({"path": other}, {"dtype": "bfloat16"}, {"block_size": 8}):
        eng, out = run_once(make_engine, tmp_path, **changed)
        assert out.metrics.cached_tokens == 0, changed
        assert eng.stats().kv_disk_hits == 0
    assert len(list(tmp_path.glob("kv/*"))) == 4  # one directory per fingerprint


def test_the_directory_stays_under_its_byte_budget_evicting_tails_first(make_engine, tmp_path):
    _, _ = run_once(make_engine, tmp_path / "probe")
    per_file = block_files(tmp_path / "probe")[0].stat().st_size
    budget_gb = 5.5 * per_file / 2**30
    eng, _ = run_once(make_engine, tmp_path / "kv", kv_cache_max_gb=budget_gb)
    s = eng.stats()
    files = block_files(tmp_path / "kv")
    assert len(files) == 5 and s.kv_disk_evictions > 0
    assert s.kv_disk_bytes == sum(f.stat().st_size for f in files) <= budget_gb * 2**30
    # what is left is usable: a prefix (the head blocks), not scattered tails
    _, out = run_once(make_engine, tmp_path / "kv", kv_cache_max_gb=budget_gb)
    assert out.metrics.cached_tokens_disk == 5 * 16


def test_a_full_disk_turns_writing_off_with_one_warning(make_engine, tmp_path, monkeypatch, caplog):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kv_disk, "save_file", no_space)
    with caplog.at_level(logging.WARNING, logger="deltaserve.engine.kv_disk"):
        eng, out = run_once(make_engine, tmp_path)
        out2 = eng.generate(PROMPT[:100] + [9, 9, 9] * 40, GREEDY)[0]
    assert out.finish_reason == "length" and out2.finish_reason == "length"
    s = eng.stats()
    assert s.kv_disk_writable == 0 and s.kv_disk_bytes_written == 0 and s.kv_disk_skipped_writes > 0
    warnings = [r for r in caplog.records if "in-memory prefix cache only" in r.getMessage()]
    assert len(warnings) == 1 and "No space left" in warnings[0].getMessage()
    assert not list(tmp_path.rglob("*.tmp"))  # no partial files left
    again = eng.generate(PROMPT, GREEDY)[0]  # the memory cache goes on working
    assert again.metrics.cached_tokens == FULL_BLOCKS * 16 and again.token_ids == out.token_ids


def test_an_unusable_directory_means_memory_only(make_engine, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="deltaserve.engine.kv_disk"):
        eng, out = run_once(make_engine, blocker)
    assert out.finish_reason == "length"
    assert eng.stats().kv_disk_writable == 0
    assert "in-memory prefix cache only" in caplog.text


def test_a_full_writer_queue_skips_blocks_instead_of_waiting(make_engine, tmp_path):
    eng = make_engine(kv_cache_dir=str(tmp_path))
    eng.kv_disk.max_pending_bytes = 1  # nothing fits: every block is skipped, none waits
    out = eng.generate(PROMPT, GREEDY)[0]
    eng.kv_disk.flush()
    assert out.finish_reason == "length"
    s = eng.stats()
    assert s.kv_disk_skipped_writes > 0 and s.kv_disk_bytes_written == 0 and not block_files(tmp_path)


def test_the_fingerprint_covers_quantization_and_the_model_config(tiny_llama):
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(tiny_llama)
    base = kv_disk.model_fingerprint(tiny_llama, cfg, torch.float32, 16, "none")
    assert base == kv_disk.model_fingerprint(tiny_llama, cfg, torch.float32, 16, "none")
    assert base != kv_disk.model_fingerprint(tiny_llama, cfg, torch.float32, 16, "int4")
    cfg.rms_norm_eps = cfg.rms_norm_eps * 2
    assert base != kv_disk.model_fingerprint(tiny_llama, cfg, torch.float32, 16, "none")
