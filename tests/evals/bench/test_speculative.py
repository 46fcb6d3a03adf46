"""`deltaserve bench spec` end to end on a tiny model: every workload runs on every drafter, the figures
add up, and --json prints one object per (workload, drafter)."""

from __future__ import annotations

import json

from deltaserve.cli import main


def test_bench_spec_runs_all_workloads_and_drafters(tiny_llama, capsys):
    rc = main(["bench", "spec", "--model", str(tiny_llama), "--dtype", "float32", "--threads", "1",
               "--tasks", "a-median", "--max-reply-tokens", "40", "--open-tokens", "6", "--json",
               "--draft-token-cost", "0.05"])  # pinned: a measured cost makes draft lengths timing-dependent
    assert rc == 0
    captured = capsys.readouterr()
    for case in ("(a) udiff", "(b) search/replace", "(c) whole + prediction", "(e) agent replay",
                 "(d) open-ended"):
        assert case in captured.err
    rows = [json.loads(line) for line in captured.out.splitlines()]
    by = {(r["workload"], r["drafter"]): r for r in rows}
    assert set(by) == {(w, d) for w in ("udiff", "search_replace", "whole", "replay", "open")
                       for d in ("off", "ngram", "suffix")}
    for w in ("udiff", "search_replace", "whole", "replay", "open"):
        off = by[w, "off"]
        assert off["accepted"] == off["rejected"] == 0 and off["seconds"] > 0
        for d in ("ngram", "suffix"):
            on = by[w, d]
            # forced replies (and greedy fp32 answers) are the same tokens; every accepted draft saved a pass
            assert on["completion_tokens"] == off["completion_tokens"] > 0
            assert on["decode_passes"] + on["accepted"] == off["decode_passes"]
    # the whole-file reply is drafted from the prediction (the file before the fix)
    assert by["whole", "ngram"]["accepted"] > 10 and by["whole", "suffix"]["accepted"] > 10
    assert by["replay", "suffix"]["accepted"] > 10  # the last step repeats what the transcript showed
