"""Block manager with prefix reuse: refcounted KV blocks, a hash index of full blocks, an LRU of
free-but-cached blocks.

A full block's hash chains (parent block's hash, its token ids, and the cache_salt for the first
block), so equal hashes mean equal prefixes: the bytes hashed are an unambiguous encoding (a tagged,
length-prefixed salt; tokens as fixed-width integers), so no salt and token sequence can spell another's.
A lookup also compares the stored token ids and parent hash (no false hit even on a collision). A block
whose refcount drops to 0 keeps its KV and its index entry in the LRU until the pool needs it; sequences
free their blocks tail first so a prefix's head outlives its tail. The LRU is keyed by block hash, which
stays with the KV when a block moves (_vacate), so every LRU update is O(1).

Given the pool (`kv`), a sequence that needs the block right after its last one finds it free more often: a
cached block nobody uses there is moved to another free block first (its KV copied, its index entry and LRU
place kept), so the sequence's blocks stay consecutive and batch-1 decode reads its context as a view of the
pool instead of gathering it every layer and token (engine/model.py). A prompt that extends a cached one
meets exactly this: the previous request's blocks past the shared prefix are cached.

With a disk tier (engine/kv_disk.py, `self.disk`), a block is also offered to disk when it gets indexed,
and a prefix match that runs out of memory hits goes on in the disk tier: each block found there is loaded
into a pool block and indexed as if it had been computed.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict

from deltaserve.engine.errors import EngineError
from deltaserve.engine.free_blocks import FreeBlocks
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.kv_disk import BlockRef, DiskTier
from deltaserve.engine.sequence import Sequence


def block_hash(parent: bytes | None, tokens: tuple[int, ...], salt: str | None) -> bytes:
    """The chained key of a full block. Every field is self-delimiting (a tag, fixed-size or length-prefixed
    fields, tokens last as little-endian int64), so salt "9" + token 963 and no salt + token 9963 differ."""
    h = hashlib.sha256()
    h.update(b"child:" + parent if parent is not None else _root(salt))
    h.update(_token_bytes(tokens))
    return h.digest()


def _root(salt: str | None) -> bytes:
    if salt is None:
        return b"root-unsalted:"
    encoded = salt.encode("utf-8", "surrogatepass")
    return b"root-salted:" + struct.pack("<Q", len(encoded)) + encoded


def _token_bytes(tokens: tuple[int, ...]) -> bytes:
    return struct.pack(f"<{len(tokens)}q", *tokens)  # little-endian: the same disk keys on every machine


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, enable_caching: bool = True,
                 disk: DiskTier | None = None, kv: KVCache | None = None):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_caching = enable_caching
        self.ref_count = [0] * num_blocks
        self.hash_of: list[bytes | None] = [None] * num_blocks
        self.tokens_of: list[tuple[int, ...] | None] = [None] * num_blocks
        self.parent_of: list[bytes | None] = [None] * num_blocks
        self.index: dict[bytes, int] = {}
        self.free = FreeBlocks(num_blocks)
        # the hashes of refcount-0 blocks still in the index (index[hash] is the block), oldest first
        self.lru: OrderedDict[bytes, None] = OrderedDict()
        self.disk = disk if enable_caching else None
        self.kv = kv  # None: cached blocks stay where they are (_vacate)
        # counters (tokens for queries/hits, blocks for evictions)
        self.queries = 0
        self.hits = 0
        self.evictions = 0

    # ---- capacity ----

    @property
    def num_available(self) -> int:
        return len(self.free) + len(self.lru)

    def blocks_needed(self, seq: Sequence, num_new_tokens: int) -> int:
        total = seq.num_computed_tokens + num_new_tokens
        return max(0, -(-total // self.block_size) - len(seq.block_table))

    def can_allocate(self, seq: Sequence, num_new_tokens: int) -> bool:
        return self.blocks_needed(seq, num_new_tokens) <= self.num_available

    def allocate(self, seq: Sequence, num_new_tokens: int) -> None:
        """Give `seq` enough blocks to hold num_new_tokens more tokens of KV."""
        need = self.blocks_needed(seq, num_new_tokens)
        if need > self.num_available:
            raise EngineError("KV block pool exhausted (the scheduler should have preempted)")
        for _ in range(need):
            seq.block_table.append(self._take_block(seq.block_table[-1] if seq.block_table else None))

    def _take_block(self, after: int | None = None) -> int:
        """A block for new KV: a free one (the one after `after` if it is free or can be vacated), else the
        oldest cached."""
        if self.free:
            if after is not None:
                self._vacate(after + 1)
            block = self.free.take(after)
        else:
            key, _ = self.lru.popitem(last=False)
            block = self.index.pop(key)
            self.hash_of[block] = self.tokens_of[block] = self.parent_of[block] = None
            self.evictions += 1
        self.ref_count[block] = 1
        return block

    def _vacate(self, block: int) -> None:
        """Free `block` if it is cached and unused, by moving its KV and index entry to another free block
        (same place in the LRU order). A block copy (~0.7 MB for SmolLM2-135M in float32) once per block of
        new tokens, against gathering the whole context every decode step (2,000 tokens: ~90 MB)."""
        if self.kv is None or block >= self.num_blocks or not self.free:
            return
        if self.hash_of[block] not in self.lru:  # not cached, or in use
            return
        spare = self.free.take()
        self.kv.copy_block(block, spare)
        key = self.hash_of[block]
        self.index[key] = spare
        self.hash_of[spare], self.tokens_of[spare], self.parent_of[spare] = key, self.tokens_of[block], \
            self.parent_of[block]
        self.hash_of[block] = self.tokens_of[block] = self.parent_of[block] = None
        self.free.add(block)  # the LRU holds the hash, which now leads to `spare`: nothing to move

    # ---- prefix reuse ----

    def match_prefix(self, seq: Sequence) -> int:
        """Attach the longest cached prefix of a not-yet-started sequence; return its length in tokens.

        The last token is never served from cache: its logits are needed."""
        assert not seq.block_table and seq.num_computed_tokens == 0
        if not self.enable_caching:
            return 0
        bs = self.block_size
        tokens = seq.token_ids
        parent: bytes | None = None
        for b in range((len(tokens) - 1) // bs):
            chunk = tuple(tokens[b * bs:(b + 1) * bs])
            h = block_hash(parent, chunk, seq.cache_salt)
            block = self.index.get(h)
            if block is None or self.tokens_of[block] != chunk or self.parent_of[block] != parent:
                break
            if self.ref_count[block] == 0:
                del self.lru[h]
            self.ref_count[block] += 1
            seq.block_table.append(block)
            seq.block_hashes.append(h)
            parent = h
        if self.disk is not None:
            self._match_on_disk(seq, parent)
        seq.num_computed_tokens = len(seq.block_table) * bs
        return seq.num_computed_tokens

    def _match_on_disk(self, seq: Sequence, parent: bytes | None) -> None:
        """Extend seq's matched prefix with blocks from the disk tier, loaded into free pool blocks."""
        bs = self.block_size
        tokens = seq.token_ids
        found: list[tuple[BlockRef, tuple]] = []
        for b in range(len(seq.block_table), (len(tokens) - 1) // bs):
            if len(found) >= self.num_available:
                break
            chunk = tuple(tokens[b * bs:(b + 1) * bs])
            ref = BlockRef(-1, block_hash(parent, chunk, seq.cache_salt), parent, chunk, b)
            if ref.key in self.index:  # a memory block past a gap: leave the rest to be recomputed
                break
            kv = self.disk.load(ref)
            if kv is None:
                break
            found.append((ref, kv))
            parent = ref.key
        if not found:
            return
        blocks: list[int] = []
        for _ in found:  # following the matched prefix's last block where the pool allows
            last = blocks[-1] if blocks else (seq.block_table[-1] if seq.block_table else None)
            blocks.append(self._take_block(last))
        self.disk.write_into_pool(blocks, [kv for _, kv in found])
        for block, (ref, _) in zip(blocks, found, strict=True):
            self._register(block, ref.key, ref.tokens, ref.parent)
            seq.block_table.append(block)
            seq.block_hashes.append(ref.key)
        seq.disk_cached_tokens += len(found) * bs

    def record_query(self, prompt_tokens: int, cached_tokens: int) -> None:
        self.queries += prompt_tokens
        self.hits += cached_tokens

    def cache_full_blocks(self, seq: Sequence) -> None:
        """Index every block of `seq` that is full of confirmed, computed tokens (prompt or generated).

        Tokens past len(seq.token_ids) (unconfirmed speculative drafts) never count."""
        if not self.enable_caching:
            return
        bs = self.block_size
        done = min(seq.num_computed_tokens, len(seq.token_ids)) // bs
        tokens = seq.token_ids
        fresh: list[BlockRef] = []
        for b in range(len(seq.block_hashes), done):
            parent = seq.block_hashes[-1] if seq.block_hashes else None
            chunk = tuple(tokens[b * bs:(b + 1) * bs])
            h = block_hash(parent, chunk, seq.cache_salt)
            seq.block_hashes.append(h)
            block = seq.block_table[b]
            if h not in self.index and self.hash_of[block] is None:
                self._register(block, h, chunk, parent)
                fresh.append(BlockRef(block, h, parent, chunk, b))
        if fresh and self.disk is not None:
            self.disk.save(fresh)

    def _register(self, block: int, key: bytes, tokens: tuple[int, ...], parent: bytes | None) -> None:
        self.index[key] = block
        self.hash_of[block], self.tokens_of[block], self.parent_of[block] = key, tokens, parent

    # ---- release ----

    def free_blocks(self, seq: Sequence) -> None:
        """Drop `seq`'s references, tail first (so the LRU evicts tails before heads)."""
        for block in reversed(seq.block_table):
            self._release(block)
        seq.block_table.clear()
        seq.block_hashes.clear()
        seq.num_computed_tokens = 0

    def trim(self, seq: Sequence) -> None:
        """Release blocks beyond what seq's computed tokens occupy (after a speculative rollback)."""
        keep = -(-seq.num_computed_tokens // self.block_size)
        while len(seq.block_table) > keep:
            self._release(seq.block_table.pop())

    def _release(self, block: int) -> None:
        self.ref_count[block] -= 1
        if self.ref_count[block] < 0:
            raise EngineError(f"block {block} released more often than taken")
        if self.ref_count[block] == 0:
            if self.hash_of[block] is not None:
                self.lru[self.hash_of[block]] = None
            else:
                self.free.add(block)

    # ---- stats ----

    def counts(self) -> dict[str, int]:
        return {
            "num_blocks": self.num_blocks,
            "blocks_free": len(self.free),
            "blocks_cached": len(self.lru),
            "blocks_in_use": self.num_blocks - len(self.free) - len(self.lru),
            "prefix_cache_queries": self.queries,
            "prefix_cache_hits": self.hits,
            "evictions": self.evictions,
            **(self.disk.counts() if self.disk is not None else {}),
        }
