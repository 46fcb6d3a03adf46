"""The disk KV tier against a hostile or shared directory (issue 42, items 9, 10 and 12): tenants whose
salt and tokens spell the same old hash, a FIFO named like a block file, two stores on one directory with a
small budget, and a dangling block link at start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from deltaserve.engine import kv_disk
from deltaserve.engine.kv_disk import DiskKVStore
from deltaserve.engine.prefix_cache import block_hash

BS = 16
REST = [(7 * i + 3) % 4000 + 5 for i in range(95)]  # with one first token: 96 tokens, 5 matchable blocks
GREEDY = {"max_tokens": 6, "temperature": 0}
SHAPE = (2, 2, BS, 8)  # [layers, kv_heads, block_size, head_dim]


def chain(tokens, salt) -> list[bytes]:
    """The keys of the full blocks a prompt can be served (the last token is always computed)."""
    keys, parent = [], None
    for b in range((len(tokens) - 1) // BS):
        parent = block_hash(parent, tuple(tokens[b * BS:(b + 1) * BS]), salt)
        keys.append(parent)
    return keys


def block_files(root) -> set[str]:
    return {p.stem for p in root.glob("kv/*/*/*.safetensors")}


def test_a_tenant_is_never_served_blocks_another_tenants_salt_and_tokens_hash_alike(make_engine, tmp_path):
    # salt "1" + token 23 spelled "root:1" + "23,..." like no salt + token 123 did: one key for two prefixes
    tenant_a, tenant_b = [23, *REST], [123, *REST]

    def served(prompt, salt):
        eng = make_engine(kv_cache_dir=str(tmp_path))
        out = eng.step_until_idle([eng.add_request(prompt, GREEDY, cache_salt=salt)])[0]
        eng.kv_disk.flush()
        return out

    cold_b = make_engine().generate(tenant_b, GREEDY)[0]
    served(tenant_a, "1")
    first_b = served(tenant_b, None)  # finds nothing of A's on disk, writes every block of its own
    keys_a, keys_b = chain(tenant_a, "1"), chain(tenant_b, None)
    assert not set(keys_a) & set(keys_b)
    assert {k.hex() for k in keys_a + keys_b} <= block_files(tmp_path)
    again_b = served(tenant_b, None)
    assert first_b.metrics.cached_tokens == 0
    assert again_b.metrics.cached_tokens_disk == len(keys_b) * BS
    assert again_b.token_ids == cold_b.token_ids


def store(root, max_bytes=2**30) -> DiskKVStore:
    return DiskKVStore(root, "fp", max_bytes)


def offer_blocks(kv: DiskKVStore, first: int, count: int) -> None:
    for i in range(first, first + count):
        k = torch.full(SHAPE, float(i))
        kv.offer(block_hash(None, (i,) * BS, None), None, (i,) * BS, 0, k, -k)
    kv.flush()


def dir_bytes(kv: DiskKVStore) -> int:
    """The bytes of the block files in the directory, whoever wrote them (links are no block files)."""
    return sum(p.lstat().st_size for p in kv.dir.glob("*/*.safetensors") if not p.is_symlink())


def test_two_stores_on_one_directory_keep_it_within_the_budget(tmp_path):
    probe = store(tmp_path / "probe")
    offer_blocks(probe, 0, 1)
    per_file = dir_bytes(probe)
    budget = int(5.5 * per_file)
    first, second = store(tmp_path, budget), store(tmp_path, budget)
    offer_blocks(first, 0, 5)
    offer_blocks(second, 100, 5)  # each store alone stays within budget; together they would hold 10
    assert dir_bytes(second) <= budget
    offer_blocks(first, 200, 3)
    assert dir_bytes(first) <= budget
    assert len(list(first.dir.glob("*/*.safetensors"))) == 5
    for kv in (first, second, probe):
        kv.close()


def test_a_dangling_block_link_at_start_up_keeps_writing_on(tmp_path):
    sub = tmp_path / "kv" / "fp" / "ab"
    sub.mkdir(parents=True)
    os.symlink(tmp_path / "gone.safetensors", sub / ("ab" * 32 + ".safetensors"))
    kv = store(tmp_path)
    assert kv.writable
    offer_blocks(kv, 0, 2)
    assert kv.writable and kv.stats.blocks_written == 2 and kv.total_bytes == dir_bytes(kv)
    kv.close()


FIFO_LOOKUP = """
import json, sys, torch
from deltaserve.engine.kv_disk import DiskKVStore
from deltaserve.engine.prefix_cache import block_hash
kv = DiskKVStore(sys.argv[1], "fp", 2**30)
tokens = (5,) * 16
key = block_hash(None, tokens, None)
found = kv.load(key, None, tokens, 0, (2, 2, 16, 8), torch.float32)
print(json.dumps({"has": kv.has(key), "found": found is not None, "corrupt": kv.stats.corrupt}))
"""


def test_a_fifo_named_like_a_block_file_is_dropped_not_waited_on(tmp_path):
    """In a child process: a reader blocked in open() on a FIFO may hold the GIL, and then no thread of
    this process could notice that it hangs."""
    key = block_hash(None, (5,) * BS, None).hex()
    path = tmp_path / "kv" / "fp" / key[:2] / (key + kv_disk.SUFFIX)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    try:
        done = subprocess.run([sys.executable, "-c", FIFO_LOOKUP, str(tmp_path)], capture_output=True,
                              text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("looking a block up blocked on a FIFO in the KV directory")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"has": False, "found": False, "corrupt": 1}
    assert not path.exists()  # dropped like any unreadable block file
