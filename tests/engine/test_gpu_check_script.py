"""scripts/gpu_check.py, the one short run a GPU machine gets, runs end to end on CPU at a tiny shape: its
parity cases pass, the sync count is read, and the report has every figure the GPU run is judged by."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "gpu_check.py"


def test_gpu_check_runs_on_cpu_at_a_tiny_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    monkeypatch.setattr(gpu_check, "BATCHES", (1, 2, 32))
    monkeypatch.setattr(gpu_check, "DECODE_STEPS", 4)
    monkeypatch.setattr(gpu_check, "CONTEXT", 24)
    assert gpu_check.main(["--device", "cpu", "--shape", "tiny", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    cases = {k: v for k, v in report["parity"].items() if k != "seconds"}
    assert len(cases) == 5 and all(c["ok"] for c in cases.values()), cases
    assert report["syncs"]["max_syncs_per_step"] <= 1
    speed = report["speed"]
    assert set(speed["batches"]) == {"1", "2", "32"} and len(speed["goals"]) == 3
    assert all(row["ours_ms"] > 0 and row["hf_ms"] > 0 and row["roofline_ms"] > 0
               for row in speed["batches"].values())
