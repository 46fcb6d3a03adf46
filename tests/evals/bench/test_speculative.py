"""`deltaserve bench spec` end to end on a tiny model: all four cases run and the figures add up."""

from __future__ import annotations

import json

from deltaserve.cli import main


def test_bench_spec_runs_all_cases(tiny_llama, tmp_path, capsys):
    out = tmp_path / "spec.json"
    rc = main(["bench", "spec", "--model", str(tiny_llama), "--dtype", "float32", "--threads", "1",
               "--tasks", "a-median", "--max-reply-tokens", "40", "--open-tokens", "6", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for case in ("(a) udiff", "(b) search/replace", "(c) whole + prediction", "(d) open-ended"):
        assert case in text
    cases = json.loads(out.read_text())["cases"]
    assert set(cases) == {"udiff", "search_replace", "whole", "open"}
    for sides in cases.values():
        off, on = sides["off"], sides["on"]
        # forced replies (and greedy fp32 answers) are the same tokens
        assert off["tokens"] == on["tokens"] > 0
        assert off["accepted"] == off["rejected"] == 0
        assert on["passes"] + on["accepted"] == off["passes"]  # every accepted draft saved one pass
    # the whole-file reply is drafted from the prediction (the file before the fix)
    assert cases["whole"]["on"]["accepted"] > 10
