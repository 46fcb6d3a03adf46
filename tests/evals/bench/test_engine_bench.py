"""`deltaserve bench engine` on a tiny model: each int4 variant is measured once per `--group-sizes` entry,
with engines that really use that group size; other variants are measured once."""

from __future__ import annotations

from deltaserve.cli import main
from deltaserve.engine.quant import QuantizedLinear
from deltaserve.evals.bench.engine_vs_hf import load_ours, variant_plan


def test_group_sizes_apply_to_int4_variants_only():
    assert variant_plan(["int4", "bf16", "int4-head"], [32, 128]) == [
        ("int4", 32), ("int4", 128), ("bf16", None), ("int4-head", 32), ("int4-head", 128)]
    assert variant_plan(["int4", "w8a8"], None) == [("int4", None), ("w8a8", None)]


def test_an_int4_engine_loads_with_the_group_size_asked_for(tiny_llama):
    for group in (32, 64):
        eng = load_ours(str(tiny_llama), "int4", group)
        layers = [lin for lin in eng.model.linears()[:-1] if isinstance(lin, QuantizedLinear)]
        assert layers and {lin.group_size for lin in layers} == {group}


def test_bench_engine_prints_a_column_per_group_size(tiny_llama, capsys):
    rc = main(["bench", "engine", "--model", str(tiny_llama), "--ours", "int4,bf16", "--group-sizes", "32,64",
               "--hf", "off", "--threads", "1", "--repeats", "1", "--memory", "off"])
    assert rc == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "ours int4 g32" in line)
    assert "ours int4 g64" in header and "ours bf16" in header and "bf16 g" not in header
    assert "llama.cpp skipped" in out  # a safetensors checkpoint: no GGUF for llama.cpp


def test_bench_engine_reports_memory_and_an_unsupported_variant(tiny_llama, capsys, monkeypatch):
    """A variant the machine cannot run is a note, not a crash; the others get their peak resident memory
    and load time from a process of their own."""
    from deltaserve.engine import quant

    monkeypatch.setattr(quant, "dynamic_int8_works", lambda: False)  # w8a8 then has no kernel here
    rc = main(["bench", "engine", "--model", str(tiny_llama), "--ours", "w8a8,bf16", "--hf", "off",
               "--threads", "1", "--repeats", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "ours w8a8: not supported here" in out and "fbgemm" in out
    memory = next(line for line in out.splitlines() if line.lstrip("| ").startswith("peak resident MB"))
    load = next(line for line in out.splitlines() if line.lstrip("| ").startswith("load s"))
    assert any(ch.isdigit() for ch in memory) and any(ch.isdigit() for ch in load)
