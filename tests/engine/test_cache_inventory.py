"""engine/cache_inventory.py and `deltaserve cache`: what the model cache holds, which entries a start would
still read, and pruning the rest without touching those."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch

from deltaserve.cli import main
from deltaserve.engine import weight_cache as wc
from deltaserve.engine.cache_inventory import inventory, prune
from deltaserve.engine.convert import WeightPlan
from deltaserve.engine.model_source import checkpoint_identity, gguf_cache_dir, hash_record, path_keyed_dir
from deltaserve.engine.tensor_file import TensorWriter

PLAN = WeightPlan(num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16, dtype=torch.float32, quant="int4",
                  group_size=32, head_quant="none", prepack=False)


def weights_file(identity: str, label: str, key: str | None = None):
    """A converted-weights file where weight_cache would write it for `identity`, under `label`."""
    digest = wc.cache_path(identity, PLAN).stem.rpartition("-")[2]
    path = wc.cache_path(identity, PLAN).with_name(f"{label}-{digest}.safetensors")
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = TensorWriter(path, {"key": key or wc.cache_key(identity, PLAN), "linears": "{}"})
    writer.add("w", torch.zeros(4))
    writer.finish()
    return path


def converted_dir(gguf):
    target = gguf_cache_dir(gguf)
    target.mkdir(parents=True)
    (target / "complete.json").write_text("{}")
    return target


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DELTASERVE_CACHE", str(root))
    return root


def by_path(entries):
    return {e.path: e for e in entries}


def test_what_a_start_reads_is_in_use_and_the_rest_is_stale(tmp_path, cache, tiny_llama):
    kept, gone = tmp_path / "kept.gguf", tmp_path / "gone.gguf"
    kept.write_bytes(b"GGUF kept")
    gone.write_bytes(b"GGUF gone")
    kept_dir, gone_dir = converted_dir(kept), converted_dir(gone)
    path_keyed = tmp_path / "path-keyed.gguf"  # converted before content keys: its next start adopts it
    path_keyed.write_bytes(b"GGUF path-keyed")
    adoptable = path_keyed_dir(path_keyed)
    adoptable.mkdir()
    (adoptable / "complete.json").write_text(json.dumps({"source": str(path_keyed)}))
    kept_weights = weights_file(checkpoint_identity(kept), "kept")
    copy = weights_file(checkpoint_identity(kept), "renamed-copy")  # the same conversion, another label
    gone_weights = weights_file(checkpoint_identity(gone), "gone")
    older = weights_file(checkpoint_identity(kept), "older", json.dumps({"format": 0, "source":
                                                                          checkpoint_identity(kept)}))
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_llama, model_dir)
    dir_weights = weights_file(checkpoint_identity(model_dir), "model")
    legacy_record = cache / "gguf" / "kept-0123456789abcdef.sha256.json"
    legacy_record.write_text("{}")
    dead_write = cache / "weights" / ".kept.safetensors.999999999.tmp"
    live_write = cache / "weights" / f".kept.safetensors.{os.getpid()}.tmp"
    dead_write.write_bytes(b"x")
    live_write.write_bytes(b"x")
    gone.unlink()

    entries = by_path(inventory())
    in_use = {p for p, e in entries.items() if not e.stale}
    assert in_use == {kept_dir, kept_weights, dir_weights, hash_record(kept), adoptable}
    assert entries[adoptable].made_from == str(path_keyed)
    assert entries[kept_weights].made_from == str(kept) and entries[kept_dir].kind == "GGUF conversion"
    stale = {p: e.stale for p, e in entries.items() if e.stale}
    assert set(stale) == {gone_dir, copy, gone_weights, older, legacy_record, dead_write, hash_record(gone)}
    assert stale[copy].startswith("a copy") and stale[older] == "an older format"
    assert live_write not in entries  # a live process's write is neither in use nor stale

    (model_dir / "model.safetensors").write_bytes((model_dir / "model.safetensors").read_bytes())  # new mtime
    assert by_path(inventory())[dir_weights].stale.startswith("its checkpoint directory")

    freed = prune(inventory())
    assert freed > 0 and not any(p.exists() for p in stale) and not dir_weights.exists()
    assert all(p.exists() for p in (kept_dir, kept_weights, hash_record(kept), live_write, adoptable))
    path_keyed.write_bytes(b"GGUF path-keyed, changed")
    assert by_path(inventory())[adoptable].stale
    assert wc.cache_path(checkpoint_identity(kept), PLAN, "any label") == kept_weights  # found by its digest
    assert [e.path for e in inventory() if e.stale] == [adoptable]


def test_the_command_lists_and_prunes(tmp_path, cache, capsys):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    live = converted_dir(gguf)
    stale = cache / "gguf" / "m-0123456789abcdef"
    stale.mkdir()
    (stale / "complete.json").write_text("{}")
    (stale / "model.safetensors").write_bytes(b"x" * 5000)

    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert "GGUF conversion" in out and "5.0 kB" in out and "deltaserve cache --prune" in out
    assert main(["cache", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["path"]: bool(r["stale"]) for r in rows if r["kind"] == "GGUF conversion"} == {
        str(live): False, str(stale): True}
    assert main(["cache", "--prune"]) == 0
    assert "deleted 1 stale entries, 5.0 kB freed" in capsys.readouterr().err
    assert live.exists() and not stale.exists()
